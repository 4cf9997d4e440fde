/* rs-metrics: one HTTP endpoint for the whole pipeline. /metrics in the
 * Prometheus text format (the work queue's figures from rs-queue STATS,
 * the stages' from their stats files), /healthz and /readyz. main.c parses
 * flags and wires; see rsm.h for the parts. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clientflags.h"
#include "flag.h"
#include "log.h"
#include "queue_client.h"
#include "rsm.h"
#include "statedir.h"

#define USAGE "usage: rs-metrics [--listen ADDR:PORT] [--queue PATH] " \
    "[--state-dir DIR]\n" \
    "                  [--shard-file PATH]\n" \
    "                  [--stages LIST] [--stale SECONDS] [--max-connections N]\n" \
    "                  [--timeout SECONDS] [--notify-fd N]\n" \
    "                  [-v N] [--log-format text|json]\n"

static const char help_text[] =
USAGE
"\n"
"Serve the pipeline's figures over HTTP: /metrics (Prometheus text format:\n"
"the work queue's from rs-queue, the stages' from $RS_STATE_DIR/stats),\n"
"/healthz (/livez) and /readyz. See rs-metrics(1) and doc/metrics.md.\n"
"\n"
"Flags:\n"
"      --listen ADDR:PORT  where to listen (default " RSM_LISTEN_DEFAULT ");\n"
"                          [ADDR]:PORT for IPv6, :PORT for every address,\n"
"                          port 0 for any free port (logged)\n"
"      --queue PATH        rs-queue socket (default $RS_STATE_DIR/queue.sock)\n"
"      --state-dir DIR     the instance's state directory (default\n"
"                          $RS_STATE_DIR, else $XDG_RUNTIME_DIR/rs-controller,\n"
"                          else /dev/shm/rs-controller)\n"
"      --shard-file PATH   rs-lease --shards' shard file, for the rs_shard_*\n"
"                          figures (default $RS_STATE_DIR/shards.json)\n"
"      --stages LIST       stages whose stats /healthz requires, comma-\n"
"                          separated (default " RSM_STAGES_DEFAULT "; \"\": none)\n"
"      --stale SECONDS     a stats file older than this fails /healthz\n"
"                          (default 10)\n"
"      --max-connections N HTTP connections at once (default 64; more wait\n"
"                          in the listen backlog)\n"
"      --timeout SECONDS   a connection's time from accept to its last byte\n"
"                          (default 10; 408 when its request is not whole)\n"
"      --notify-fd N       write a newline to fd N once listening (s6)\n"
"  -v, --v N               log verbosity: 1 left-out figures, 2 refused\n"
"                          requests and missing queue, 3 every request\n"
"      --log-format F      text (default) or json\n"
"  -h, --help              this help\n"
"\n"
"Exit: 0 on TERM or INT, 100 usage, 111 unable to listen.\n";

enum { O_LISTEN = 256, O_QUEUE, O_STATE, O_SHARD, O_STAGES, O_STALE,
    O_MAXCONN, O_TIMEOUT, O_NOTIFY };

static const struct option own_opts[] = {
	{ "listen", required_argument, NULL, O_LISTEN },
	{ "queue", required_argument, NULL, O_QUEUE },
	{ "state-dir", required_argument, NULL, O_STATE },
	{ "shard-file", required_argument, NULL, O_SHARD },
	{ "stages", required_argument, NULL, O_STAGES },
	{ "stale", required_argument, NULL, O_STALE },
	{ "max-connections", required_argument, NULL, O_MAXCONN },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "notify-fd", required_argument, NULL, O_NOTIFY },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* ADDR:PORT, [ADDR]:PORT or :PORT, with a numeric port. */
static void
check_listen(const char *s)
{
	const char *colon = strrchr(s, ':'), *p;

	if (colon == NULL || colon[1] == '\0' || strlen(colon + 1) > 5)
		rs_flag_fail("--listen wants ADDR:PORT, not '%s'", s);
	for (p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			rs_flag_fail("--listen wants a numeric port, not '%s'", s);
	if (atoi(colon + 1) > 65535)
		rs_flag_fail("--listen: port out of range in '%s'", s);
	if (s[0] == '[' ? colon[-1] != ']' || colon == s + 1 :
	    memchr(s, ':', colon - s) != NULL)
		rs_flag_fail("--listen: write an IPv6 address as [ADDR]:PORT, not '%s'",
		    s);
}

/* "a,b" into o->stages; "" is none. */
static void
split_stages(struct rsm_opts *o, const char *list)
{
	char *p, *tok;

	if ((o->stage_list = strdup(list)) == NULL)
		rs_fatal(111, "unable to allocate: %s", strerror(errno));
	o->stages = calloc(strlen(list) / 2 + 2, sizeof *o->stages);
	if (o->stages == NULL)
		rs_fatal(111, "unable to allocate: %s", strerror(errno));
	o->nstages = 0;
	for (p = o->stage_list; (tok = strsep(&p, ",")) != NULL; ) {
		if (*tok == '\0')
			continue;
		if (strchr(tok, '/') || tok[0] == '.')
			rs_flag_fail("--stages: '%s' is not a stage name", tok);
		o->stages[o->nstages++] = tok;
	}
}

static void
parse_flags(int argc, char **argv, struct rsm_opts *o)
{
	const char *stages = RSM_STAGES_DEFAULT, *queue = NULL, *shard = NULL;
	struct option *longopts = rs_flags_longopts(own_opts, RS_FLAGS_LOG);
	int c;

	o->listen = RSM_LISTEN_DEFAULT;
	o->stale = RSM_STALE_DEFAULT;
	o->max_conns = RSM_CONN_MAX_DEFAULT;
	o->timeout_ms = (int64_t)(RSM_TIMEOUT_DEFAULT * 1000);
	o->notify_fd = -1;
	while ((c = getopt_long(argc, argv, "v:h", longopts, NULL)) != -1) {
		switch (c) {
		case O_LISTEN: o->listen = optarg; break;
		case O_QUEUE: queue = optarg; break;
		case O_STATE:
			if (*optarg == '\0')
				rs_flag_fail("%s", "--state-dir is empty");
			/* the one place every path of the instance comes from */
			setenv("RS_STATE_DIR", optarg, 1);
			break;
		case O_SHARD: shard = optarg; break;
		case O_STAGES: stages = optarg; break;
		case O_STALE:
			o->stale = rs_flag_double(optarg, 0.5, 86400, "--stale");
			break;
		case O_MAXCONN:
			o->max_conns = (size_t)rs_flag_long(optarg, 1, 4096,
			    "--max-connections");
			break;
		case O_TIMEOUT:
			o->timeout_ms = (int64_t)(rs_flag_double(optarg, 1, 3600,
			    "--timeout") * 1000);
			break;
		case O_NOTIFY:
			o->notify_fd = (int)rs_flag_double(optarg, 0, 1 << 20,
			    "--notify-fd");
			if (fcntl(o->notify_fd, F_GETFD) < 0)
				rs_flag_fail("--notify-fd %s: not an open descriptor",
				    optarg);
			break;
		case 'h':
			fputs(help_text, stdout);
			exit(0);
		default:
			if (!rs_flags_common(c, optarg, NULL))
				rs_flag_fail("%s", "invalid flag");
		}
	}
	if (optind < argc)
		rs_flag_fail("unexpected argument '%s'", argv[optind]);
	check_listen(o->listen);
	split_stages(o, stages);
	o->queue = queue ? strdup(queue) : rs_queue_default_path();
	o->stats_dir = rs_state_path("stats");
	/* where service/rs-pipeline has rs-lease write it */
	o->shard_file = shard ? strdup(shard) : rs_state_path("shards.json");
	if (o->queue == NULL || o->stats_dir == NULL || o->shard_file == NULL)
		rs_fatal(111, "unable to allocate: %s", strerror(errno));
}

int
main(int argc, char **argv)
{
	struct rsm_opts o;
	int code;

	rs_log_init(argv[0]);
	rs_flag_set_usage(USAGE);
	memset(&o, 0, sizeof o);
	parse_flags(argc, argv, &o);
	rs_info(1, "queue %s, stats %s", o.queue, o.stats_dir);
	code = rsm_serve(&o);
	free(o.stage_list);
	free(o.stages);
	free(o.queue);
	free(o.stats_dir);
	free(o.shard_file);
	return code;
}
