/* audit: figures read from a kube-apiserver audit log (JSON lines, as
 * `tests/env/cluster up DIR --audit` writes DIR/audit.log: level Metadata,
 * one ResponseComplete event per finished request). Only ResponseComplete
 * events count; each is a request's interval [requestReceivedTimestamp,
 * stageTimestamp] as the API server saw it.
 *
 *   audit idle --agent PREFIX[,PREFIX...] --from T0 --until T1 [-v] LOG
 *       The requests whose userAgent starts with one of the prefixes, but
 *       watches (a watch is open all along, it is no work), clipped to
 *       [T0, T1] (Unix seconds with a fraction, as bulk prints t0 and
 *       converged). Prints one "name value" a line:
 *         window_s     T1 - T0
 *         busy_s       the length of the union of the intervals: the time
 *                      at least one request of the agents was in flight
 *         idle_s       window_s - busy_s: no request of theirs in flight
 *                      while there was work to do
 *         requests     the requests that overlap the window
 *         gaps         idle stretches longer than 1 ms (the one before the
 *                      first request and the one after the last included)
 *         max_gap_s    the longest idle stretch
 *         first_s      T0 to the first request received (window_s if none)
 *         batch_gap_s  the sum of the gaps between two pod creates (the
 *                      request that ended last before the gap and the one
 *                      that started first after it): the pauses between
 *                      the batches of a slow start
 *         batch_gaps   their number
 *       With -v, first one line per gap in time order: "gap_ms G at_ms A
 *       after VERB RESOURCE before VERB RESOURCE" (A from T0; RESOURCE
 *       with its subresource, as pods or replicasets/status; "-" at the
 *       window's ends), to see where a side waits.
 *   audit reaction --trigger-agent PREFIX --agent PREFIX
 *           [--trigger pod-delete,rs-write] [-n NAMESPACE] [-v] LOG
 *       For each trigger, a write by the trigger agent (pod-delete: a
 *       DELETE of a pod; rs-write: a POST, PUT or PATCH of a ReplicaSet,
 *       not of its status), the latency from its stageTimestamp (the write
 *       done) to the requestReceivedTimestamp of the agent's next pod
 *       create in the same namespace (the first one received after the
 *       trigger was). The latency may be below zero: the API server
 *       sends the watch event of a write before it finishes the writer's
 *       answer, and a fast controller's create can arrive in between.
 *       -n: only the triggers in NAMESPACE. Prints count (triggers
 *       answered), unmatched (no pod create after them), p50_ms, p99_ms
 *       (nearest rank), max_ms; then the same from the trigger's
 *       requestReceivedTimestamp (the write sent: never below zero, and
 *       it includes the time the API server took over the write, the same
 *       whoever answers): start_p50_ms, start_p99_ms, start_max_ms. With
 *       -v, first one line per trigger in the order they were done:
 *       "lat_ms X start_ms Y VERB RESOURCE NAMESPACE/NAME" (NA if
 *       unmatched).
 *   audit writes --agent PREFIX[,PREFIX...] [-n NAMESPACE] [--from T0]
 *           [--until T1] LOG
 *       The agents' pod writes done (stageTimestamp) in [T0, T1] (default:
 *       the whole log), in NAMESPACE (default: all): creates and deletes
 *       answered 2xx, rejected (pod creates and deletes answered
 *       otherwise); and throttled: the agents' requests of any kind
 *       answered 429 TooManyRequests. A request the server finished after
 *       its client gave up is in the log all the same, so the counts are
 *       the server's, not what the client believes.
 * LOG "-" is the standard input. Lines that are not JSON are skipped (and
 * counted on stderr): a log read while the API server writes may end in
 * half a line. Exit 0, 100 on usage, 111 on failure. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "line.h"
#include "log.h"

#define GAP_MIN 0.001          /* a gap: an idle stretch over 1 ms */

static const char usage_text[] =
    "usage: audit idle --agent PREFIX[,PREFIX...] --from T0 --until T1 [-v] LOG\n"
    "       audit reaction --trigger-agent PREFIX --agent PREFIX\n"
    "           [--trigger pod-delete,rs-write] [-n NAMESPACE] [-v] LOG\n"
    "       audit writes --agent PREFIX[,PREFIX...] [-n NAMESPACE] [--from T0]\n"
    "           [--until T1] LOG\n";

enum kind {
	K_OTHER = 0,
	K_POD_CREATE,       /* create pods (no subresource) */
	K_POD_DELETE,       /* delete pods */
	K_RS_WRITE          /* create, update or patch replicasets */
};

/* One finished request. */
struct ev {
	double recv, done;      /* Unix seconds */
	enum kind kind;
	int who;                /* 1: the agent, 2: the trigger agent */
	int code;               /* the answer's HTTP status (0: none) */
	char *verb, *res, *ns, *name;   /* with filter.names only */
};

struct evs {
	struct ev *v;
	size_t n, cap;
};

static void
usage(int code)
{
	fputs(usage_text, code ? stderr : stdout);
	exit(code);
}

static char *
xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (d == NULL)
		rs_fatal(111, "unable to allocate: %s", strerror(ENOMEM));
	return d;
}

static void
push(struct evs *e, const struct ev *x)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 1024;
		struct ev *v = realloc(e->v, cap * sizeof *v);

		if (v == NULL)
			rs_fatal(111, "unable to allocate: %s", strerror(ENOMEM));
		e->v = v;
		e->cap = cap;
	}
	e->v[e->n++] = *x;
}

/* Whether ua starts with one of the comma-separated prefixes. */
static int
agent_match(const char *ua, const char *prefixes)
{
	const char *p = prefixes;

	if (ua == NULL)
		return 0;
	while (*p) {
		size_t n = strcspn(p, ",");

		if (n > 0 && strncmp(ua, p, n) == 0)
			return 1;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static enum kind
kind_of(const char *verb, const char *res, const char *sub)
{
	if (verb == NULL || res == NULL || (sub != NULL && *sub != '\0'))
		return K_OTHER;
	if (strcmp(res, "pods") == 0) {
		if (strcmp(verb, "create") == 0)
			return K_POD_CREATE;
		if (strcmp(verb, "delete") == 0)
			return K_POD_DELETE;
	} else if (strcmp(res, "replicasets") == 0) {
		if (strcmp(verb, "create") == 0 || strcmp(verb, "update") == 0 ||
		    strcmp(verb, "patch") == 0)
			return K_RS_WRITE;
	}
	return K_OTHER;
}

/* What to keep of the log: "who" decides, from the user agent, the verb
 * and the kind, which events to keep (0: none). */
struct filter {
	int (*who)(const struct filter *f, const char *ua, const char *verb,
	    enum kind k);
	const char *agent, *trigger_agent;
	const char *ns;         /* reaction, writes: only this namespace (NULL: all) */
	int triggers;           /* bit per enum kind */
	int names;              /* keep verb, resource, namespace, name */
};

/* Reads LOG, keeps what f->who says. */
static void
read_log(const char *path, const struct filter *f, struct evs *out)
{
	struct rs_line_reader in;
	unsigned long bad = 0, badtime = 0;
	char *line;
	size_t len;
	rs_code rc;
	int fd;

	if (strcmp(path, "-") == 0)
		fd = 0;
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		rs_fatal(111, "unable to open %s: %s", path, strerror(errno));
	if (rs_line_reader_init(&in, fd, 0) != RS_OK)
		rs_fatal(111, "unable to allocate: %s", strerror(ENOMEM));
	while ((rc = rs_line_read(&in, &line, &len)) != RS_EEOF) {
		const char *stage, *ua, *verb, *res, *sub, *t0, *t1;
		cJSON *o = NULL;
		struct ev e;
		enum kind k;
		int who;

		if (rc == RS_ETOOBIG) {
			bad++;
			continue;
		}
		if (rc != RS_OK)
			rs_fatal(111, "unable to read %s: %s", path,
			    rs_strerror(rc));
		if (len == 0)
			continue;
		if (rs_json_parse(line, len, &o, NULL) != RS_OK) {
			bad++;
			continue;
		}
		stage = rs_json_str(o, "stage", NULL);
		ua = rs_json_str(o, "userAgent", NULL);
		verb = rs_json_str(o, "verb", NULL);
		res = rs_json_str(o, "objectRef", "resource", NULL);
		sub = rs_json_str(o, "objectRef", "subresource", NULL);
		k = kind_of(verb, res, sub);
		if (stage == NULL || strcmp(stage, "ResponseComplete") != 0 ||
		    verb == NULL || strcmp(verb, "watch") == 0 ||
		    (who = f->who(f, ua, verb, k)) == 0) {
			cJSON_Delete(o);
			continue;
		}
		memset(&e, 0, sizeof e);
		t0 = rs_json_str(o, "requestReceivedTimestamp", NULL);
		t1 = rs_json_str(o, "stageTimestamp", NULL);
		if (t0 == NULL || t1 == NULL || rs_parse_rfc3339(t0, &e.recv) ||
		    rs_parse_rfc3339(t1, &e.done) || e.done < e.recv) {
			badtime++;
			cJSON_Delete(o);
			continue;
		}
		e.kind = k;
		e.who = who;
		e.code = (int)rs_json_int(o, 0, "responseStatus", "code", NULL);
		if (f->names) {
			e.verb = xstrdup(verb);
			if (sub == NULL || *sub == '\0')
				e.res = xstrdup(res);
			else if (asprintf(&e.res, "%s/%s", res, sub) < 0)
				rs_fatal(111, "unable to allocate: %s",
				    strerror(ENOMEM));
			e.ns = xstrdup(rs_json_str(o, "objectRef", "namespace",
			    NULL));
			e.name = xstrdup(rs_json_str(o, "objectRef", "name",
			    NULL));
		}
		push(out, &e);
		cJSON_Delete(o);
	}
	rs_line_reader_free(&in);
	if (fd != 0)
		close(fd);
	if (bad)
		rs_warn("%lu lines of %s skipped: not JSON", bad, path);
	if (badtime)
		rs_warn("%lu events of %s skipped: timestamps missing or "
		    "unreadable", badtime, path);
}

static int
by_recv(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return x->recv < y->recv ? -1 : x->recv > y->recv;
}

static int
by_done(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return x->done < y->done ? -1 : x->done > y->done;
}

static double
number(const char *s, const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v))
		rs_fatal(100, "unable to read %s: not a number: %s", what, s);
	return v;
}

/* The options of idle and writes: the agents, the window. */
static const struct option window_opts[] = {
	{ "agent", required_argument, NULL, 'a' },
	{ "from", required_argument, NULL, 'f' },
	{ "until", required_argument, NULL, 'u' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* idle */

static int
who_idle(const struct filter *f, const char *ua, const char *verb, enum kind k)
{
	(void)verb;
	(void)k;
	return agent_match(ua, f->agent);
}

struct stretches {
	double idle, max;
	long gaps, batch_gaps;
	double batch;
	double t0;
	int verbose;
};

/* An idle stretch of length len ending at t, between request left and
 * request right (NULL where there is none: the window's ends). */
static void
stretch(struct stretches *s, double len, double t, const struct ev *left,
    const struct ev *right)
{
	if (len <= 0)
		return;
	s->idle += len;
	if (len > s->max)
		s->max = len;
	if (len <= GAP_MIN)
		return;
	s->gaps++;
	if (s->verbose)
		printf("gap_ms %.3f at_ms %.3f after %s %s before %s %s\n",
		    len * 1e3, (t - len - s->t0) * 1e3,
		    left ? left->verb : "-", left ? left->res : "-",
		    right ? right->verb : "-", right ? right->res : "-");
	if (left && left->kind == K_POD_CREATE && right &&
	    right->kind == K_POD_CREATE) {
		s->batch += len;
		s->batch_gaps++;
	}
}

static int
cmd_idle(int argc, char **argv)
{
	struct filter f = { .who = who_idle };
	struct stretches s = { 0 };
	struct evs all = { 0 };
	const char *from = NULL, *until = NULL;
	double t0, t1, end, first;
	const struct ev *last = NULL;
	size_t n = 0;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", window_opts, NULL)) != -1) {
		switch (c) {
		case 'a': f.agent = optarg; break;
		case 'f': from = optarg; break;
		case 'u': until = optarg; break;
		case 'v': s.verbose = f.names = 1; break;
		case 'h': usage(0); break;
		default: usage(100);
		}
	}
	if (f.agent == NULL || *f.agent == '\0' || from == NULL ||
	    until == NULL || optind != argc - 1)
		usage(100);
	t0 = number(from, "--from");
	t1 = number(until, "--until");
	if (t1 < t0)
		rs_fatal(100, "unable to use the window: --until %s is before "
		    "--from %s", until, from);
	s.t0 = t0;
	read_log(argv[optind], &f, &all);
	qsort(all.v, all.n, sizeof *all.v, by_recv);
	/* a sweep by start: end is the end of the busy block so far, last
	 * the kind of the request that ends it */
	end = t0;
	first = t1;
	for (size_t i = 0; i < all.n; i++) {
		struct ev *e = &all.v[i];
		double a = e->recv < t0 ? t0 : e->recv;
		double b = e->done > t1 ? t1 : e->done;

		if (e->done < t0 || e->recv > t1)
			continue;
		if (n++ == 0)
			first = a;
		if (a > end) {
			stretch(&s, a - end, a, last, e);
			end = b;
			last = e;
		} else if (b > end) {
			end = b;
			last = e;
		}
	}
	stretch(&s, t1 - end, t1, last, NULL);
	printf("window_s %.6f\n", t1 - t0);
	printf("busy_s %.6f\n", t1 - t0 - s.idle);
	printf("idle_s %.6f\n", s.idle);
	printf("requests %zu\n", n);
	printf("gaps %ld\n", s.gaps);
	printf("max_gap_s %.6f\n", s.max);
	printf("first_s %.6f\n", first - t0);
	printf("batch_gap_s %.6f\n", s.batch);
	printf("batch_gaps %ld\n", s.batch_gaps);
	free(all.v);
	return 0;
}

/* reaction */

static int
who_reaction(const struct filter *f, const char *ua, const char *verb,
    enum kind k)
{
	(void)verb;
	if (k == K_OTHER)
		return 0;
	if (k == K_POD_CREATE && agent_match(ua, f->agent))
		return 1;
	if ((f->triggers & 1 << k) && agent_match(ua, f->trigger_agent))
		return 2;
	return 0;
}

static int
ptr_by_recv(const void *a, const void *b)
{
	return by_recv(*(const struct ev *const *)a, *(const struct ev *const *)b);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least p% of them at or below. */
static double
rank(const double *v, size_t n, double p)
{
	size_t k = (size_t)ceil(p / 100 * (double)n);

	return v[k > 0 ? k - 1 : 0];
}

static int
parse_triggers(const char *s)
{
	int t = 0;

	while (*s) {
		size_t n = strcspn(s, ",");

		if (n == 10 && strncmp(s, "pod-delete", n) == 0)
			t |= 1 << K_POD_DELETE;
		else if (n == 8 && strncmp(s, "rs-write", n) == 0)
			t |= 1 << K_RS_WRITE;
		else
			rs_fatal(100, "unable to read --trigger: unknown kind "
			    "%.*s (pod-delete, rs-write)", (int)n, s);
		s += n;
		if (*s == ',')
			s++;
	}
	return t;
}

static int
cmd_reaction(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "trigger-agent", required_argument, NULL, 't' },
		{ "agent", required_argument, NULL, 'a' },
		{ "trigger", required_argument, NULL, 'k' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct filter f = { .who = who_reaction, .names = 1,
	    .triggers = 1 << K_POD_DELETE | 1 << K_RS_WRITE };
	struct evs all = { 0 };
	struct ev **posts, **trig;
	size_t np = 0, nt = 0, nlat = 0;
	double *lat, *slat;
	int c, verbose = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "n:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'n': f.ns = optarg; break;
		case 't': f.trigger_agent = optarg; break;
		case 'a': f.agent = optarg; break;
		case 'k': f.triggers = parse_triggers(optarg); break;
		case 'v': verbose = 1; break;
		case 'h': usage(0); break;
		default: usage(100);
		}
	}
	if (f.agent == NULL || *f.agent == '\0' || f.trigger_agent == NULL ||
	    *f.trigger_agent == '\0' || f.triggers == 0 || optind != argc - 1)
		usage(100);
	read_log(argv[optind], &f, &all);
	/* triggers in the order they were done, pod creates in the order
	 * they were received */
	qsort(all.v, all.n, sizeof *all.v, by_done);
	posts = calloc(all.n + 1, sizeof *posts);
	trig = calloc(all.n + 1, sizeof *trig);
	lat = calloc(all.n + 1, sizeof *lat);
	slat = calloc(all.n + 1, sizeof *slat);
	if (posts == NULL || trig == NULL || lat == NULL || slat == NULL)
		rs_fatal(111, "unable to allocate: %s", strerror(ENOMEM));
	for (size_t i = 0; i < all.n; i++) {
		if (f.ns != NULL && strcmp(all.v[i].ns, f.ns) != 0)
			continue;
		if (all.v[i].who == 1)
			posts[np++] = &all.v[i];
		else
			trig[nt++] = &all.v[i];
	}
	qsort(posts, np, sizeof *posts, ptr_by_recv);
	for (size_t i = 0; i < nt; i++) {
		const struct ev *t = trig[i], *p = NULL;
		size_t lo_ = 0, hi = np;

		/* the first pod create received at or after the trigger was
		 * (not after it was done: the controller may hear of the
		 * write before the writer has its answer) */
		while (lo_ < hi) {
			size_t mid = lo_ + (hi - lo_) / 2;

			if (posts[mid]->recv < t->recv)
				lo_ = mid + 1;
			else
				hi = mid;
		}
		for (size_t j = lo_; j < np && p == NULL; j++)
			if (strcmp(posts[j]->ns, t->ns) == 0)
				p = posts[j];
		if (p != NULL) {
			lat[nlat] = (p->recv - t->done) * 1000;
			slat[nlat++] = (p->recv - t->recv) * 1000;
		}
		if (verbose) {
			if (p != NULL)
				printf("lat_ms %.3f start_ms %.3f", lat[nlat - 1],
				    slat[nlat - 1]);
			else
				printf("lat_ms NA start_ms NA");
			printf(" %s %s %s/%s\n", t->verb, t->res, t->ns, t->name);
		}
	}
	printf("count %zu\nunmatched %zu\n", nlat, nt - nlat);
	if (nlat > 0) {
		qsort(lat, nlat, sizeof *lat, cmp_double);
		qsort(slat, nlat, sizeof *slat, cmp_double);
		printf("p50_ms %.3f\np99_ms %.3f\nmax_ms %.3f\n",
		    rank(lat, nlat, 50), rank(lat, nlat, 99), lat[nlat - 1]);
		printf("start_p50_ms %.3f\nstart_p99_ms %.3f\n"
		    "start_max_ms %.3f\n", rank(slat, nlat, 50),
		    rank(slat, nlat, 99), slat[nlat - 1]);
	} else {
		printf("p50_ms NA\np99_ms NA\nmax_ms NA\n");
		printf("start_p50_ms NA\nstart_p99_ms NA\nstart_max_ms NA\n");
	}
	for (size_t i = 0; i < all.n; i++) {
		free(all.v[i].verb);
		free(all.v[i].res);
		free(all.v[i].ns);
		free(all.v[i].name);
	}
	free(all.v);
	free(posts);
	free(trig);
	free(lat);
	free(slat);
	return 0;
}

/* writes */

static int
cmd_writes(int argc, char **argv)
{
	struct filter f = { .who = who_idle, .names = 1 };
	struct evs all = { 0 };
	double t0 = -HUGE_VAL, t1 = HUGE_VAL;
	long creates = 0, deletes = 0, rejected = 0, throttled = 0;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "n:h", window_opts, NULL)) != -1) {
		switch (c) {
		case 'a': f.agent = optarg; break;
		case 'n': f.ns = optarg; break;
		case 'f': t0 = number(optarg, "--from"); break;
		case 'u': t1 = number(optarg, "--until"); break;
		case 'h': usage(0); break;
		default: usage(100);
		}
	}
	if (f.agent == NULL || *f.agent == '\0' || optind != argc - 1)
		usage(100);
	read_log(argv[optind], &f, &all);
	for (size_t i = 0; i < all.n; i++) {
		struct ev *e = &all.v[i];
		int ok = e->code >= 200 && e->code < 300;

		if (e->done >= t0 && e->done <= t1) {
			throttled += e->code == 429;
			if ((e->kind == K_POD_CREATE || e->kind == K_POD_DELETE) &&
			    (f.ns == NULL || strcmp(e->ns, f.ns) == 0)) {
				if (!ok)
					rejected++;
				else if (e->kind == K_POD_CREATE)
					creates++;
				else
					deletes++;
			}
		}
		free(e->verb);
		free(e->res);
		free(e->ns);
		free(e->name);
	}
	printf("creates %ld\ndeletes %ld\nrejected %ld\nthrottled %ld\n",
	    creates, deletes, rejected, throttled);
	free(all.v);
	return 0;
}

int
main(int argc, char **argv)
{
	rs_log_init("audit");
	if (argc < 2)
		usage(100);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
		usage(0);
	if (strcmp(argv[1], "idle") == 0)
		return cmd_idle(argc - 1, argv + 1);
	if (strcmp(argv[1], "reaction") == 0)
		return cmd_reaction(argc - 1, argv + 1);
	if (strcmp(argv[1], "writes") == 0)
		return cmd_writes(argc - 1, argv + 1);
	usage(100);
}
