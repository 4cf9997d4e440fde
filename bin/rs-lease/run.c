/* run.c: prog under a guard process (see run.h for why there is a guard).
 * The guard never execs and may be forked while libcurl has threads, so
 * after fork it keeps to async-signal-safe calls: no stdio, no malloc. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "run.h"

#define NFDS_MAX 256
#define GUARD_EXTRA_NS 2000000000LL   /* the guard's own time to finish */

static int given_fds[NFDS_MAX];   /* sorted */
static int ngiven;

static int
cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

void
run_note_fds(void)
{
	struct dirent *d;
	DIR *dir;
	int fd;

	ngiven = 0;
	if ((dir = opendir("/proc/self/fd")) == NULL) {
		/* Without /proc: keep the standard three only. */
		for (fd = 0; fd < 3; fd++)
			given_fds[ngiven++] = fd;
		return;
	}
	while ((d = readdir(dir)) != NULL && ngiven < NFDS_MAX) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		fd = atoi(d->d_name);
		if (fd != dirfd(dir))
			given_fds[ngiven++] = fd;
	}
	closedir(dir);
	qsort(given_fds, ngiven, sizeof given_fds[0], cmp_int);
}

/* Closes every descriptor rs-lease opened itself: sockets, signalfd. */
static void
close_own_fds(void)
{
	unsigned int lo = 0;
	int i;

	for (i = 0; i < ngiven; i++) {
		if ((unsigned int)given_fds[i] > lo)
			close_range(lo, given_fds[i] - 1, 0);
		lo = given_fds[i] + 1;
	}
	close_range(lo, ~0U, 0);
}

static void
say(const char *a, const char *b, const char *c)
{
	const char *p[4] = { a, b, c, "\n" };
	int i;

	for (i = 0; i < 4; i++)
		if (write(STDERR_FILENO, p[i], strlen(p[i])) < 0)
			return;
}

static int
status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 111;
}

__attribute__((noreturn)) static void
exec_prog(char **argv, const sigset_t *mask)
{
	int e;

	setpgid(0, 0);
	/* Dies with the guard, should the guard itself be killed. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	execvp(argv[0], argv);
	e = errno;
	say("rs-lease: fatal: unable to exec ", argv[0], e == ENOENT ?
	    ": not found" : ": cannot be run");
	_exit(e == ENOENT ? 127 : 126);
}

static void
guard_stop(pid_t pgrp, int64_t now, int64_t kill_after, int *stopping,
    int64_t *kill_at)
{
	if (*stopping)
		return;
	*stopping = 1;
	*kill_at = now + kill_after;
	kill(-pgrp, SIGTERM);
	kill(-pgrp, SIGCONT);
}

/* The guard's loop: reap, stop on TERM or INT or when prog is gone but
 * left processes behind, escalate to SIGKILL at the deadline. Signals
 * stay blocked and are taken with sigtimedwait: no handler, no race. */
__attribute__((noreturn)) static void
guard(char **argv, int64_t kill_after, const sigset_t *mask, pid_t parent)
{
	int st, pst = 0, pdone = 0, stopping = 0, killed = 0, sig;
	int64_t now, kill_at = 0, quit_at = 0, wait_ns;
	struct timespec ts;
	sigset_t set;
	pid_t p, w;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (getppid() != parent)
		_exit(111);
	close_own_fds();
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((p = fork()) < 0) {
		say("rs-lease: fatal: unable to fork: ", strerror(errno), "");
		_exit(111);
	}
	if (p == 0)
		exec_prog(argv, mask);
	setpgid(p, p);   /* also here: whichever side runs first */
	for (;;) {
		while ((w = waitpid(-1, &st, WNOHANG)) > 0)
			if (w == p) {
				pst = st;
				pdone = 1;
			}
		if (w < 0 && errno == ECHILD)
			_exit(status_code(pst));
		now = rs_mono_ns();
		if (pdone)
			guard_stop(p, now, kill_after, &stopping, &kill_at);
		if (stopping && !killed && now >= kill_at) {
			kill(-p, SIGKILL);
			killed = 1;
			quit_at = now + GUARD_EXTRA_NS / 2;
		}
		/* Something outside the group that will not die: give up. */
		if (killed && now >= quit_at)
			_exit(pdone ? status_code(pst) : 128 + SIGKILL);
		wait_ns = killed ? quit_at - now : stopping ? kill_at - now :
		    1000000000;
		if (wait_ns > 1000000000)
			wait_ns = 1000000000;
		ts.tv_sec = wait_ns / 1000000000;
		ts.tv_nsec = wait_ns % 1000000000;
		sig = sigtimedwait(&set, NULL, &ts);
		if (sig == SIGTERM || sig == SIGINT)
			guard_stop(p, rs_mono_ns(), kill_after, &stopping,
			    &kill_at);
	}
}

rs_code
run_start(struct run *r, char **argv, int64_t kill_after, const sigset_t *mask)
{
	pid_t parent = getpid(), pid;

	memset(r, 0, sizeof *r);
	r->kill_after = kill_after;
	pid = fork();
	if (pid < 0) {
		rs_error("unable to fork: %s", strerror(errno));
		return RS_EIO;
	}
	if (pid == 0)
		guard(argv, kill_after, mask, parent);
	setpgid(pid, pid);
	r->pid = pid;
	rs_info(1, "started %s (guard pid %ld)", argv[0], (long)pid);
	return RS_OK;
}

void
run_stop(struct run *r, int64_t now)
{
	if (r->pid == 0 || r->exited || r->stopping)
		return;
	r->stopping = 1;
	r->last_resort = now + r->kill_after + GUARD_EXTRA_NS;
	kill(r->pid, SIGTERM);
}

int
run_reap(struct run *r)
{
	int st;
	pid_t w;

	if (r->pid == 0 || r->exited)
		return r->exited;
	w = waitpid(r->pid, &st, WNOHANG);
	if (w != r->pid)
		return 0;
	r->exited = 1;
	r->code = status_code(st);
	rs_info(1, "prog ended with exit code %d", r->code);
	return 1;
}

int64_t
run_tick(struct run *r, int64_t now)
{
	if (r->pid == 0 || r->exited || !r->stopping)
		return -1;
	if (now < r->last_resort)
		return r->last_resort - now;
	rs_warn("the guard of prog did not exit: killing it");
	kill(r->pid, SIGKILL);
	r->last_resort = now + GUARD_EXTRA_NS;
	return GUARD_EXTRA_NS;
}
