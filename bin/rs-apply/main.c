/* rs-apply: the API writes of the ReplicaSet controller. Reads the intents
 * rs-sync writes (doc/intents.md) on standard input and carries them out:
 * pod creates in slow-start batches, deletes, adoptions and releases,
 * status updates, the upstream Events, then the key's end to rs-queue.
 * main parses flags and wires; one thread runs everything over the curl
 * multi interface. At most --concurrency keys are in flight: past that
 * standard input is not read, and the pipe pushes back on rs-sync. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apply.h"
#include "clock.h"
#include "kube.h"
#include "clientflags.h"
#include "flag.h"
#include "log.h"
#include "queue_hold.h"
#include "schedclass.h"
#include "shard.h"
#include "stagestats.h"

#define USAGE "usage: rs-apply [flags] < intents.ndjson\n"

static const char help_text[] =
USAGE
"Carry out the ReplicaSet controller's intents (doc/intents.md): create,\n"
"delete, adopt and release pods, write status and Events, then report each\n"
"key's end to rs-queue (DONE, then FORGET or RETRY, then AFTER).\n"
"\n"
"Flags:\n"
"      --concurrency N      keys in flight at once (default 16); past it\n"
"                           standard input is not read\n"
"      --batch DUR          with 64 or more requests in flight, take the\n"
"                           next answers together for a quarter of the time\n"
"                           the server needs for them, at most DUR (default\n"
"                           10ms; 0: every answer at its own wake-up)\n"
"      --max-in-flight N    API requests in flight at once (default 1024)\n"
"      --http-client C      direct (default): HTTP/2 straight on libnghttp2\n"
"                           and OpenSSL where it can (https, no proxy);\n"
"                           curl: libcurl for every request\n"
"      --streams N          HTTP/2 streams per connection; more requests\n"
"                           in flight open more connections (default 100)\n"
"      --dry-run            print the requests as NDJSON lines\n"
"                           {\"method\",\"path\",\"body\"} instead of sending\n"
"                           them; neither rs-queue nor the expectations file\n"
"                           is touched, no Event is written\n"
"      --queue PATH         rs-queue socket (default $RS_STATE_DIR/queue.sock)\n"
"      --no-queue           do not report to rs-queue (running by hand)\n"
"      --queue-hold DUR     while answers are due, hold the keys' ends back\n"
"                           for them, at most DUR (default 20ms, at most\n"
"                           10s; 0: each goes at its answer's wake-up)\n"
"      --expectations PATH  expectations file (default\n"
"                           $RS_STATE_DIR/expectations)\n"
"      --fence FILE         the fence file rs-lease keeps (doc/sharding.md):\n"
"                           a write whose namespace's bucket has its slot\n"
"                           passed is not sent and fails, and its key\n"
"                           sends nothing more that round\n"
"      --shards B           buckets of the fence file (1-256; with --fence)\n"
"      --kubeconfig PATH    kubeconfig file (default: $KUBECONFIG,\n"
"                           ~/.kube/config, then in-cluster)\n"
"      --context NAME       kubeconfig context\n"
"      --master URL         API server URL, overriding the kubeconfig\n"
"      --kube-api-qps Q     client-side request rate, Events included\n"
"                           (default 20; 0: unlimited)\n"
"      --kube-api-burst N   client-side burst (default 30)\n"
"      --feature-gates G    Name=bool,... as kube-controller-manager's:\n"
"                           StaleControllerConsistencyReplicaSet (default\n"
"                           true) records each write's resourceVersion in\n"
"                           the expectations file for rs-sync's guard\n"
"  -v, --v N                log verbosity: 2 decisions and slow-start\n"
"                           batches, 3 events, 4 requests, 6 request bodies\n"
"      --log-format F       text (default) or json\n"
"  -h, --help               this help\n"
"\n"
"At end of input, or on TERM or INT, rs-apply finishes the keys in flight\n"
"and exits 0 (a key whose end line never came is reported RETRY); a second\n"
"signal exits at once with 111.\n"
"Exit: 0 ok, 100 usage, 111 temporary failure.\n";

/* --queue-hold's default: the window in which rs-pipeline's rs-watch
 * gathers a storm's events, so the answers to one window's intents end
 * their keys in one write to rs-queue. */
#define APPLY_HOLD_NS (20 * 1000000LL)

enum { OPT_CONC = 256, OPT_DRY, OPT_QUEUE, OPT_NOQUEUE, OPT_EXP, OPT_BATCH,
	OPT_INFLIGHT, OPT_STREAMS, OPT_FENCE, OPT_SHARDS, OPT_HOLD };

static const struct option own_opts[] = {
	{ "concurrency", required_argument, NULL, OPT_CONC },
	{ "dry-run", no_argument, NULL, OPT_DRY },
	{ "queue", required_argument, NULL, OPT_QUEUE },
	{ "no-queue", no_argument, NULL, OPT_NOQUEUE },
	{ "queue-hold", required_argument, NULL, OPT_HOLD },
	{ "expectations", required_argument, NULL, OPT_EXP },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "max-in-flight", required_argument, NULL, OPT_INFLIGHT },
	{ "streams", required_argument, NULL, OPT_STREAMS },
	{ "fence", required_argument, NULL, OPT_FENCE },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct flags {
	struct rs_client_flags cf;
	struct fx_opts fx;
	const char *fence;
	unsigned shards;
};

struct app app;

static volatile sig_atomic_t got_term;
static struct rs_line_reader input;
static int input_done;

static void
on_signal(int sig)
{
	(void)sig;
	if (got_term)
		_exit(111);
	got_term = 1;
}

static void
parse_flags(int argc, char **argv, struct flags *f)
{
	struct option *longopts = rs_flags_longopts(own_opts,
	    RS_FLAGS_LOG | RS_FLAGS_API | RS_FLAGS_RATE | RS_FLAGS_GATES |
	    RS_FLAGS_HTTP);
	int c;

	while ((c = getopt_long(argc, argv, "v:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CONC:
			app.concurrency = rs_flag_long(optarg, 1, 1000000,
			    "--concurrency");
			break;
		case OPT_DRY: app.dry_run = 1; break;
		case OPT_QUEUE: f->fx.queue_path = optarg; break;
		case OPT_NOQUEUE: f->fx.no_queue = 1; break;
		case OPT_EXP: f->fx.exp_path = optarg; break;
		case OPT_HOLD: f->fx.hold = rs_queue_hold_flag(optarg); break;
		case OPT_BATCH:
			f->cf.kopts.settle_ms = rs_flag_batch_ms(optarg,
			    "--batch");
			break;
		case OPT_INFLIGHT:
			f->cf.kopts.max_running = (int)rs_flag_long(optarg, 1,
			    65536, "--max-in-flight");
			break;
		case OPT_STREAMS:
			f->cf.kopts.streams = (int)rs_flag_long(optarg, 1,
			    65536, "--streams");
			break;
		case OPT_FENCE: f->fence = optarg; break;
		case OPT_SHARDS:
			f->shards = (unsigned)rs_flag_long(optarg, 1,
			    RS_SHARD_BUCKETS_MAX, "--shards");
			break;
		case 'h':
			fputs(help_text, stdout);
			exit(0);
		default:
			if (!rs_flags_common(c, optarg, &f->cf))
				rs_flag_fail("%s", "invalid flag");
		}
	}
	if (optind < argc)
		rs_flag_fail("unexpected argument '%s'", argv[optind]);
	if ((f->fence != NULL) != (f->shards != 0))
		rs_flag_fail("%s", "--fence and --shards go together");
}

static void
setup_signals(void)
{
	struct sigaction sa;

	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

static void
setup_kube(struct flags *f)
{
	struct rs_kube_config *cfg;
	rs_code rc;

	if ((rc = rs_kube_config_load(&f->cf.ko, &cfg)) != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to load the API "
		    "configuration: %s", rs_strerror(rc));
	if ((rc = rs_kube_new(cfg, &f->cf.kopts, &app.kube)) != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to set up the API client: %s",
		    rs_strerror(rc));
}

/* stats: this stage's figures for rs-metrics (doc/metrics.md); the API
 * requests (writes, codes, latency) are counted by the client itself. */
static void
stats_open(void)
{
	if (rs_stagestats_open("rs-apply") != RS_OK) {
		rs_warn("unable to publish stats: going on without");
		return;
	}
	rs_stagestats_declare("rs_apply_intents_total", RS_STAT_COUNTER,
	    "Intent lines read, by operation (bad: not a valid intent).",
	    NULL, 0);
	rs_stagestats_declare("rs_apply_keys_in_flight", RS_STAT_GAUGE,
	    "Keys being read, run or waiting.", NULL, 0);
	rs_stagestats_declare("rs_apply_requests_pending", RS_STAT_GAUGE,
	    "API requests queued or in flight.", NULL, 0);
	latency_declare();
}

static void
stats_count(const struct intent *in)
{
	char l[32];

	snprintf(l, sizeof l, "op=%s", op_name(in->op));
	rs_stagestats_add("rs_apply_intents_total", l, 1);
}

static void
stats_publish(int force)
{
	int64_t now = rs_mono_ns();

	if (!force && !rs_stagestats_due(now))
		return;
	rs_stagestats_set("rs_apply_keys_in_flight", NULL, keys_alive());
	rs_stagestats_set("rs_apply_requests_pending", NULL, req_pending());
	rs_stagestats_write(now);
}

static int
stdin_readable(void)
{
	struct pollfd p = { STDIN_FILENO, POLLIN, 0 };

	return poll(&p, 1, 0) > 0;
}

static int
may_read(void)
{
	return !input_done && !got_term &&
	    (keys_alive() < app.concurrency || keys_open());
}

/* Takes the lines already buffered or readable without blocking, while
 * fewer than --concurrency keys are in flight. */
static void
read_input(void)
{
	struct intent *in;
	char *line;
	size_t len;
	rs_code rc;

	while (may_read()) {
		rc = rs_line_next(&input, &line, &len);
		if (rc == RS_EAGAIN) {
			if (!stdin_readable())
				return;
			rc = rs_line_fill(&input);
			if (rc != RS_OK && rc != RS_EEOF && rc != RS_EAGAIN)
				rs_fatal(111, "unable to read standard input: "
				    "%s", rc == RS_EIO ? strerror(errno) :
				    rs_strerror(rc));
			continue;
		}
		if (rc == RS_EEOF) {
			input_done = 1;
			keys_input_end(input.lineno);
			reach_end();
			return;
		}
		if (rc == RS_ETOOBIG) {
			rs_warn("line %lu: longer than %zu bytes: skipped",
			    input.lineno, input.max);
			in = intent_bad(input.lineno);
		} else if (rc != RS_OK) {
			rs_fatal(111, "unable to read standard input: %s",
			    rs_strerror(rc));
		} else if (len == 0) {
			continue;
		} else {
			in = intent_decode(line, len, input.lineno);
		}
		if (in == NULL)
			rs_fatal(111, "unable to read an intent: %s",
			    rs_strerror(RS_ENOMEM));
		if (!app.dry_run)
			fx_hold();
		stats_count(in);
		keys_feed(in);
	}
}

static void
flush_output(void)
{
	if (app.dry_run && rs_line_flush(&app.out) != RS_OK)
		rs_fatal(111, "unable to write to standard output: %s",
		    strerror(errno));
}

static void
run(void)
{
	int stopping = 0;

	for (;;) {
		int timeout, want_in;

		req_poll();
		if (got_term && !stopping) {
			stopping = app.stopping = 1;
			rs_info(1, "terminating: finishing %zu keys in flight",
			    keys_alive());
			keys_input_end(input.lineno);
			reach_end();
		}
		read_input();
		req_poll();
		events_poll();
		flush_output();
		stats_publish(0);
		if ((input_done || stopping) && keys_alive() == 0 &&
		    req_pending() == 0 && events_idle())
			break;
		want_in = may_read();
		timeout = events_wait_ms(req_wait_ms(fx_io(req_in_flight() > 0)));
		if (req_in_flight() > 0 && app.kube != NULL) {
			rs_kube_run(app.kube, timeout, want_in ? STDIN_FILENO :
			    -1);
		} else {
			/* nothing in flight: wait for input (or a signal) */
			struct pollfd p = { want_in ? STDIN_FILENO : -1,
			    POLLIN, 0 };

			(void)poll(&p, 1, timeout);
		}
	}
}

int
main(int argc, char **argv)
{
	struct flags f = {
		.cf.kopts = { .qps = 20, .burst = 30, .user_agent = "rs-apply/0.1",
		    .settle_ms = 10, .http_client = RS_KUBE_HTTP_DIRECT },
		.fx.hold = APPLY_HOLD_NS,
	};
	rs_code rc;

	rs_log_init(argv[0]);
	rs_flag_set_usage(USAGE);
	app.concurrency = 16;
	parse_flags(argc, argv, &f);
	rs_sched_batch();
	fence_init(f.fence, f.shards);
	setup_signals();
	if (app.dry_run) {
		if (rs_line_writer_init(&app.out, STDOUT_FILENO, 0) != RS_OK)
			rs_fatal(111, "unable to allocate: %s",
			    rs_strerror(RS_ENOMEM));
	} else {
		setup_kube(&f);
		fx_init(&f.fx);
		stats_open();
	}
	if (fence_on() && app.kube != NULL)
		rs_kube_set_gate(app.kube, fence_gate, NULL);
	keys_init();
	events_init();
	reach_init(!app.dry_run && !f.fx.no_queue);
	if ((rc = rs_line_reader_init(&input, STDIN_FILENO, 0)) != RS_OK)
		rs_fatal(111, "unable to allocate: %s", rs_strerror(rc));
	run();
	flush_output();
	if (!app.dry_run)
		fx_close();
	stats_publish(1);
	rs_stagestats_close();
	rs_info(1, "input done, every key finished");
	return 0;
}
