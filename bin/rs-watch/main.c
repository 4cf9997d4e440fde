/* rs-watch: list and watch Kubernetes resources, print NDJSON events.
 * main parses flags and wires: one reflector thread per resource, one
 * output stream, and this thread waiting on signals and on the reader of
 * standard output going away. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube.h"
#include "clientflags.h"
#include "kubeconfig.h"
#include "line.h"
#include "flag.h"
#include "log.h"
#include "schedclass.h"
#include "stagestats.h"
#include "clock.h"
#include "out.h"
#include "reflector.h"
#include "resource.h"
#include "shard.h"

#define USAGE "usage: rs-watch [flags] RESOURCE...\n"

static const char help_text[] =
USAGE
"List and watch Kubernetes resources; print one JSON line per event:\n"
"  {\"type\":\"ADDED|MODIFIED|DELETED\",\"resource\":\"pods\",\"at\":T,\"object\":{...}}\n"
"  {\"type\":\"SYNCED\",\"resource\":\"pods\",\"at\":T,\"resourceVersion\":\"N\"}\n"
"      once a resource's list is out (N: the list's resourceVersion)\n"
"  {\"type\":\"BOOKMARK\",\"resource\":\"pods\",\"at\":T,\"resourceVersion\":\"N\"}\n"
"      the stream is complete up to N: a server bookmark, or after a relist's\n"
"      difference\n"
"A DELETED that a relist found (the watch never delivered it) carries\n"
"\"final_state_unknown\":true and a minimal object: apiVersion, kind and\n"
"metadata name, namespace, uid, resourceVersion as last printed.\n"
"\n"
"RESOURCE: pods (po), replicasets (rs), replicationcontrollers (rc), or\n"
"group/version/plural (apps/v1/deployments); the core group is v1/plural\n"
"or /v1/plural.\n"
"\n"
"Flags:\n"
"  -n, --namespace NS       watch one namespace (default: all)\n"
"  -l, --selector SEL       label selector, as kubectl -l\n"
"      --field-selector SEL field selector\n"
"      --shard-selector SEL only objects whose namespace hashes into SEL:\n"
"                           shardRange(object.metadata.namespace, '0x..',\n"
"                           '0x..') terms joined by ||; sent to the server\n"
"                           (shardSelector) and checked here, so a server\n"
"                           without ShardedListAndWatch gives the same lines;\n"
"                           one that covers every namespace is not sent\n"
"      --list MODE          how a list is read: stream (default: a watch\n"
"                           that sends the objects first, as client-go's\n"
"                           WatchListClient; pages where the server\n"
"                           refuses it) or pages\n"
"      --page-size N        objects per list page (default 500; 0: one page)\n"
"      --no-trim            keep metadata.managedFields\n"
"      --protobuf           read pods in protobuf (a third of the server's\n"
"                           CPU) and print of each its metadata and the\n"
"                           fields a ReplicaSet controller reads, not the\n"
"                           whole pod (rs-watch(1)); other resources as\n"
"                           without it\n"
"      --max-line BYTES     longest event line printed (default 16 MiB, as\n"
"                           rs-sync reads); a longer object stops rs-watch\n"
"      --watch-timeout DUR  shortest server-side watch timeout; each watch\n"
"                           asks for DUR*(1+rand) (default 5m)\n"
"      --backoff-initial DUR  first wait after a failure (default 800ms)\n"
"      --backoff-max DUR    longest wait before jitter (default 30s)\n"
"      --backoff-reset DUR  quiet time that resets the backoff (default 2m)\n"
"      --batch DUR          in a storm (events again within DUR), gather\n"
"                           for DUR before the next read; what each read\n"
"                           brought is written at once (default 0: never)\n"
"      --kubeconfig PATH    kubeconfig file (default: $KUBECONFIG,\n"
"                           ~/.kube/config, then in-cluster)\n"
"      --context NAME       kubeconfig context\n"
"      --master URL         API server URL, overriding the kubeconfig\n"
"      --kube-api-qps Q     client-side request rate (default 50)\n"
"      --kube-api-burst N   client-side burst (default 100)\n"
"      --http-client C      direct (default): watches on HTTP/2 straight on\n"
"                           libnghttp2 and OpenSSL where they can (https, no\n"
"                           proxy); curl: libcurl for every request\n"
"  -v, --v N                log verbosity: 1 lists and relists, 2 watches,\n"
"                           4 requests\n"
"      --log-format F       text (default) or json\n"
"  -h, --help               this help\n"
"\n"
"Signals: HUP prints a full snapshot (every object; unchanged ones as\n"
"MODIFIED) then SYNCED again; TERM and INT flush and exit 0. A reader\n"
"that closes the pipe ends rs-watch with exit 0.\n"
"Exit: 0 ok, 100 usage (also: an unknown resource or a selector the\n"
"server refuses on the first list), 111 temporary failure.\n";

enum {
	OPT_FIELD = 256, OPT_PAGE, OPT_NOTRIM, OPT_WTIMEOUT, OPT_BO_INIT,
	OPT_BO_MAX, OPT_BO_RESET, OPT_BATCH, OPT_MAXLINE, OPT_LIST,
	OPT_PROTOBUF, OPT_SHARD,
};

static const struct option own_opts[] = {
	{ "namespace", required_argument, NULL, 'n' },
	{ "selector", required_argument, NULL, 'l' },
	{ "field-selector", required_argument, NULL, OPT_FIELD },
	{ "shard-selector", required_argument, NULL, OPT_SHARD },
	{ "list", required_argument, NULL, OPT_LIST },
	{ "page-size", required_argument, NULL, OPT_PAGE },
	{ "no-trim", no_argument, NULL, OPT_NOTRIM },
	{ "protobuf", no_argument, NULL, OPT_PROTOBUF },
	{ "watch-timeout", required_argument, NULL, OPT_WTIMEOUT },
	{ "backoff-initial", required_argument, NULL, OPT_BO_INIT },
	{ "backoff-max", required_argument, NULL, OPT_BO_MAX },
	{ "backoff-reset", required_argument, NULL, OPT_BO_RESET },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "max-line", required_argument, NULL, OPT_MAXLINE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct flags {
	struct watch_opts wo;
	struct rs_client_flags cf;
	const char *label, *field, *shard;
	struct rs_shard_ranges ranges;
};

static volatile sig_atomic_t got_hup, got_term;

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		got_hup = 1;
	else
		got_term = 1;
}

/* A namespace is a DNS label; checking it keeps the URL path clean. */
static int
ns_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > 63)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/* Checked as the server checks it: one it refuses fails every list. */
static void
parse_shard(struct flags *f, const char *sel)
{
	char why[256];

	rs_shard_ranges_free(&f->ranges);
	if (rs_shard_parse_why(sel, &f->ranges, why, sizeof why) != RS_OK)
		rs_flag_fail("invalid --shard-selector: %s", why);
	f->shard = sel;
	f->wo.shard = &f->ranges;
	f->wo.shard_said = 1;
}

static void
parse_flags(int argc, char **argv, struct flags *f)
{
	struct option *longopts = rs_flags_longopts(own_opts,
	    RS_FLAGS_LOG | RS_FLAGS_API | RS_FLAGS_RATE | RS_FLAGS_HTTP);
	int c;

	while ((c = getopt_long(argc, argv, "n:l:v:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!ns_ok(optarg))
				rs_flag_fail("invalid namespace '%s'", optarg);
			f->wo.ns = optarg;
			break;
		case 'l': f->label = optarg; break;
		case OPT_FIELD: f->field = optarg; break;
		case OPT_SHARD: parse_shard(f, optarg); break;
		case OPT_LIST:
			if (strcmp(optarg, "stream") == 0)
				f->wo.stream_list = 1;
			else if (strcmp(optarg, "pages") == 0)
				f->wo.stream_list = 0;
			else
				rs_flag_fail("--list takes stream or pages, not "
				    "'%s'", optarg);
			break;
		case OPT_PAGE:
			f->wo.page_size = rs_flag_long(optarg, 0, 1000000000L,
			    "--page-size");
			break;
		case OPT_MAXLINE:
			f->wo.max_line = (size_t)rs_flag_long(optarg, 1024,
			    1L << 40, "--max-line");
			break;
		case OPT_NOTRIM: f->wo.trim = 0; break;
		case OPT_PROTOBUF: f->wo.protobuf = 1; break;
		case OPT_WTIMEOUT:
			f->wo.min_watch_timeout = rs_flag_duration(optarg,
			    "--watch-timeout") / 1000000000LL;
			if (f->wo.min_watch_timeout < 1)
				rs_flag_fail("%s must be at least 1s", "--watch-timeout");
			break;
		case OPT_BO_INIT:
			f->wo.bo_initial = rs_flag_duration(optarg, "--backoff-initial");
			break;
		case OPT_BO_MAX:
			f->wo.bo_max = rs_flag_duration(optarg, "--backoff-max");
			break;
		case OPT_BO_RESET:
			f->wo.bo_reset = rs_flag_duration(optarg, "--backoff-reset");
			break;
		case OPT_BATCH:
			f->wo.batch_ms = rs_flag_batch_ms(optarg, "--batch");
			break;
		case 'h':
			fputs(help_text, stdout);
			exit(0);
		default:
			if (!rs_flags_common(c, optarg, &f->cf))
				rs_flag_fail("%s", "invalid flag");
		}
	}
	if (optind >= argc)
		rs_flag_fail("%s", "no resource to watch");
}

/* One reflector per resource; the same plural twice would make the
 * "resource" field of the output ambiguous. */
static struct reflector *
make_reflectors(int n, char **args, const struct watch_opts *wo)
{
	struct reflector *rf = calloc(n, sizeof *rf);
	struct resource res;
	char why[512];
	int i, j;

	if (rf == NULL)
		rs_fatal(111, "unable to allocate: %s", rs_strerror(RS_ENOMEM));
	for (i = 0; i < n; i++) {
		if (resource_parse(args[i], &res, why, sizeof why) != RS_OK)
			rs_flag_fail("%s", why);
		for (j = 0; j < i; j++)
			if (strcmp(rf[j].res.plural, res.plural) == 0)
				rs_flag_fail("resource '%s' given twice", res.plural);
		if (reflector_init(&rf[i], wo, &res) != RS_OK)
			rs_fatal(111, "unable to allocate: %s",
			    rs_strerror(RS_ENOMEM));
	}
	return rf;
}

static char *
escape_or_die(const char *s)
{
	char *e;

	if (s == NULL)
		return NULL;
	if ((e = rs_kube_escape(s)) == NULL)
		rs_fatal(111, "unable to allocate: %s", rs_strerror(RS_ENOMEM));
	return e;
}

/* A selector of every namespace filters nothing, yet a server with the
 * gate would check each object against it and rs-watch would ask it once
 * whether it filters: work with no result. So it is not sent, nor is each
 * object checked here, as every one would pass. */
static int
shard_whole(const struct flags *f)
{
	if (f->shard == NULL || !rs_shard_ranges_whole(&f->ranges))
		return 0;
	rs_info(1, "the shard selector covers every namespace, so there is "
	    "nothing to filter: listing and watching without shardSelector");
	return 1;
}

/* Signals reach this thread only inside ppoll; the threads block them.
 * Standard output is polled for nothing but POLLERR/POLLHUP: on a pipe,
 * that is the reader gone, which an idle watcher would otherwise notice
 * only at its next event. */
__attribute__((noreturn)) static void
wait_loop(struct reflector *rf, int n, const sigset_t *waitmask)
{
	struct pollfd p = { STDOUT_FILENO, 0, 0 };
	int i;

	for (;;) {
		int64_t now = rs_mono_ns();
		int ms = rs_stagestats_timeout_ms(now);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		if (rs_stagestats_due(now)) {
			/* the heartbeat rs-metrics checks, with the lines out */
			rs_stagestats_set("rs_watch_lines_total", NULL, out_lines());
			rs_stagestats_write(now);
		}
		if (ppoll(&p, p.fd >= 0, ms >= 0 ? &ts : NULL, waitmask) < 0 &&
		    errno != EINTR)
			rs_fatal(111, "unable to poll: %s", strerror(errno));
		if (got_term)
			out_exit(0);
		if (got_hup) {
			got_hup = 0;
			for (i = 0; i < n; i++)
				reflector_hup(&rf[i]);
		}
		if (p.revents & (POLLERR | POLLHUP))
			out_exit(0);
		if (p.revents & POLLNVAL)
			p.fd = -1;
	}
}

int
main(int argc, char **argv)
{
	struct flags f = {
		.wo = { .page_size = 500, .stream_list = 1, .trim = 1,
		    .min_watch_timeout = 300,
		    .bo_initial = 800000000LL, .bo_max = 30000000000LL,
		    .bo_reset = 120000000000LL, .batch_ms = 0,
		    .max_line = RS_LINE_MAX_DEFAULT },
		.cf.kopts = { .qps = 50, .burst = 100, .timeout_ms = 120000,
		    .user_agent = "rs-watch/0.1",
		    .http_client = RS_KUBE_HTTP_DIRECT },
	};
	struct rs_kube_config *cfg;
	struct reflector *rf;
	struct sigaction sa;
	sigset_t block, waitmask;
	rs_code rc;
	int i, n;

	/* A reflector thread each: glibc would give every thread an arena of
	 * its own, each keeping what a 500-object page freed (1.4 MB more at
	 * the peak of a 10,000-pod cluster); they rarely allocate at once. */
	mallopt(M_ARENA_MAX, 1);
	rs_log_init(argv[0]);
	rs_flag_set_usage(USAGE);
	parse_flags(argc, argv, &f);
	rs_sched_batch();       /* before the reflectors' threads */
	n = argc - optind;
	rf = make_reflectors(n, argv + optind, &f.wo);
	f.wo.label_q = escape_or_die(f.label);
	f.wo.field_q = escape_or_die(f.field);
	if (shard_whole(&f))
		f.wo.shard = NULL;      /* every object would pass the check */
	else
		f.wo.shard_q = escape_or_die(f.shard);

	if ((rc = rs_kube_config_load(&f.cf.ko, &cfg)) != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to load the API configuration: %s",
		    rs_strerror(rc));
	if ((rc = rs_kube_new(cfg, &f.cf.kopts, &f.wo.kube)) != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to set up the API client: %s",
		    rs_strerror(rc));

	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGHUP);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);

	if (rs_stagestats_open("rs-watch") == RS_OK)
		rs_stagestats_declare("rs_watch_lines_total", RS_STAT_COUNTER,
		    "Event lines written by rs-watch.", NULL, 0);
	else
		rs_warn("unable to publish figures for rs-metrics");
	out_init(STDOUT_FILENO);
	for (i = 0; i < n; i++)
		if (reflector_start(&rf[i]) != RS_OK)
			rs_fatal(111, "unable to start a thread: %s",
			    strerror(errno));
	wait_loop(rf, n, &waitmask);
}
