/* syncload: stands where rs-apply stands, behind rs-sync, for the sync
 * benchmark. It reads rs-sync's intents on stdin and answers each key's
 * `end` with DONE to rs-queue, as rs-apply does, and it keeps rs-sync busy
 * by adding every key back to the queue until each was synced PASSES
 * times.
 *
 *   syncload --queue SOCK --keys K --passes N --pid-file F
 *
 * Phase 1: the K syncs rs-sync makes by itself once its cache is filled
 * (every ReplicaSet ADDED is queued); then it prints
 *   rss_kb N        rs-sync's VmRSS, its cache complete and idle
 *   initial_s S     from the first intent to the K-th end
 * Phase 2 (N > 0): adds every key, and again at each end until every key
 * was synced N times, then prints
 *   syncs N, seconds S, syncs_per_s R, cpu_s C (rs-sync's user + system
 *   CPU meanwhile), syncs_per_cpu_s R
 * In both phases "intents" counts lines other than `end`: 0 when every
 * sync was a no-op, as the benchmark's event stream means them to be.
 * At the end it shuts the queue down, which ends rs-sync. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "line.h"
#include "log.h"
#include "queue_client.h"
#include "strmap.h"
#include "../procfs.h"

struct load {
	struct rs_queue *q;
	struct rs_strmap count;       /* key -> struct kc */
	char **keys;
	long nkeys, want_keys, passes;
	long ends, other;
	int pid;
};

static void
check(rs_code rc, const char *what)
{
	if (rc != RS_OK)
		rs_fatal(111, "unable to %s: %s", what, rs_strerror(rc));
}

static double
cpu_s(int pid)
{
	unsigned long long t;

	if (proc_ticks(pid, &t) < 0)
		return -1;
	return (double)t / (double)sysconf(_SC_CLK_TCK);
}

static long
rss_kb(int pid)
{
	char buf[4096];

	if (proc_read(pid, "status", buf, sizeof buf) <= 0)
		return -1;
	return proc_status_kb(buf, "\nVmRSS:");
}

static int
read_pid(const char *file)
{
	char buf[32] = "";
	int fd = open(file, O_RDONLY), pid = 0;

	if (fd >= 0) {
		if (read(fd, buf, sizeof buf - 1) > 0)
			pid = atoi(buf);
		close(fd);
	}
	if (pid <= 0)
		rs_fatal(111, "unable to read a pid from %s", file);
	return pid;
}

/* The key of an `end` line, or NULL (and the line counted) for any other
 * intent. *key is malloc'd. */
static char *
end_key(struct load *l, const char *line, size_t len)
{
	cJSON *o = NULL;
	const char *op, *key;
	char *k = NULL;

	if (rs_json_parse(line, len, &o, NULL) != RS_OK)
		rs_fatal(1, "unable to parse an intent: %.200s", line);
	op = rs_json_str(o, "op", NULL);
	key = rs_json_str(o, "key", NULL);
	if (op && key && strcmp(op, "end") == 0)
		k = strdup(key);
	else
		l->other++;
	cJSON_Delete(o);
	return k;
}

/* A key and how many times phase 2 synced it. */
struct kc {
	long n;
	char key[];
};

/* Phase 1: DONE for each key, remembered. */
static int
initial_end(struct load *l, char *key)
{
	struct kc *k;

	check(rs_queue_done(l->q, key), "send DONE");
	if (rs_strmap_get(&l->count, key) == NULL) {
		if ((k = malloc(sizeof *k + strlen(key) + 1)) == NULL)
			rs_fatal(111, "unable to allocate");
		k->n = 0;
		strcpy(k->key, key);
		l->keys[l->nkeys++] = k->key;
		check(rs_strmap_put(&l->count, k->key, k, NULL), "count");
	}
	free(key);
	return l->nkeys == l->want_keys;
}

/* Phase 2: DONE, and ADD again until the key had its passes. */
static void
pass_end(struct load *l, char *key)
{
	struct kc *k = rs_strmap_get(&l->count, key);

	check(rs_queue_done(l->q, key), "send DONE");
	if (k != NULL && ++k->n < l->passes)
		check(rs_queue_add(l->q, key), "send ADD");
	free(key);
	l->ends++;
}

static void
io(struct load *l, struct rs_line_reader *in, int *eof)
{
	struct pollfd p[2] = {
		{ .fd = *eof ? -1 : 0, .events = POLLIN },
		{ .fd = rs_queue_fd(l->q), .events = rs_queue_events(l->q) },
	};

	if (poll(p, 2, -1) < 0 && errno != EINTR)
		rs_fatal(111, "unable to poll: %s", strerror(errno));
	if (p[1].revents)
		check(rs_queue_io(l->q), "talk to rs-queue");
	if (p[0].revents) {
		rs_code rc = rs_line_fill(in);

		if (rc == RS_EEOF)
			*eof = 1;
		else if (rc == RS_EIO)
			rs_fatal(111, "unable to read intents: %s", strerror(errno));
	}
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "queue", required_argument, NULL, 'q' },
		{ "keys", required_argument, NULL, 'k' },
		{ "passes", required_argument, NULL, 'p' },
		{ "pid-file", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct load l = { 0 };
	struct rs_line_reader in;
	const char *sock = NULL, *pidfile = NULL;
	double t0 = 0, t1, c0, c1;
	char *line, *reply;
	size_t len;
	int c, eof = 0, phase = 1;
	rs_code rc;

	rs_log_init(argv[0]);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'q': sock = optarg; break;
		case 'k': l.want_keys = atol(optarg); break;
		case 'p': l.passes = atol(optarg); break;
		case 'f': pidfile = optarg; break;
		default:
			fputs("usage: syncload --queue SOCK --keys K --passes N "
			    "--pid-file F\n", stderr);
			return 100;
		}
	}
	if (sock == NULL || pidfile == NULL || l.want_keys < 1 || l.passes < 0)
		rs_fatal(100, "--queue, --pid-file and --keys are needed");
	if (rs_queue_open(sock, &l.q) != RS_OK)
		rs_fatal(111, "unable to connect to %s", sock);
	rs_strmap_init(&l.count);
	l.keys = calloc((size_t)l.want_keys, sizeof *l.keys);
	if (l.keys == NULL || rs_line_reader_init(&in, 0, 64u << 20) != RS_OK)
		rs_fatal(111, "unable to allocate");
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	c0 = 0;
	for (;;) {
		rc = rs_line_next(&in, &line, &len);
		if (rc == RS_EAGAIN) {
			if (eof)
				rs_fatal(111, "rs-sync ended after %ld ends",
				    l.nkeys + l.ends);
			io(&l, &in, &eof);
			continue;
		}
		if (rc != RS_OK)
			rs_fatal(111, "unable to read intents: %s", rs_strerror(rc));
		if (t0 == 0)
			t0 = rs_wall_now();
		if ((line = end_key(&l, line, len)) == NULL)
			continue;
		if (phase == 1) {
			if (!initial_end(&l, line))
				continue;
			check(rs_queue_sync(l.q), "finish phase 1");
			l.pid = read_pid(pidfile);
			printf("rss_kb %ld\ninitial_s %.3f\nintents %ld\n",
			    rss_kb(l.pid), rs_wall_now() - t0, l.other);
			fflush(stdout);
			if (l.passes == 0)
				break;
			phase = 2;
			l.other = 0;
			t0 = rs_wall_now();
			c0 = cpu_s(l.pid);
			for (long i = 0; i < l.nkeys; i++)
				check(rs_queue_add(l.q, l.keys[i]), "send ADD");
			continue;
		}
		pass_end(&l, line);
		if (l.ends == l.nkeys * l.passes)
			break;
	}
	if (phase == 2) {
		t1 = rs_wall_now();
		c1 = cpu_s(l.pid);
		printf("syncs %ld\nseconds %.3f\nsyncs_per_s %.0f\ncpu_s %.2f\n"
		    "syncs_per_cpu_s %.0f\nintents %ld\n", l.ends, t1 - t0,
		    (double)l.ends / (t1 - t0), c1 - c0,
		    c1 > c0 ? (double)l.ends / (c1 - c0) : 0.0, l.other);
	}
	/* rs-sync waits on a GET: a drained shutdown ends it, and the queue */
	check(rs_queue_sync(l.q), "finish");
	check(rs_queue_query(l.q, "SHUTDOWN", &reply), "shut the queue down");
	free(reply);
	rs_queue_close(l.q);
	return 0;
}
