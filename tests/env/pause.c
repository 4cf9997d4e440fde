/*
 * pause: the sandbox process of the test node's pods. It holds the pod's
 * namespaces, so it only waits: until TERM or INT, reaping any child that
 * the pod's other processes leave to it (it is PID 1 of a shared PID
 * namespace). Built static, so that the image needs no libc.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	sigset_t set;
	int sig;

	(void)argv;
	if (argc > 1) {
		fputs("usage: pause\n", stderr);
		return 100;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1) {
		fprintf(stderr, "pause: fatal: unable to block signals: %s\n",
		    strerror(errno));
		return 111;
	}
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig != SIGCHLD)
			return 0;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}
