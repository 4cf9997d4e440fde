/* load: a load client for rs-queue, through libcommon/queue_client.
 *
 *   load cycles SOCKET CLIENTS CYCLES WINDOW
 *     CLIENTS processes, each running CYCLES cycles of ADD (a new key),
 *     GET, DONE, with WINDOW cycles in flight (pipelined). Prints the
 *     cycles per second of all clients together.
 *   load fill SOCKET KEYS
 *     ADDs KEYS distinct keys, pipelined, and waits for every reply.
 *
 * Keys are distinct so that every GET is matched by exactly one ADD. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "queue_client.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct rs_queue *
connect_to(const char *path)
{
	struct rs_queue *q;
	rs_code rc = rs_queue_open(path, &q);

	if (rc != RS_OK)
		rs_fatal(111, "unable to connect to %s: %s", path,
		    strerror(errno));
	return q;
}

static void
check(rs_code rc, const char *what)
{
	if (rc != RS_OK)
		rs_fatal(111, "unable to %s: %s", what, rs_strerror(rc));
}

static void
client(const char *path, int id, long cycles, long window)
{
	struct rs_queue *q = connect_to(path);
	long sent = 0, got = 0;
	const char *key;
	char k[64];
	rs_code rc;

	while (got < cycles) {
		struct pollfd p;

		while (sent < cycles && sent - got < window) {
			snprintf(k, sizeof k, "bench/c%d-%ld", id, sent++);
			check(rs_queue_add(q, k), "add");
			check(rs_queue_request_get(q, 0), "get");
		}
		p.fd = rs_queue_fd(q);
		p.events = rs_queue_events(q);
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			rs_fatal(111, "unable to poll: %s", strerror(errno));
		check(rs_queue_io(q), "talk to the queue");
		while ((rc = rs_queue_next_key(q, &key)) == RS_OK) {
			check(rs_queue_done(q, key), "done");
			got++;
		}
		if (rc != RS_EAGAIN)
			check(rc, "get a key");
	}
	check(rs_queue_sync(q), "finish");
	if (rs_queue_errors(q))
		rs_fatal(1, "%lu requests refused", rs_queue_errors(q));
	rs_queue_close(q);
}

static int
cycles(const char *path, int clients, long n, long window)
{
	double t0 = now(), dt;
	int i, st, bad = 0;

	for (i = 0; i < clients; i++) {
		pid_t pid = fork();

		if (pid < 0)
			rs_fatal(111, "unable to fork: %s", strerror(errno));
		if (pid == 0) {
			client(path, i, n, window);
			_exit(0);
		}
	}
	for (i = 0; i < clients; i++)
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
	dt = now() - t0;
	if (bad)
		rs_fatal(111, "%d clients failed", bad);
	printf("clients=%d window=%ld cycles=%ld seconds=%.3f "
	    "cycles_per_second=%.0f\n", clients, window, n * clients, dt,
	    n * clients / dt);
	return 0;
}

static int
fill(const char *path, long n)
{
	struct rs_queue *q = connect_to(path);
	double t0 = now(), dt;
	char k[64];
	long i;

	for (i = 0; i < n; i++) {
		snprintf(k, sizeof k, "bench/key-%07ld", i);
		check(rs_queue_add(q, k), "add");
		if (i % 4096 == 4095)
			check(rs_queue_flush(q), "send");
	}
	check(rs_queue_sync(q), "finish");
	dt = now() - t0;
	if (rs_queue_errors(q))
		rs_fatal(1, "%lu adds refused", rs_queue_errors(q));
	rs_queue_close(q);
	printf("keys=%ld seconds=%.3f adds_per_second=%.0f\n", n, dt, n / dt);
	return 0;
}

int
main(int argc, char **argv)
{
	rs_log_init("load");
	if (argc == 6 && strcmp(argv[1], "cycles") == 0)
		return cycles(argv[2], atoi(argv[3]), atol(argv[4]),
		    atol(argv[5]));
	if (argc == 4 && strcmp(argv[1], "fill") == 0)
		return fill(argv[2], atol(argv[3]));
	fprintf(stderr, "usage: load cycles SOCKET CLIENTS CYCLES WINDOW\n"
	    "       load fill SOCKET KEYS\n");
	return 100;
}
