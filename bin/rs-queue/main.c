/* rs-queue: the work queue of rs-controller, served over a UNIX socket,
 * and its client commands. main.c parses flags and wires; the server is
 * server.c, the queue queue.c, the commands client.c. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "clientflags.h"
#include "flag.h"
#include "log.h"
#include "queue_client.h"
#include "schedclass.h"
#include "server.h"

static const char usage_text[] =
"usage: rs-queue [--queue PATH] serve [--notify-fd N] [--name NAME]\n"
"                [--base-delay DUR] [--max-delay DUR] [--qps N] [--burst N]\n"
"                [--drain-timeout DUR]\n"
"       rs-queue [--queue PATH] add KEY... | add -\n"
"       rs-queue [--queue PATH] get [--hold]\n"
"       rs-queue [--queue PATH] done|forget|retry KEY... | done|forget|retry -\n"
"       rs-queue [--queue PATH] after SECONDS KEY... | after SECONDS -\n"
"       rs-queue [--queue PATH] len\n"
"       rs-queue [--queue PATH] stats [--prometheus]\n"
"       rs-queue [--queue PATH] shutdown [--wait]\n"
"       rs-queue [--queue PATH] talk\n"
"\n"
"A deduplicating, rate-limited work queue (client-go's workqueue) served on\n"
"a UNIX socket. KEY is namespace/name; '-' reads keys one a line from stdin.\n"
"\n"
"Options (before or after the command):\n"
"  --queue PATH, --socket PATH  the socket (default $RS_STATE_DIR/queue.sock)\n"
"  -v N, --v N                  verbosity of the log on stderr\n"
"  --log-format text|json       log format\n"
"  -h, --help                   this help\n"
"serve:\n"
"  --notify-fd N     write a newline to fd N once listening (s6 readiness)\n"
"  --name NAME       queue name, the metrics' name label (replicaset)\n"
"  --base-delay DUR  first RETRY delay, doubling per failure (5ms)\n"
"  --max-delay DUR   cap of the per-key RETRY delay (1000s)\n"
"  --qps N           overall RETRY rate, tokens a second; 0: none (10)\n"
"  --burst N         token bucket size (100)\n"
"  --drain-timeout DUR  how long a shutdown (SHUTDOWN, TERM, INT) waits for\n"
"                    the keys out before exiting 111; 0: for ever (5s)\n"
"get:\n"
"  --hold            the key stays out until DONE from anyone (the default\n"
"                    for this command; accepted for clarity)\n"
"stats:\n"
"  --prometheus      Prometheus text format instead of JSON\n"
"shutdown:\n"
"  --wait            return once the server has exited\n"
"\n"
"DUR is a Go duration: a number with a unit, ns, us, ms, s, m or h (\"5ms\",\n"
"\"1m30s\"); \"0\" needs none.\n"
"Exit: 0 ok, 1 refused (bad key, ERR reply, shutting down), 100 usage,\n"
"111 no server or a system failure.\n";

/* Codes below 32: a bit each in opts.seen, to refuse misplaced ones. */
enum {
	O_QUEUE = 1, O_NOTIFY, O_NAME, O_BASE, O_MAX, O_QPS, O_BURST, O_HOLD,
	O_PROM, O_WAIT, O_DRAIN, O_HELP = 'h',
};

static const struct option long_opts[] = {
	{ "queue", required_argument, NULL, O_QUEUE },
	{ "socket", required_argument, NULL, O_QUEUE },
	{ "notify-fd", required_argument, NULL, O_NOTIFY },
	{ "name", required_argument, NULL, O_NAME },
	{ "base-delay", required_argument, NULL, O_BASE },
	{ "max-delay", required_argument, NULL, O_MAX },
	{ "qps", required_argument, NULL, O_QPS },
	{ "burst", required_argument, NULL, O_BURST },
	{ "hold", no_argument, NULL, O_HOLD },
	{ "prometheus", no_argument, NULL, O_PROM },
	{ "wait", no_argument, NULL, O_WAIT },
	{ "drain-timeout", required_argument, NULL, O_DRAIN },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

struct opts {
	const char *path;
	struct rsq_server_config serve;
	int hold, prometheus, wait;
	unsigned seen;            /* bit per option, to refuse misplaced ones */
};

static void __attribute__((noreturn))
usage(const char *why)
{
	rs_flag_fail("%s", why);
}

static void
set_opt(struct opts *o, int c, const char *arg)
{
	int64_t d;

	switch (c) {
	case O_QUEUE:
		o->path = arg;
		break;
	case O_NOTIFY:
		o->serve.notify_fd = (int)rs_flag_long(arg, 0, 1 << 20,
		    "--notify-fd");
		if (fcntl(o->serve.notify_fd, F_GETFD) < 0)
			usage("--notify-fd: not an open descriptor");
		break;
	case O_NAME:
		o->serve.name = arg;
		break;
	case O_BASE:
	case O_MAX:
		d = rs_flag_duration(arg, c == O_BASE ? "--base-delay" :
		    "--max-delay");
		if (c == O_BASE)
			o->serve.queue.base_delay_ns = d;
		else
			o->serve.queue.max_delay_ns = d;
		break;
	case O_QPS:
		o->serve.queue.qps = rs_flag_double(arg, 0, 1e9, "--qps");
		break;
	case O_BURST:
		o->serve.queue.burst = (int)rs_flag_long(arg, 1, 1 << 30,
		    "--burst");
		break;
	case O_DRAIN:
		o->serve.drain_timeout_ns = rs_flag_duration(arg,
		    "--drain-timeout");
		break;
	case O_HOLD:
		o->hold = 1;
		break;
	case O_PROM:
		o->prometheus = 1;
		break;
	case O_WAIT:
		o->wait = 1;
		break;
	case O_HELP:
		fputs(usage_text, stdout);
		exit(0);
	default:
		if (!rs_flags_common(c, arg, NULL))
			usage("unknown option");
	}
	if (c < 32)
		o->seen |= 1u << c;
}

/* Options up to the first word that is not one ("+": keys stay keys). */
static void
parse_opts(struct opts *o, int argc, char **argv)
{
	static struct option *longopts;
	int c;

	if (longopts == NULL)
		longopts = rs_flags_longopts(long_opts, RS_FLAGS_LOG);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hv:", longopts, NULL)) != -1)
		set_opt(o, c, optarg);
}

static void
only(const struct opts *o, unsigned allowed, const char *cmd)
{
	unsigned common = 1u << O_QUEUE;

	if (o->seen & ~(allowed | common)) {
		rs_error("an option given does not apply to %s", cmd);
		usage("misplaced option");
	}
}

static void
need_args(int n, int lo, int hi, const char *cmd)
{
	if (n < lo || (hi >= 0 && n > hi)) {
		rs_error("%s: wrong number of arguments", cmd);
		usage("bad arguments");
	}
}

static int
run(struct opts *o, const char *cmd, char **args, int n)
{
	const unsigned serve_opts = 1u << O_NOTIFY | 1u << O_NAME |
	    1u << O_BASE | 1u << O_MAX | 1u << O_QPS | 1u << O_BURST |
	    1u << O_DRAIN;
	static const char *const keycmds[][2] = {
		{ "add", "ADD" }, { "done", "DONE" }, { "forget", "FORGET" },
		{ "retry", "RETRY" },
	};
	size_t i;

	if (strcmp(cmd, "serve") == 0) {
		only(o, serve_opts, cmd);
		need_args(n, 0, 0, cmd);
		o->serve.path = o->path;
		rs_sched_batch();
		return rsq_serve(&o->serve);
	}
	for (i = 0; i < sizeof keycmds / sizeof keycmds[0]; i++)
		if (strcmp(cmd, keycmds[i][0]) == 0) {
			only(o, 0, cmd);
			need_args(n, 1, -1, cmd);
			return rsq_cmd_keys(o->path, keycmds[i][1], args, n);
		}
	if (strcmp(cmd, "after") == 0) {
		char *end;
		double sec;

		only(o, 0, cmd);
		need_args(n, 2, -1, cmd);
		sec = strtod(args[0], &end);
		if (end == args[0] || *end || !isfinite(sec) || sec > 1e9)
			usage("after: SECONDS is a number up to 1e9");
		return rsq_cmd_after(o->path, sec, args + 1, n - 1);
	}
	if (strcmp(cmd, "get") == 0) {
		only(o, 1u << O_HOLD, cmd);
		need_args(n, 0, 0, cmd);
		return rsq_cmd_get(o->path);
	}
	if (strcmp(cmd, "len") == 0 || strcmp(cmd, "talk") == 0) {
		only(o, 0, cmd);
		need_args(n, 0, 0, cmd);
		return cmd[0] == 'l' ? rsq_cmd_len(o->path) :
		    rsq_cmd_talk(o->path);
	}
	if (strcmp(cmd, "stats") == 0) {
		only(o, 1u << O_PROM, cmd);
		need_args(n, 0, 0, cmd);
		return rsq_cmd_stats(o->path, o->prometheus);
	}
	if (strcmp(cmd, "shutdown") == 0) {
		only(o, 1u << O_WAIT, cmd);
		need_args(n, 0, 0, cmd);
		return rsq_cmd_shutdown(o->path, o->wait);
	}
	rs_error("unknown command: %s", cmd);
	usage("unknown command");
}

int
main(int argc, char **argv)
{
	struct opts o;
	const char *cmd;
	char *dflt = NULL;
	int code;

	rs_log_init(argv[0]);
	rs_flag_set_usage("usage: rs-queue [OPTIONS] COMMAND [ARGS]\n");
	memset(&o, 0, sizeof o);
	o.serve.notify_fd = -1;
	o.serve.drain_timeout_ns = RSQ_DRAIN_TIMEOUT_NS;
	o.serve.name = "replicaset";
	rsq_config_default(&o.serve.queue);
	parse_opts(&o, argc, argv);
	if (optind >= argc)
		usage("no command");
	cmd = argv[optind];
	/* the command's own options follow it */
	argc -= optind;
	argv += optind;
	optind = 0;     /* GNU: start over with the new argv */
	parse_opts(&o, argc, argv);
	if (o.path == NULL) {
		if ((dflt = rs_queue_default_path()) == NULL)
			rs_fatal(111, "unable to allocate memory");
		o.path = dflt;
	}
	code = run(&o, cmd, argv + optind, argc - optind);
	free(dflt);
	return code;
}
