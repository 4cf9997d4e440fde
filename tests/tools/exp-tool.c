/* exp-tool: the expectations file from the command line, for tests and for
 * people looking at a live controller. One operation per run, except
 * hammer, which loops over every operation checking each result (the
 * crash tests kill it at random points). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cJSON.h>

#include "clock.h"
#include "code.h"
#include "expectations.h"
#include "line.h"
#include "log.h"

#define USAGE \
"usage: exp-tool [--map-size BYTES] [--seconds S] [--write-delay USEC]\n" \
"                [--mark FILE] [--nocreate] [-v N] FILE COMMAND [ARG...]\n" \
"FILE '-' is the default, $RS_STATE_DIR/expectations.\n" \
"commands:\n" \
"  create                      create FILE (map size from --map-size)\n" \
"  expect-creations KEY N\n" \
"  expect-deletions KEY POD... (POD '-': pod keys from stdin, one a line)\n" \
"  observe-creation KEY [COUNT]\n" \
"  lower-creations KEY N\n" \
"  observe-deletion KEY POD... (POD '-': from stdin)\n" \
"  satisfied KEY               print the reason; exit 0 satisfied, 1 not\n" \
"  get KEY                     the record as one NDJSON line; exit 1 if none\n" \
"  delete KEY\n" \
"  dump                        every record, one NDJSON line each\n" \
"  check                       exit 0 consistent, 1 damaged (reason on stderr)\n" \
"  stats                       one JSON line of counters\n" \
"  reset                       drop every record\n" \
"  wrote KEY UID RES=RV...     record written resource versions (RES is\n" \
"                              resource or resource.group)\n" \
"  written KEY                 the written versions as one JSON line\n" \
"  clear-written KEY [UID]\n" \
"  bench N                     time N of each operation (ns/op)\n" \
"  hammer KEY N [PODS]         N checked rounds of every operation on KEY\n" \
"                              (N 0: until --seconds or SIGTERM)\n" \
"--write-delay sleeps after every write inside a transaction, so that a\n" \
"process killed at a random time is likely to die in the middle of one;\n" \
"--mark FILE holds one byte, 1 while hammer is inside a write transaction.\n"

static double opt_seconds;
static long opt_write_delay;
static volatile char *mark;
static volatile sig_atomic_t stopping;

static void
on_term(int sig)
{
	stopping = 1;
}

static void
die(rs_code rc, const char *what)
{
	rs_fatal(rs_exit_code(rc), "unable to %s: %s", what, rs_strerror(rc));
}

static void
write_delay(uint64_t nwrites)
{
	if (mark)
		*mark = '1';
	if (opt_write_delay > 0)
		usleep((useconds_t)opt_write_delay);
}

/* The transaction of the last call is over, committed or not. */
static rs_code
tx_over(rs_code rc)
{
	if (mark)
		*mark = '0';
	return rc;
}

static void
mark_open(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	void *p;

	if (fd < 0 || ftruncate(fd, 1) < 0)
		rs_fatal(111, "unable to open %s: %s", path, strerror(errno));
	p = mmap(NULL, 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		rs_fatal(111, "unable to map %s: %s", path, strerror(errno));
	close(fd);
	mark = p;
	*mark = '0';
}

static void
usage(void)
{
	fputs(USAGE, stderr);
	exit(100);
}

static int64_t
number(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end != '\0')
		rs_fatal(100, "not a number: %s", s);
	return v;
}

/* Pod keys from argv, or from stdin for "-". */
static char **
pod_list(int argc, char **argv, size_t *n)
{
	struct rs_line_reader r;
	char **v = NULL, *line;
	size_t len, cap = 0;
	rs_code rc;

	*n = 0;
	if (!(argc == 1 && strcmp(argv[0], "-") == 0)) {
		*n = (size_t)argc;
		return argv;
	}
	if (rs_line_reader_init(&r, 0, 4096) != RS_OK)
		die(RS_ENOMEM, "read pod keys");
	while ((rc = rs_line_read(&r, &line, &len)) == RS_OK) {
		if (len == 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((v = realloc(v, cap * sizeof *v)) == NULL)
				die(RS_ENOMEM, "read pod keys");
		}
		if ((v[(*n)++] = strdup(line)) == NULL)
			die(RS_ENOMEM, "read pod keys");
	}
	if (rc != RS_EEOF)
		die(rc, "read pod keys");
	rs_line_reader_free(&r);
	return v;
}

static void
pod_list_free(char **v, size_t n, char **argv)
{
	size_t i;

	if (v == argv)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int
print_record(const struct rs_exp_record *r)
{
	char *line;
	rs_code rc;

	if ((rc = rs_exp_record_json(r, &line)) != RS_OK)
		die(rc, "format a record");
	printf("%s\n", line);
	cJSON_free(line);
	return 0;
}

static int
cmd_dump(struct rs_exp *e)
{
	struct rs_line_writer w;
	rs_code rc;

	if ((rc = rs_line_writer_init(&w, 1, 1 << 16)) != RS_OK)
		die(rc, "dump");
	if ((rc = rs_exp_dump(e, &w)) != RS_OK ||
	    (rc = rs_line_flush(&w)) != RS_OK)
		die(rc, "dump");
	rs_line_writer_free(&w);
	return 0;
}

static int
cmd_stats(struct rs_exp *e)
{
	struct rs_exp_stats st;
	rs_code rc;

	if ((rc = rs_exp_stats(e, &st)) != RS_OK)
		die(rc, "read the counters");
	printf("{\"keys\":%" PRIu64 ",\"pods\":%" PRIu64 ",\"written\":%"
	    PRIu64 ",\"map_size\":%" PRIu64 ",\"map_used\":%" PRIu64
	    ",\"page_size\":%" PRIu64 ",\"txnid\":%" PRIu64 ",\"readers\":%"
	    PRIu32 ",\"readers_max\":%" PRIu32 "}\n", st.keys, st.pods,
	    st.written, st.map_size, st.map_used, st.page_size, st.txnid,
	    st.readers, st.readers_max);
	return 0;
}

/* ---- hammer ---- */

static void
expect(struct rs_exp *e, const char *key, int64_t add, int64_t del,
    size_t npods, const char *when)
{
	struct rs_exp_record r;
	rs_code rc;

	if ((rc = rs_exp_get(e, key, &r)) != RS_OK)
		die(rc, "read back the record");
	if (r.add != add || r.del != del || r.npods != npods)
		rs_fatal(1, "hammer: %s: %s: add %" PRId64 " del %" PRId64
		    " pods %zu, want %" PRId64 " %" PRId64 " %zu", key, when,
		    r.add, r.del, r.npods, add, del, npods);
	rs_exp_record_free(&r);
}

static void
expect_satisfied(struct rs_exp *e, const char *key, int want)
{
	enum rs_exp_why why;
	rs_code rc;
	int ok;

	if ((rc = rs_exp_satisfied(e, key, &ok, &why)) != RS_OK)
		die(rc, "ask whether satisfied");
	if (ok != want)
		rs_fatal(1, "hammer: %s: satisfied %d (%s), want %d", key, ok,
		    rs_exp_why_name(why), want);
}

static void
hammer_round(struct rs_exp *e, const char *key, char **pods, size_t m,
    unsigned long i)
{
	rs_code rc;
	size_t j;

	if ((rc = tx_over(rs_exp_expect_deletions(e, key,
	    (const char *const *)pods, m))) != RS_OK)
		die(rc, "expect deletions");
	expect(e, key, 0, (int64_t)m, m, "after expect-deletions");
	expect_satisfied(e, key, m == 0);
	for (j = 0; j < m; j++) {
		/* Twice: the second must be ignored. */
		if ((rc = tx_over(rs_exp_deletion_observed(e, key, pods[j])))
		    != RS_OK || (rc = tx_over(rs_exp_deletion_observed(e, key,
		    pods[j]))) != RS_OK)
			die(rc, "observe a deletion");
	}
	expect(e, key, 0, 0, 0, "after deletions observed");
	expect_satisfied(e, key, 1);
	if ((rc = tx_over(rs_exp_expect_creations(e, key, (int64_t)m))) !=
	    RS_OK)
		die(rc, "expect creations");
	for (j = 0; j + 1 < m; j++)
		if ((rc = tx_over(rs_exp_creation_observed(e, key))) != RS_OK)
			die(rc, "observe a creation");
	if (m > 0 && (rc = tx_over(rs_exp_lower_creations(e, key, 1))) !=
	    RS_OK)
		die(rc, "lower creations");
	expect(e, key, 0, 0, 0, "after creations observed");
	if (i % 8 == 7) {
		struct rs_exp_record r;

		if ((rc = tx_over(rs_exp_delete(e, key))) != RS_OK)
			die(rc, "delete");
		if ((rc = rs_exp_get(e, key, &r)) != RS_ENOTFOUND)
			rs_fatal(1, "hammer: %s: record still there after "
			    "delete", key);
	}
}

static int
cmd_hammer(struct rs_exp *e, const char *key, int64_t n, int64_t m)
{
	int64_t end = rs_mono_ns() + (int64_t)(opt_seconds * 1e9);
	struct sigaction sa;
	char **pods;
	unsigned long i;
	int64_t j;

	if (m < 0 || m > 100000 || n < 0)
		usage();
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	if ((pods = calloc((size_t)m + 1, sizeof *pods)) == NULL)
		die(RS_ENOMEM, "hammer");
	for (j = 0; j < m; j++)
		if (asprintf(&pods[j], "%s-pod-%" PRId64, key, j) < 0)
			die(RS_ENOMEM, "hammer");
	for (i = 0; n == 0 || i < (unsigned long)n; i++) {
		if (stopping || (opt_seconds > 0 && rs_mono_ns() > end))
			break;
		hammer_round(e, key, pods, (size_t)m, i);
	}
	printf("hammer %s: %lu rounds\n", key, i);
	for (j = 0; j < m; j++)
		free(pods[j]);
	free(pods);
	return 0;
}

/* ---- bench ---- */

static void
bench_report(const char *what, int64_t t0, long n)
{
	printf("%-22s %8.0f ns/op\n", what,
	    (double)(rs_mono_ns() - t0) / (double)n);
}

/* Per-operation cost on 1000 keys, and on sets of 500 pods (upstream's
 * burstReplicas). */
static int
cmd_bench(struct rs_exp *e, long n)
{
	enum { KEYS = 1000, BURST = 500 };
	static char keys[KEYS][32], pods[BURST][48];
	const char *pv[BURST];
	enum rs_exp_why why;
	struct rs_exp_record r;
	int64_t t0;
	long i, j;
	int ok;

	if (n < BURST)
		usage();
	for (i = 0; i < KEYS; i++)
		snprintf(keys[i], sizeof keys[i], "bench/rs-%ld", i);
	for (i = 0; i < BURST; i++) {
		snprintf(pods[i], sizeof pods[i], "bench/rs-0-pod-%ld", i);
		pv[i] = pods[i];
	}
#define TIMED(what, count, stmt) do { \
	t0 = rs_mono_ns(); \
	for (i = 0; i < (count); i++) \
		if ((stmt) != RS_OK) \
			die(RS_EIO, what); \
	bench_report(what, t0, (count)); \
} while (0)
	TIMED("expect-creations", n,
	    rs_exp_expect_creations(e, keys[i % KEYS], 5));
	TIMED("creation-observed", n,
	    rs_exp_creation_observed(e, keys[i % KEYS]));
	TIMED("satisfied", n, rs_exp_satisfied(e, keys[i % KEYS], &ok, &why));
	t0 = rs_mono_ns();
	for (i = 0; i < n / BURST; i++) {
		if (rs_exp_expect_deletions(e, keys[0], pv, BURST) != RS_OK)
			die(RS_EIO, "expect deletions");
		for (j = 0; j < BURST; j++)
			if (rs_exp_deletion_observed(e, keys[0], pv[j]) != RS_OK)
				die(RS_EIO, "observe a deletion");
	}
	bench_report("deletion-observed+", t0, n / BURST * BURST);
	t0 = rs_mono_ns();
	for (i = 0; i < n / BURST; i++)
		if (rs_exp_expect_deletions(e, keys[0], pv, BURST) != RS_OK)
			die(RS_EIO, "expect deletions");
	bench_report("expect-deletions(500)", t0, n / BURST);
	TIMED("get(500 pods)", n / BURST, rs_exp_get(e, keys[0], &r));
	rs_exp_record_free(&r);
	TIMED("delete", KEYS, rs_exp_delete(e, keys[i]));
#undef TIMED
	return 0;
}

/* ---- the other commands ---- */

static int
cmd_satisfied(struct rs_exp *e, const char *key)
{
	enum rs_exp_why why;
	rs_code rc;
	int ok;

	if ((rc = rs_exp_satisfied(e, key, &ok, &why)) != RS_OK)
		die(rc, "ask whether satisfied");
	printf("%s\n", rs_exp_why_name(why));
	return ok ? 0 : 1;
}

static int
cmd_get(struct rs_exp *e, const char *key)
{
	struct rs_exp_record r;
	rs_code rc;

	rc = rs_exp_get(e, key, &r);
	if (rc == RS_ENOTFOUND)
		return 1;
	if (rc != RS_OK)
		die(rc, "read the record");
	print_record(&r);
	rs_exp_record_free(&r);
	return 0;
}

static int
cmd_check(struct rs_exp *e)
{
	char why[256];
	rs_code rc;

	rc = rs_exp_check(e, why, sizeof why);
	if (rc == RS_EPARSE) {
		rs_error("%s is inconsistent: %s", rs_exp_path(e), why);
		return 1;
	}
	if (rc != RS_OK)
		die(rc, "check");
	return 0;
}

static int
cmd_observe_deletions(struct rs_exp *e, const char *key, int argc,
    char **argv)
{
	size_t i, n;
	char **pods = pod_list(argc, argv, &n);
	rs_code rc;

	for (i = 0; i < n; i++)
		if ((rc = rs_exp_deletion_observed(e, key, pods[i])) != RS_OK)
			die(rc, "observe a deletion");
	pod_list_free(pods, n, argv);
	return 0;
}

/* "resource.group=rv" or "resource=rv" */
static void
write_parse(const char *s, struct rs_exp_write *w)
{
	const char *eq = strchr(s, '='), *dot;

	memset(w, 0, sizeof *w);
	if (eq == NULL || eq == s || strlen(eq + 1) > RS_EXP_RV_MAX ||
	    (size_t)(eq - s) > RS_EXP_RES_MAX)
		usage();
	dot = memchr(s, '.', (size_t)(eq - s));
	memcpy(w->resource, s, (size_t)((dot ? dot : eq) - s));
	if (dot)
		memcpy(w->group, dot + 1, (size_t)(eq - dot - 1));
	strcpy(w->rv, eq + 1);
}

static int
cmd_wrote(struct rs_exp *e, const char *key, const char *uid, int argc,
    char **argv)
{
	struct rs_exp_write w[RS_EXP_WRITES_MAX];
	rs_code rc;
	int i;

	for (i = 0; i < argc; i++)
		write_parse(argv[i], &w[i]);
	if ((rc = rs_exp_wrote(e, key, uid, w, (size_t)argc)) != RS_OK)
		die(rc, "record written versions");
	return 0;
}

static int
cmd_written(struct rs_exp *e, const char *key)
{
	struct rs_exp_written r;
	cJSON *o, *v;
	char *line;
	size_t i;
	rs_code rc;

	rc = rs_exp_written(e, key, &r);
	if (rc == RS_ENOTFOUND)
		return 1;
	if (rc != RS_OK)
		die(rc, "read written versions");
	if ((o = cJSON_CreateObject()) == NULL ||
	    (v = cJSON_AddObjectToObject(o, "written")) == NULL)
		die(RS_ENOMEM, "format");
	cJSON_AddStringToObject(o, "uid", r.uid);
	for (i = 0; i < r.n; i++) {
		char name[2 * RS_EXP_RES_MAX + 2];

		snprintf(name, sizeof name, "%s%s%s", r.w[i].resource,
		    r.w[i].group[0] ? "." : "", r.w[i].group);
		cJSON_AddStringToObject(v, name, r.w[i].rv);
	}
	if ((line = cJSON_PrintUnformatted(o)) == NULL)
		die(RS_ENOMEM, "format");
	printf("%s\n", line);
	cJSON_free(line);
	cJSON_Delete(o);
	return 0;
}

static int
run(struct rs_exp *e, const char *cmd, int argc, char **argv)
{
	rs_code rc = RS_OK;
	int64_t i, n;
	size_t np;
	char **pods;

#define NARGS(lo, hi) do { if (argc < (lo) || argc > (hi)) usage(); } while (0)
	if (strcmp(cmd, "create") == 0) {
		NARGS(0, 0);
	} else if (strcmp(cmd, "expect-creations") == 0) {
		NARGS(2, 2);
		rc = rs_exp_expect_creations(e, argv[0], number(argv[1]));
	} else if (strcmp(cmd, "expect-deletions") == 0) {
		NARGS(1, INT_MAX);
		pods = pod_list(argc - 1, argv + 1, &np);
		rc = rs_exp_expect_deletions(e, argv[0],
		    (const char *const *)pods, np);
		pod_list_free(pods, np, argv + 1);
	} else if (strcmp(cmd, "observe-creation") == 0) {
		NARGS(1, 2);
		n = argc == 2 ? number(argv[1]) : 1;
		for (i = 0; i < n && rc == RS_OK; i++)
			rc = rs_exp_creation_observed(e, argv[0]);
	} else if (strcmp(cmd, "lower-creations") == 0) {
		NARGS(2, 2);
		rc = rs_exp_lower_creations(e, argv[0], number(argv[1]));
	} else if (strcmp(cmd, "observe-deletion") == 0) {
		NARGS(2, INT_MAX);
		return cmd_observe_deletions(e, argv[0], argc - 1, argv + 1);
	} else if (strcmp(cmd, "satisfied") == 0) {
		NARGS(1, 1);
		return cmd_satisfied(e, argv[0]);
	} else if (strcmp(cmd, "get") == 0) {
		NARGS(1, 1);
		return cmd_get(e, argv[0]);
	} else if (strcmp(cmd, "delete") == 0) {
		NARGS(1, 1);
		rc = rs_exp_delete(e, argv[0]);
	} else if (strcmp(cmd, "dump") == 0) {
		NARGS(0, 0);
		return cmd_dump(e);
	} else if (strcmp(cmd, "check") == 0) {
		NARGS(0, 0);
		return cmd_check(e);
	} else if (strcmp(cmd, "stats") == 0) {
		NARGS(0, 0);
		return cmd_stats(e);
	} else if (strcmp(cmd, "reset") == 0) {
		NARGS(0, 0);
		rc = rs_exp_reset(e);
	} else if (strcmp(cmd, "wrote") == 0) {
		NARGS(3, 2 + RS_EXP_WRITES_MAX);
		return cmd_wrote(e, argv[0], argv[1], argc - 2, argv + 2);
	} else if (strcmp(cmd, "written") == 0) {
		NARGS(1, 1);
		return cmd_written(e, argv[0]);
	} else if (strcmp(cmd, "clear-written") == 0) {
		NARGS(1, 2);
		rc = rs_exp_clear_written(e, argv[0], argc == 2 ? argv[1] : NULL);
	} else if (strcmp(cmd, "bench") == 0) {
		NARGS(1, 1);
		return cmd_bench(e, (long)number(argv[0]));
	} else if (strcmp(cmd, "hammer") == 0) {
		NARGS(2, 3);
		return cmd_hammer(e, argv[0], number(argv[1]),
		    argc == 3 ? number(argv[2]) : 8);
	} else {
		usage();
	}
#undef NARGS
	if (rc != RS_OK)
		die(rc, cmd);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "map-size", required_argument, NULL, 'm' },
		{ "mark", required_argument, NULL, 'k' },
		{ "seconds", required_argument, NULL, 's' },
		{ "nocreate", no_argument, NULL, 'n' },
		{ "write-delay", required_argument, NULL, 'w' },
		{ "v", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct rs_exp_opts o = { 0 };
	struct rs_exp *e;
	rs_code rc;
	int c, status;

	rs_log_init(argv[0]);
	while ((c = getopt_long(argc, argv, "+v:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': o.map_size = (size_t)number(optarg); break;
		case 'k': mark_open(optarg); break;
		case 's': opt_seconds = strtod(optarg, NULL); break;
		case 'n': o.nocreate = 1; break;
		case 'w': opt_write_delay = (long)number(optarg); break;
		case 'v': rs_log_set_verbosity((int)number(optarg)); break;
		case 'h': fputs(USAGE, stdout); return 0;
		default: usage();
		}
	}
	if (argc - optind < 2)
		usage();
	if (opt_write_delay > 0 || mark)
		rs_exp_set_write_hook(write_delay);
	if ((rc = rs_exp_open(strcmp(argv[optind], "-") ? argv[optind] : NULL,
	    &o, &e)) != RS_OK)
		die(rc, "open the expectations file");
	status = run(e, argv[optind + 1], argc - optind - 2, argv + optind + 2);
	rs_exp_close(e);
	return status;
}
