/* relay: what a wake-up costs a process here, before any work.
 *
 *   relay RELAYS TOKENS GAP_US
 *
 * A byte goes through RELAYS processes joined by pipes, TOKENS times,
 * one every GAP_US microseconds: each relay sleeps in poll, wakes for
 * the byte, passes it on and sleeps again, as a stage does for an event
 * that comes alone. Prints the relays' CPU (user and system, from
 * getrusage) per relay and token. The relays take the scheduling class
 * of the caller (run it under chrt -b for SCHED_BATCH), and its CPU
 * affinity (taskset). Exit 100 on bad arguments, 111 if a system call
 * fails. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define MAX_RELAYS 16

/* One byte from in; a read of nothing is the writer gone. */
static void
take(int in, char *c, const char *what)
{
	ssize_t n = read(in, c, 1);

	if (n == 0)
		rs_fatal(111, "unable to %s: end of file", what);
	if (n < 0)
		rs_fatal(111, "unable to %s: %s", what, strerror(errno));
}

static long
number(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < min || v > max)
		rs_fatal(100, "%s: not a number from %ld to %ld", s, min, max);
	return v;
}

/* Relay i: waits for a byte on pipe i, passes it to pipe i + 1; tokens
 * times. Every other end is closed, so that a relay that dies ends the
 * others' reads rather than leaving them waiting. */
static void
relay(int p[][2], int n, int i, long tokens)
{
	struct pollfd pfd = { .fd = p[i][0], .events = POLLIN };
	int j;
	char c;

	for (j = 0; j <= n; j++) {
		if (j != i)
			close(p[j][0]);
		if (j != i + 1)
			close(p[j][1]);
	}
	while (tokens-- > 0) {
		if (poll(&pfd, 1, -1) < 0)
			rs_fatal(111, "unable to wait for a byte: %s", strerror(errno));
		take(p[i][0], &c, "take a byte");
		if (write(p[i + 1][1], &c, 1) != 1)
			rs_fatal(111, "unable to pass a byte on: %s", strerror(errno));
	}
	_exit(0);
}

static double
seconds(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

int
main(int argc, char **argv)
{
	int p[MAX_RELAYS + 1][2], n, i, status, failed = 0;
	long tokens, gap, t;
	struct timespec ts;
	struct rusage ru;
	char c = 'x';

	rs_log_init("relay");
	if (argc != 4) {
		fprintf(stderr, "usage: relay RELAYS TOKENS GAP_US\n");
		return 100;
	}
	n = number(argv[1], 1, MAX_RELAYS);
	tokens = number(argv[2], 1, 100000000);
	gap = number(argv[3], 0, 1000000);
	for (i = 0; i <= n; i++)
		if (pipe(p[i]) < 0)
			rs_fatal(111, "unable to make a pipe: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			rs_fatal(111, "unable to fork: %s", strerror(errno));
		if (pid == 0)
			relay(p, n, i, tokens);
	}
	for (i = 0; i <= n; i++) {
		if (i != n)
			close(p[i][0]);
		if (i != 0)
			close(p[i][1]);
	}
	ts.tv_sec = gap / 1000000;
	ts.tv_nsec = gap % 1000000 * 1000;
	for (t = 0; t < tokens; t++) {
		struct pollfd pfd = { .fd = p[n][0], .events = POLLIN };

		if (gap > 0)
			nanosleep(&ts, NULL);
		if (write(p[0][1], &c, 1) != 1)
			rs_fatal(111, "unable to send a token: %s", strerror(errno));
		if (poll(&pfd, 1, -1) < 0)
			rs_fatal(111, "unable to wait for a token: %s", strerror(errno));
		take(p[n][0], &c, "take a token back");
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed = 1;
	if (failed)
		rs_fatal(111, "a relay failed");
	if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
		rs_fatal(111, "unable to read the relays' CPU: %s", strerror(errno));
	printf("%d %ld %ld %.1f %.1f\n", n, tokens, gap,
	    (seconds(ru.ru_utime) + seconds(ru.ru_stime)) * 1e6 / tokens / n,
	    seconds(ru.ru_utime) * 1e6 / tokens / n);
	return 0;
}
