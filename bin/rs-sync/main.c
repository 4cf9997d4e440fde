/* rs-sync: the informer cache, event handlers and reconcile loop of the
 * ReplicaSet controller. Events from rs-watch on stdin, keys from rs-queue,
 * intents for rs-apply on stdout. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "clientflags.h"
#include "flag.h"
#include "handlers.h"
#include "log.h"
#include "queue_client.h"
#include "queue_hold.h"
#include "rank.h"
#include "reconcile.h"
#include "schedclass.h"
#include "stagestats.h"
#include "statedir.h"
#include "strmap.h"
#include "sync.h"

#define USAGE \
"usage: rs-sync [-v N] [--kind ReplicaSet|ReplicationController] [--queue PATH]\n" \
"               [--expectations PATH] [--expectations-map-size BYTES]\n" \
"               [--burst-replicas N] [--resync SECONDS] [--queue-hold DUR]\n" \
"               [--no-terminating-replicas] [--keep-expectations] [--max-line BYTES]\n" \
"               [--feature-gates NAME=BOOL,...] [--log-format text|json]\n" \
"       rs-sync --once KEY [--now RFC3339] [--expectations PATH] [-v N] < events.ndjson\n" \
"       rs-sync --expectations-dump [--expectations PATH]\n"

/* GETs kept waiting at rs-queue: keys added together are handed out in one
 * reply, synced in one pass and their intents written at once, instead of
 * one round trip to rs-queue each. As many as rs-apply's default
 * --concurrency (and upstream's worker count in the benchmarks): a key
 * handed out is "processing" and is not deduplicated with later adds. */
#define SYNC_GETS 16

/* --queue-hold's default: how long the queue lines that only end syncs
 * and ask for more keys may wait for the next ADDs, to go in their write
 * (queue_holds). rs-pipeline's rs-watch gathers a storm's events 20 ms at
 * a time (--batch 20ms), so the next ADDs come within as long. */
#define SYNC_HOLD_NS (20 * 1000000LL)

struct opts {
	const struct kind *kind;
	const char *queue, *expectations, *once;
	int burst, terminating, dump, keep_expectations;
	double resync, now;
	size_t max_line, map_size;
	int64_t queue_hold;            /* ns */
};

static volatile sig_atomic_t stopping;

static void on_term(int sig) { (void)sig; stopping = 1; }

/* TERM or INT came, or is on its way (sent, not yet handled). */
static int
stop_asked(void)
{
	sigset_t p;

	if (stopping)
		return 1;
	return sigpending(&p) == 0 &&
	    (sigismember(&p, SIGTERM) || sigismember(&p, SIGINT));
}

static void stats_close(const struct sync *s);

/* The next stage is gone. While stopping, that is the end of a clean stop:
 * the whole pipeline gets TERM at once, and rs-apply may finish before
 * rs-sync has handled its own. Otherwise the pipeline is broken. */
static void
output_gone(const struct sync *s, const char *why)
{
	if (!stop_asked())
		rs_fatal(111, "unable to write intents: %s", why);
	rs_info(1, "the reader of standard output is gone: stopping");
	stats_close(s);
	exit(0);
}

static void
write_failed(const struct sync *s)
{
	if (errno == EPIPE)
		output_gone(s, strerror(errno));
	rs_fatal(111, "unable to write intents: %s", strerror(errno));
}

double
sync_now(const struct sync *s)
{
	return s->fixed_now ? s->fixed_now : rs_wall_now();
}

void
sync_enqueue(struct sync *s, const char *key, double after)
{
	if (s->enqueue)
		s->enqueue(s->enqueue_arg, key, after);
}

/* The keys this process ADDed that no GET has handed back yet: they wait
 * in rs-queue, where another ADD is a no-op (doc/queue-protocol.md), so it
 * is not sent. An event storm then costs one queue line per key and sync,
 * not one per event. This holds because rs-sync is the only one that GETs
 * from its queue (doc/rs-sync.1), and a key handed out is dropped from the
 * set before its sync, so an event after it is ADDed again. */
struct enq {
	struct rs_queue *q;
	struct rs_strmap queued;       /* key -> the same string, owned */
	struct rs_queue_hold hold;     /* urgent: an ADD or AFTER waits */
	size_t held_gets;              /* GETs asked for since the last send */
};

static void
queue_enqueue(void *arg, const char *key, double after)
{
	struct enq *e = arg;
	char *copy;
	rs_code rc;

	if (after <= 0 && rs_strmap_get(&e->queued, key) != NULL)
		return;
	rc = after > 0 ? rs_queue_after(e->q, after, key) :
	    rs_queue_add(e->q, key);
	if (rc != RS_OK) {
		rs_warn("unable to queue %s: %s", key, rs_strerror(rc));
		return;
	}
	e->hold.urgent = 1;
	/* without memory the next ADD is sent too: only slower */
	if (after <= 0 && (copy = strdup(key)) != NULL &&
	    rs_strmap_put(&e->queued, copy, copy, NULL) != RS_OK)
		free(copy);
}

/* A sync that wrote no intent ends here, as rs-apply ends a key whose
 * writes all succeeded (or, retry, one to be retried): the lines go out
 * with the next GETs, in the same write. */
static void
queue_end(void *arg, const char *key, int retry, double after)
{
	struct enq *e = arg;
	rs_code rc;

	rc = rs_queue_end(e->q, key, retry, !retry, after > 0, after);
	if (rc != RS_OK)
		rs_warn("%s: unable to report the end of its sync to rs-queue: "
		    "%s", key, rs_strerror(rc));
	if (after > 0)
		e->hold.urgent = 1;
}

/* Whether the unsent queue lines may wait for the next ADDs. Lines that
 * end syncs which wrote nothing (DONE, FORGET, RETRY) and the GETs that
 * replace the keys handed out change nothing that anyone waits on: the
 * keys they end were synced already, and an ADD of one of them goes out
 * after them, in the same write. So in a storm they ride with the next
 * window's ADDs and rs-queue wakes once a window, not twice; a RETRY's
 * backoff starts up to --queue-hold later. They go at once when an ADD or
 * AFTER waits with them, when half the GETs are held back (the keys
 * waiting at rs-queue must find GETs), and after --queue-hold. */
static int
queue_holds(struct enq *e, int64_t now)
{
	return rs_queue_hold_on(&e->hold, e->q, e->held_gets < SYNC_GETS / 2,
	    now);
}

/* The queue's I/O: all of it, or (held) its replies alone. */
static rs_code
queue_io(struct enq *e, int held)
{
	rs_code rc = rs_queue_hold_io(&e->hold, e->q, held);

	if (!held && !rs_queue_unsent(e->q))
		e->held_gets = 0;
	return rc;
}

/* key was handed out: the next event for it must ADD it again. */
static void
queue_handed_out(struct enq *e, const char *key)
{
	free(rs_strmap_del(&e->queued, key));
}



static void
parse_opts(int argc, char **argv, struct opts *o)
{
	enum { O_KIND = 256, O_QUEUE, O_EXP, O_BURST, O_RESYNC, O_ONCE, O_NOW,
	    O_NOTERM, O_MAXLINE, O_DUMP, O_KEEP, O_MAPSIZE, O_HOLD, O_HELP };
	static const struct option lo[] = {
		{ "kind", required_argument, NULL, O_KIND },
		{ "queue", required_argument, NULL, O_QUEUE },
		{ "expectations", required_argument, NULL, O_EXP },
		{ "burst-replicas", required_argument, NULL, O_BURST },
		{ "resync", required_argument, NULL, O_RESYNC },
		{ "once", required_argument, NULL, O_ONCE },
		{ "now", required_argument, NULL, O_NOW },
		{ "no-terminating-replicas", no_argument, NULL, O_NOTERM },
		{ "max-line", required_argument, NULL, O_MAXLINE },
		{ "expectations-dump", no_argument, NULL, O_DUMP },
		{ "keep-expectations", no_argument, NULL, O_KEEP },
		{ "expectations-map-size", required_argument, NULL, O_MAPSIZE },
		{ "queue-hold", required_argument, NULL, O_HOLD },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct option *longopts = rs_flags_longopts(lo, RS_FLAGS_LOG |
	    RS_FLAGS_GATES);
	int c;

	*o = (struct opts){ .kind = &kind_replicaset, .burst = 500,
	    .terminating = 1, .max_line = RS_LINE_MAX_DEFAULT,
	    .queue_hold = SYNC_HOLD_NS };
	while ((c = getopt_long(argc, argv, "v:h", longopts, NULL)) != -1) {
		switch (c) {
		case O_KIND:
			if (strcmp(optarg, "ReplicaSet") == 0 || strcmp(optarg, "rs") == 0)
				o->kind = &kind_replicaset;
			else if (strcmp(optarg, "ReplicationController") == 0 ||
			    strcmp(optarg, "rc") == 0)
				o->kind = &kind_replicationcontroller;
			else
				rs_flag_fail("unknown --kind %s", optarg);
			break;
		case O_QUEUE: o->queue = optarg; break;
		case O_EXP: o->expectations = optarg; break;
		case O_BURST: o->burst = (int)rs_flag_long(optarg, 1, 1000000, "--burst-replicas"); break;
		case O_RESYNC: o->resync = rs_flag_double(optarg, 0, 1e9, "--resync"); break;
		case O_ONCE: o->once = optarg; break;
		case O_NOW:
			if (rs_parse_rfc3339(optarg, &o->now) < 0)
				rs_flag_fail("invalid --now: %s (want RFC 3339)", optarg);
			break;
		case O_NOTERM: o->terminating = 0; break;
		case O_MAXLINE: o->max_line = (size_t)rs_flag_long(optarg, 1024, 1L << 40, "--max-line"); break;
		case O_DUMP: o->dump = 1; break;
		case O_HOLD:
			o->queue_hold = rs_queue_hold_flag(optarg);
			break;
		case O_KEEP: o->keep_expectations = 1; break;
		case O_MAPSIZE:
			o->map_size = (size_t)rs_flag_long(optarg, RS_EXP_MAP_MIN,
			    1L << 40, "--expectations-map-size");
			break;
		case O_HELP: case 'h': fputs(USAGE, stdout); exit(0);
		default:
			if (!rs_flags_common(c, optarg, NULL))
				rs_flag_fail("invalid flag");
		}
	}
	if (optind != argc)
		rs_flag_fail("unexpected argument '%s'", argv[optind]);
}

static struct rs_exp *
open_expectations(const char *path, int nocreate, size_t map_size)
{
	struct rs_exp_opts eo = { .nocreate = nocreate, .map_size = map_size };
	struct rs_exp *e;
	rs_code rc = rs_exp_open(path, &eo, &e);

	if (rc != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to open expectations %s: %s",
		    path ? path : "(default)", rs_strerror(rc));
	return e;
}

/* Handles every whole line buffered; up to max lines, so keys are served
 * during a flood of events. Returns RS_EEOF at end of input, RS_EAGAIN when
 * it stopped at max with input left (the caller must not wait in poll for
 * input that is already read). */
static rs_code
read_events(struct sync *s, struct rs_line_reader *in, int max)
{
	char *line;
	size_t len;
	rs_code rc;

	for (int n = 0; n < max; n++) {
		rc = rs_line_next(in, &line, &len);
		if (rc == RS_EAGAIN) {
			rc = rs_line_fill(in);
			if (rc == RS_EAGAIN)
				return RS_OK;
			if (rc == RS_EIO)
				rs_fatal(111, "unable to read events: %s", strerror(errno));
			continue;
		}
		if (rc == RS_EEOF)
			return RS_EEOF;
		if (rc == RS_ETOOBIG) {
			/* not fatal: garbage must not stop the controller,
			 * and no real object comes near the default */
			s->events++;
			s->bad_events++;
			rs_warn("event line %lu longer than %zu bytes "
			    "(--max-line), skipped: an object that long is "
			    "missing from the cache", in->lineno, in->max);
			continue;
		}
		if (len > 0)
			handle_event(s, line, len);
	}
	return RS_EAGAIN;
}

static int
run_once(struct sync *s, const struct opts *o)
{
	char dir[] = "/tmp/rs-sync-once.XXXXXX", path[PATH_MAX];
	struct rs_line_reader in;
	rs_code rc;

	if (o->expectations == NULL) {
		/* a replay must not touch the live controller's expectations */
		if (mkdtemp(dir) == NULL)
			rs_fatal(111, "unable to create %s: %s", dir, strerror(errno));
		snprintf(path, sizeof path, "%s/expectations", dir);
		s->exp = open_expectations(path, 0, o->map_size);
	} else {
		s->exp = open_expectations(o->expectations, 1, 0);
	}
	if (rs_line_reader_init(&in, 0, o->max_line) != RS_OK)
		rs_fatal(111, "unable to allocate: %s", strerror(errno));
	while ((rc = read_events(s, &in, INT_MAX)) == RS_OK)
		;
	rs_info(1, "replayed %lu events (%lu skipped), %s synced: %s, pods synced: %s",
	    s->events, s->bad_events, s->kind->resource,
	    s->synced_ctrls ? "yes" : "no", s->synced_pods ? "yes" : "no");
	rs_info(1, "read up to resourceVersion '%s' of pods and '%s' of %s",
	    sync_read_rv(s, "pods"), sync_read_rv(s, s->kind->resource),
	    s->kind->resource);
	rc = reconcile(s, o->once);
	if (rc == RS_OK)
		rc = rs_line_flush(s->out);
	rs_line_reader_free(&in);
	rs_exp_close(s->exp);
	if (o->expectations == NULL) {
		unlink(path);
		rmdir(dir);
	}
	if (rc != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to sync %s: %s", o->once,
		    rs_strerror(rc));
	return 0;
}

/* A starting rs-sync begins with no expectations, as upstream's in-memory
 * ones do: the relist it is about to read is the truth, so records left by
 * an earlier run (raised by an rs-sync killed before its intents left, or
 * lowered by no rs-apply) would only stall keys. An rs-apply holds the file
 * locked shared while it works: waiting for the exclusive lock means no
 * write of an earlier pipeline is still in flight. A store too damaged to
 * empty is made anew: nobody else writes it while the lock is held. */
static struct rs_exp *
fresh_expectations(struct rs_exp *e, const struct opts *o)
{
	int fd = open(rs_exp_path(e), O_RDONLY | O_CLOEXEC);
	char lock[PATH_MAX];
	rs_code rc;

	if (fd < 0)
		rs_fatal(111, "unable to open %s: %s", rs_exp_path(e), strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rs_info(0, "waiting for the rs-apply of an earlier pipeline to finish");
		if (flock(fd, LOCK_EX) < 0)
			rs_fatal(111, "unable to lock %s: %s", rs_exp_path(e),
			    strerror(errno));
	}
	if ((rc = rs_exp_reset(e)) == RS_EPARSE) {
		rs_warn("making %s anew", rs_exp_path(e));
		snprintf(lock, sizeof lock, "%s-lock", rs_exp_path(e));
		if (unlink(rs_exp_path(e)) < 0 || (unlink(lock) < 0 &&
		    errno != ENOENT))
			rs_fatal(111, "unable to remove %s: %s", rs_exp_path(e),
			    strerror(errno));
		rs_exp_close(e);
		e = open_expectations(o->expectations, 0, o->map_size);
	} else if (rc != RS_OK) {
		rs_fatal(111, "unable to reset expectations: %s", rs_strerror(rc));
	}
	close(fd);
	return e;
}

/* upstream's ExponentialBuckets(0.25, 2, 6) */
static const double age_ratio_le[] = { 0.25, 0.5, 1, 2, 4, 8 };

/* stats: this stage's figures for rs-metrics (doc/metrics.md). */
static void
stats_open(void)
{
	if (rs_stagestats_open("rs-sync") != RS_OK) {
		rs_warn("unable to publish stats: going on without");
		return;
	}
	rs_stagestats_declare("rs_sync_events_total", RS_STAT_COUNTER,
	    "Event lines read, SYNCED, BOOKMARK and skipped ones included.", NULL, 0);
	rs_stagestats_declare("rs_sync_bad_events_total", RS_STAT_COUNTER,
	    "Event lines skipped as malformed or refused.", NULL, 0);
	rs_stagestats_declare("rs_sync_intents_total", RS_STAT_COUNTER,
	    "Intent lines written.", NULL, 0);
	rs_stagestats_declare("rs_sync_syncs_total", RS_STAT_COUNTER,
	    "Keys reconciled.", NULL, 0);
	rs_stagestats_declare("rs_sync_ends_total", RS_STAT_COUNTER,
	    "Syncs that wrote no intent, their end reported to rs-queue by "
	    "rs-sync (the others end in rs-apply).", NULL, 0);
	rs_stagestats_declare("replicaset_controller_stale_sync_skips_total",
	    RS_STAT_COUNTER, "Total number of ReplicaSet syncs skipped due to "
	    "a stale watch cache.", NULL, 0);
	rs_stagestats_declare("rs_sync_synced", RS_STAT_GAUGE,
	    "1 once the resource's initial list is complete (SYNCED read).",
	    NULL, 0);
	rs_stagestats_declare("rs_sync_cache_objects", RS_STAT_GAUGE,
	    "Objects in the informer cache.", NULL, 0);
	rs_stagestats_declare_latency("rs_sync_event_delivery_seconds",
	    "Seconds from rs-watch reading an event to rs-sync handling it.");
	rs_stagestats_declare_latency("rs_sync_reconcile_seconds",
	    "Seconds one sync of a key takes, its intents included.");
	rs_stagestats_declare("rs_sync_takeover_warnings_total",
	    RS_STAT_COUNTER, "Controllers for which a pod created by another "
	    "client appeared: another controller of theirs is active.", NULL,
	    0);
	rs_stagestats_declare(RANK_AGE_RATIO, RS_STAT_HISTOGRAM,
	    "Age of each Ready pod chosen for deletion over the age of the "
	    "youngest Ready pod of its controller, by creation time, when a "
	    "scale-down ranks its pods (upstream's measure of how well "
	    "LogarithmicScaleDown picks young pods: below 2 is good).",
	    age_ratio_le, sizeof age_ratio_le / sizeof age_ratio_le[0]);
	shardkeys_open();
}

/* Sets the figures and writes them when due (or now: force). */
static void
stats_publish(const struct sync *s, int force)
{
	int64_t now = rs_mono_ns();
	char ctrl[64];

	if (!force && !rs_stagestats_due(now))
		return;
	snprintf(ctrl, sizeof ctrl, "resource=%s", s->kind->resource);
	rs_stagestats_set("rs_sync_events_total", NULL, s->events);
	rs_stagestats_set("rs_sync_bad_events_total", NULL, s->bad_events);
	rs_stagestats_set("rs_sync_intents_total", NULL, s->intents);
	rs_stagestats_set("rs_sync_syncs_total", NULL, s->syncs);
	rs_stagestats_set("rs_sync_ends_total", NULL, s->ended_here);
	rs_stagestats_set("rs_sync_takeover_warnings_total", NULL,
	    s->takeover.warnings);
	rs_stagestats_set("rs_sync_synced", "resource=pods", s->synced_pods);
	rs_stagestats_set("rs_sync_synced", ctrl, s->synced_ctrls);
	rs_stagestats_set("rs_sync_cache_objects", "resource=pods",
	    s->cache.pods.len);
	rs_stagestats_set("rs_sync_cache_objects", ctrl, s->cache.ctrls.len);
	shardkeys_publish(s);
	rs_stagestats_write(now);
}

static void
stats_close(const struct sync *s)
{
	stats_publish(s, 1);
	rs_stagestats_close();
}

/* Syncs the keys rs-queue has handed out; their intents go out in one
 * write, so that rs-apply wakes once for them all. */
static void
serve_keys(struct sync *s, struct rs_queue *q)
{
	const char *key;
	rs_code rc;

	while ((rc = rs_queue_next_key(q, &key)) == RS_OK) {
		queue_handed_out(s->enqueue_arg, key);
		rs_info(4, "syncing %s", key);
		rc = reconcile(s, key);
		if (rc == RS_EIO)
			write_failed(s);
		if (rc != RS_OK)
			rs_error("unable to sync %s: %s", key, rs_strerror(rc));
	}
	if (rs_line_flush(s->out) != RS_OK)
		write_failed(s);
	if (rc == RS_EEOF) {
		rs_info(1, "queue is shutting down");
		(void)rs_queue_io(q);   /* the ends still held */
		stats_close(s);
		exit(0);
	}
	if (rc == RS_EIO)
		rs_fatal(111, "lost the connection to rs-queue");
}

static int
run_loop(struct sync *s, const struct opts *o)
{
	struct rs_line_reader in;
	struct rs_queue *q;
	static struct enq enq;
	int64_t next_resync = 0;
	int eof = 0, buffered = 0;   /* lines read but not yet handled */
	rs_code rc;

	s->exp = open_expectations(o->expectations, 0, o->map_size);
	if (!o->keep_expectations)
		s->exp = fresh_expectations(s->exp, o);
	if ((rc = rs_queue_open(o->queue, &q)) != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to connect to rs-queue at %s: %s",
		    o->queue ? o->queue : "(default)", strerror(errno));
	enq.q = q;
	enq.hold.dur = o->queue_hold;
	rs_strmap_init(&enq.queued);
	s->enqueue = queue_enqueue;
	s->enqueue_arg = &enq;
	s->end_here = queue_end;
	s->end_arg = &enq;
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	if (rs_line_reader_init(&in, 0, o->max_line) != RS_OK)
		rs_fatal(111, "unable to allocate: %s", strerror(errno));
	if (o->resync > 0)
		next_resync = rs_mono_ns() + (int64_t)(o->resync * 1e9);
	stats_open();
	stats_publish(s, 1);
	while (!stopping) {
		/* fd 1 with no events: POLLERR once the next stage is gone,
		 * which an idle rs-sync would otherwise learn at its next write */
		struct pollfd pf[3] = {
			{ .fd = eof ? -1 : 0, .events = POLLIN },
			{ .fd = rs_queue_fd(q), .events = rs_queue_events(q) },
			{ .fd = 1, .events = 0 },
		};
		int timeout = -1, held;

		if (s->synced_pods && s->synced_ctrls)
			while (rs_queue_gets_pending(q) < SYNC_GETS &&
			    rs_queue_request_get(q, 0) == RS_OK)
				enq.held_gets++;
		held = queue_holds(&enq, rs_mono_ns());
		pf[1].events = held ? POLLIN : rs_queue_events(q);
		if (held)
			timeout = rs_queue_hold_ms(&enq.hold, rs_mono_ns());
		if (next_resync) {
			int64_t left = next_resync - rs_mono_ns();

			left = left > 0 ? left / 1000000 + 1 : 0;
			if (left > INT_MAX)
				left = INT_MAX;
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		{       /* stats: wake for the next write */
			int ms = rs_stagestats_timeout_ms(rs_mono_ns());

			if (ms >= 0 && (timeout < 0 || ms < timeout))
				timeout = ms;
		}
		if (buffered)
			timeout = 0;
		if (poll(pf, 3, timeout) < 0 && errno != EINTR)
			rs_fatal(111, "unable to poll: %s", strerror(errno));
		if (pf[2].revents & (POLLERR | POLLHUP))
			output_gone(s, "the reader of standard output is gone");
		if (pf[0].revents || buffered) {
			rc = read_events(s, &in, 4096);
			buffered = rc == RS_EAGAIN;
			if (rc == RS_EEOF) {
				rs_info(1, "end of events");
				eof = 1;
			}
		}
		if (next_resync && rs_mono_ns() >= next_resync) {
			handlers_enqueue_all(s);
			next_resync = rs_mono_ns() + (int64_t)(o->resync * 1e9);
		}
		rc = queue_io(&enq, queue_holds(&enq, rs_mono_ns()));
		/* the queue closing while we stop too is the end of a clean
		 * stop (s6 signals every service at once) */
		if (rc == RS_EEOF && stopping)
			break;
		if (rc != RS_OK && rc != RS_EEOF)
			rs_fatal(111, "lost the connection to rs-queue");
		/* an EOF after the queue answered SHUTDOWN is its orderly
		 * end, which serve_keys takes for one; else it is lost */
		serve_keys(s, q);
		stats_publish(s, 0);
		if (eof && rs_queue_flush(q) == RS_OK)
			break;
	}
	rs_line_flush(s->out);
	/* the ends of syncs that wrote nothing, if the socket takes them:
	 * one lost is a key queued again when the connection closes */
	(void)rs_queue_io(q);
	stats_close(s);
	rs_queue_close(q);
	rs_exp_close(s->exp);
	rs_line_reader_free(&in);
	return 0;
}

int
main(int argc, char **argv)
{
	struct rs_line_writer out;
	struct sync s;
	struct opts o;
	struct sigaction sa = { .sa_handler = on_term };
	int rc;

	rs_log_init(argv[0]);
	rs_flag_set_usage(USAGE);
	parse_opts(argc, argv, &o);
	rs_sched_batch();
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (o.dump) {
		struct rs_exp *e = open_expectations(o.expectations, 1, 0);

		rs_line_writer_init(&out, 1, 0);
		if (rs_exp_dump(e, &out) != RS_OK || rs_line_flush(&out) != RS_OK)
			rs_fatal(111, "unable to dump expectations");
		return 0;
	}
	memset(&s, 0, sizeof s);
	cache_init(&s.cache, o.kind);
	s.kind = o.kind;
	s.burst_replicas = o.burst;
	s.terminating = o.terminating;
	s.fixed_now = o.now;
	if (rs_line_writer_init(&out, 1, 1 << 20) != RS_OK)
		rs_fatal(111, "unable to allocate: %s", strerror(errno));
	s.out = &out;
	rc = o.once ? run_once(&s, &o) : run_loop(&s, &o);
	/* all freed, so that a leak checker reports only real leaks */
	cache_free(&s.cache);
	pending_free(&s.pending);
	takeover_free(&s.takeover);
	rs_line_writer_free(&out);
	return rc;
}
