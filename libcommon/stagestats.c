/* stagestats.c: a stage's figures in $RS_STATE_DIR/stats/<stage>.json.
 * One process-wide set under one mutex: the API client's threads count
 * requests into it, the stage's loop sets its own figures and writes. The
 * write (a few KiB to tmpfs, once a second) happens under the mutex too:
 * simpler than a second lock, and a thread waits for it microseconds. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "prom.h"
#include "stagestats.h"
#include "statedir.h"

#define STAGE_MAX 32

struct family {
	char *name, *help;
	enum rs_stat_type type;
	double *bounds;
	size_t nbounds;
};

struct sample {
	size_t fam;
	char labels[RS_STAGESTATS_LABELS_MAX];
	double value;                  /* counters, gauges */
	uint64_t *n;                   /* histograms: per bucket, +Inf last */
	uint64_t count;
	double sum;
};

static struct {
	pthread_mutex_t mu;
	int open;
	char stage[STAGE_MAX + 1];
	char *dir, *path;
	double start;                  /* wall clock at open */
	int64_t last;                  /* monotonic ns of the last write */
	struct family fam[RS_STAGESTATS_FAMILIES];
	size_t nfam;
	struct sample *smp;
	size_t nsmp;
	int warned;
} st = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* client-go's buckets for rest_client_request_duration_seconds. */
static const double rest_bounds[] = {
	0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60,
};

/* The latency buckets: see stagestats.h. */
static const double latency_bounds[] = {
	1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3,
	0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50,
};

static int
stage_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > STAGE_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/* "a=x,b=y": every name a label name (not le), every value free of
 * commas by construction; "" is no label. */
static int
labels_ok(const char *l)
{
	char name[RS_STAGESTATS_LABELS_MAX];
	const char *p = l, *eq, *end;

	if (strlen(l) >= RS_STAGESTATS_LABELS_MAX)
		return 0;
	while (*p) {
		end = strchr(p, ',');
		if (end == NULL)
			end = p + strlen(p);
		eq = memchr(p, '=', end - p);
		if (eq == NULL || eq == p)
			return 0;
		memcpy(name, p, eq - p);
		name[eq - p] = '\0';
		if (!rs_prom_label_ok(name) || strcmp(name, "le") == 0)
			return 0;
		p = *end ? end + 1 : end;
	}
	return 1;
}

static struct family *
family_find(const char *name, size_t *idx)
{
	size_t i;

	for (i = 0; i < st.nfam; i++)
		if (strcmp(st.fam[i].name, name) == 0) {
			if (idx)
				*idx = i;
			return &st.fam[i];
		}
	return NULL;
}

static rs_code
declare_locked(const char *name, enum rs_stat_type type, const char *help,
    const double *bounds, size_t nb)
{
	struct family *f = family_find(name, NULL);

	if (f)
		return f->type == type ? RS_OK : RS_EUSAGE;
	if (!rs_prom_name_ok(name) || (type == RS_STAT_HISTOGRAM && nb == 0))
		return RS_EUSAGE;
	if (st.nfam == RS_STAGESTATS_FAMILIES)
		return RS_EFULL;
	f = &st.fam[st.nfam];
	memset(f, 0, sizeof *f);
	f->type = type;
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	if (type == RS_STAT_HISTOGRAM) {
		f->bounds = malloc(nb * sizeof *f->bounds);
		if (f->bounds)
			memcpy(f->bounds, bounds, nb * sizeof *f->bounds);
		f->nbounds = nb;
	}
	if (f->name == NULL || f->help == NULL ||
	    (type == RS_STAT_HISTOGRAM && f->bounds == NULL)) {
		free(f->name);
		free(f->help);
		free(f->bounds);
		return RS_ENOMEM;
	}
	st.nfam++;
	return RS_OK;
}

/* The sample of family name with labels, made if missing; NULL when the
 * family is unknown or of another kind, the labels bad, or no room. */
static struct sample *
sample_get(const char *name, const char *labels, int histogram)
{
	struct family *f;
	struct sample *s;
	size_t fi, i;

	if (!st.open || (f = family_find(name, &fi)) == NULL ||
	    (f->type == RS_STAT_HISTOGRAM) != histogram)
		return NULL;
	if (labels == NULL)
		labels = "";
	for (i = 0; i < st.nsmp; i++)
		if (st.smp[i].fam == fi && strcmp(st.smp[i].labels, labels) == 0)
			return &st.smp[i];
	if (st.nsmp == RS_STAGESTATS_SAMPLES || !labels_ok(labels))
		return NULL;
	if (st.smp == NULL &&
	    (st.smp = calloc(RS_STAGESTATS_SAMPLES, sizeof *st.smp)) == NULL)
		return NULL;
	s = &st.smp[st.nsmp];
	memset(s, 0, sizeof *s);
	if (histogram &&
	    (s->n = calloc(f->nbounds + 1, sizeof *s->n)) == NULL)
		return NULL;
	s->fam = fi;
	strcpy(s->labels, labels);
	st.nsmp++;
	return s;
}

static void
observe_locked(const char *name, const char *labels, double v)
{
	struct sample *s = sample_get(name, labels, 1);
	const struct family *f;
	size_t i;

	if (s == NULL)
		return;
	f = &st.fam[s->fam];
	for (i = 0; i < f->nbounds && v > f->bounds[i]; i++)
		;
	s->n[i]++;
	s->count++;
	s->sum += v;
}

static void
add_locked(const char *name, const char *labels, double delta)
{
	struct sample *s = sample_get(name, labels, 0);

	if (s)
		s->value += delta;
}

rs_code
rs_stagestats_declare(const char *name, enum rs_stat_type type,
    const char *help, const double *bounds, size_t nbounds)
{
	rs_code rc;

	pthread_mutex_lock(&st.mu);
	rc = declare_locked(name, type, help, bounds, nbounds);
	pthread_mutex_unlock(&st.mu);
	return rc;
}

void
rs_stagestats_set(const char *name, const char *labels, double v)
{
	struct sample *s;

	pthread_mutex_lock(&st.mu);
	if ((s = sample_get(name, labels, 0)) != NULL)
		s->value = v;
	pthread_mutex_unlock(&st.mu);
}

void
rs_stagestats_add(const char *name, const char *labels, double delta)
{
	pthread_mutex_lock(&st.mu);
	add_locked(name, labels, delta);
	pthread_mutex_unlock(&st.mu);
}

void
rs_stagestats_observe(const char *name, const char *labels, double v)
{
	pthread_mutex_lock(&st.mu);
	observe_locked(name, labels, v);
	pthread_mutex_unlock(&st.mu);
}

rs_code
rs_stagestats_declare_latency(const char *name, const char *help)
{
	return rs_stagestats_declare(name, RS_STAT_HISTOGRAM, help,
	    latency_bounds, sizeof latency_bounds / sizeof latency_bounds[0]);
}

void
rs_stagestats_observe_since(const char *name, const char *labels, double at,
    double now)
{
	if (!(at > 0))
		return;
	rs_stagestats_observe(name, labels, now > at ? now - at : 0);
}

/* host[:port] of a URL, as client-go labels requests (u.Host). */
static void
url_host(const char *url, char *host, size_t len)
{
	const char *p, *at;
	size_t n;

	if (url == NULL || *url == '\0') {
		snprintf(host, len, "none");
		return;
	}
	p = strstr(url, "://");
	p = p ? p + 3 : url;
	n = strcspn(p, "/?#");
	if ((at = memchr(p, '@', n)) != NULL) {
		n -= at + 1 - p;
		p = at + 1;
	}
	/* a comma would cut the label string; no host has one */
	if (strcspn(p, ",") < n)
		n = strcspn(p, ",");
	snprintf(host, len, "%.*s", (int)n, p);
}

void
rs_stagestats_request(const char *server, const char *method, long code,
    double seconds)
{
	char host[128], labels[RS_STAGESTATS_LABELS_MAX], codes[24];

	pthread_mutex_lock(&st.mu);
	if (!st.open)
		goto out;
	if (declare_locked("rest_client_requests_total", RS_STAT_COUNTER,
	    "Number of HTTP requests, partitioned by status code, method, "
	    "and host.", NULL, 0) != RS_OK ||
	    declare_locked("rest_client_request_duration_seconds",
	    RS_STAT_HISTOGRAM, "Request latency in seconds. Broken down by "
	    "verb, and host.", rest_bounds,
	    sizeof rest_bounds / sizeof rest_bounds[0]) != RS_OK)
		goto out;
	url_host(server, host, sizeof host);
	if (code > 0)
		snprintf(codes, sizeof codes, "%ld", code);
	else
		snprintf(codes, sizeof codes, "<error>");
	snprintf(labels, sizeof labels, "code=%s,method=%s,host=%s,stage=%s",
	    codes, method, host, st.stage);
	add_locked("rest_client_requests_total", labels, 1);
	if (seconds >= 0) {
		snprintf(labels, sizeof labels, "verb=%s,host=%s,stage=%s",
		    method, host, st.stage);
		observe_locked("rest_client_request_duration_seconds", labels,
		    seconds);
	}
out:
	pthread_mutex_unlock(&st.mu);
}

static cJSON *
labels_json(const char *l)
{
	cJSON *o = cJSON_CreateObject();
	char buf[RS_STAGESTATS_LABELS_MAX], *p, *pair, *eq;

	if (o == NULL)
		return NULL;
	snprintf(buf, sizeof buf, "%s", l);
	for (p = buf; (pair = strsep(&p, ",")) != NULL; ) {
		if (*pair == '\0' || (eq = strchr(pair, '=')) == NULL)
			continue;
		*eq = '\0';
		cJSON_AddStringToObject(o, pair, eq + 1);
	}
	return o;
}

static cJSON *
hist_json(cJSON *o, const struct family *f, const struct sample *s)
{
	cJSON *le = cJSON_AddArrayToObject(o, "le");
	cJSON *counts = cJSON_AddArrayToObject(o, "counts");
	uint64_t acc = 0;
	size_t i;

	if (le == NULL || counts == NULL)
		return NULL;
	/* cumulative, as Prometheus reports buckets */
	for (i = 0; i < f->nbounds; i++) {
		acc += s->n[i];
		cJSON_AddItemToArray(le, cJSON_CreateNumber(f->bounds[i]));
		cJSON_AddItemToArray(counts, cJSON_CreateNumber((double)acc));
	}
	cJSON_AddNumberToObject(o, "sum", s->sum);
	cJSON_AddNumberToObject(o, "count", (double)s->count);
	return o;
}

static const char *
type_name(enum rs_stat_type t)
{
	return t == RS_STAT_COUNTER ? "counter" :
	    t == RS_STAT_GAUGE ? "gauge" : "histogram";
}

static cJSON *
family_json(size_t fi)
{
	const struct family *f = &st.fam[fi];
	cJSON *o = cJSON_CreateObject(), *samples, *s;
	size_t i;

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "name", f->name);
	cJSON_AddStringToObject(o, "type", type_name(f->type));
	cJSON_AddStringToObject(o, "help", f->help);
	samples = cJSON_AddArrayToObject(o, "samples");
	for (i = 0; samples && i < st.nsmp; i++) {
		if (st.smp[i].fam != fi)
			continue;
		s = cJSON_CreateObject();
		cJSON_AddItemToArray(samples, s);
		cJSON_AddItemToObject(s, "labels", labels_json(st.smp[i].labels));
		if (f->type == RS_STAT_HISTOGRAM)
			hist_json(s, f, &st.smp[i]);
		else
			cJSON_AddNumberToObject(s, "value", st.smp[i].value);
	}
	return o;
}

static char *
render(void)
{
	cJSON *o = cJSON_CreateObject(), *fams;
	char *text;
	size_t i;

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "stage", st.stage);
	cJSON_AddNumberToObject(o, "pid", (double)getpid());
	cJSON_AddNumberToObject(o, "time", rs_wall_now());
	cJSON_AddNumberToObject(o, "start_time", st.start);
	fams = cJSON_AddArrayToObject(o, "families");
	for (i = 0; fams && i < st.nfam; i++)
		cJSON_AddItemToArray(fams, family_json(i));
	/* cJSON leaves out what it could not allocate: check the whole */
	text = cJSON_GetArraySize(fams) == (int)st.nfam ?
	    rs_json_print(o) : NULL;
	cJSON_Delete(o);
	return text;
}

static int
write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A temporary file beside the real one, renamed over it. */
static rs_code
replace_file(const char *text)
{
	char tmp[4096];
	int fd, e;

	if ((size_t)snprintf(tmp, sizeof tmp, "%s/.%s.json.XXXXXX", st.dir,
	    st.stage) >= sizeof tmp) {
		errno = ENAMETOOLONG;
		return RS_EIO;
	}
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		return RS_EIO;
	if (fchmod(fd, 0600) < 0 || write_all(fd, text, strlen(text)) < 0 ||
	    write_all(fd, "\n", 1) < 0) {
		e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return RS_EIO;
	}
	if (close(fd) < 0 || rename(tmp, st.path) < 0) {
		e = errno;
		unlink(tmp);
		errno = e;
		return RS_EIO;
	}
	return RS_OK;
}

static rs_code
write_locked(int64_t now_ns)
{
	char *text;
	rs_code rc;

	st.last = now_ns;
	if ((text = render()) == NULL) {
		rc = RS_ENOMEM;
		errno = ENOMEM;
	} else {
		rc = replace_file(text);
		cJSON_free(text);
	}
	if (rc != RS_OK && !st.warned) {
		rs_warn("unable to write stats %s: %s", st.path,
		    strerror(errno));
		st.warned = 1;
	} else if (rc == RS_OK) {
		st.warned = 0;
	}
	return rc;
}

rs_code
rs_stagestats_write(int64_t now_ns)
{
	rs_code rc = RS_OK;

	pthread_mutex_lock(&st.mu);
	if (st.open)
		rc = write_locked(now_ns);
	pthread_mutex_unlock(&st.mu);
	return rc;
}

static int
due_locked(int64_t now_ns)
{
	return st.open && now_ns - st.last >= RS_STAGESTATS_INTERVAL_NS;
}

int
rs_stagestats_due(int64_t now_ns)
{
	int d;

	pthread_mutex_lock(&st.mu);
	d = due_locked(now_ns);
	pthread_mutex_unlock(&st.mu);
	return d;
}

int
rs_stagestats_flush(int64_t now_ns)
{
	int r = 0;

	pthread_mutex_lock(&st.mu);
	if (due_locked(now_ns))
		r = write_locked(now_ns) == RS_OK ? 1 : -1;
	pthread_mutex_unlock(&st.mu);
	return r;
}

int
rs_stagestats_timeout_ms(int64_t now_ns)
{
	int64_t left;
	int ms = -1;

	pthread_mutex_lock(&st.mu);
	if (st.open) {
		left = st.last + RS_STAGESTATS_INTERVAL_NS - now_ns;
		/* round up: waking a little early only loops once more */
		ms = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
	}
	pthread_mutex_unlock(&st.mu);
	return ms;
}

const char *
rs_stagestats_path(void)
{
	const char *p;

	pthread_mutex_lock(&st.mu);
	p = st.open ? st.path : NULL;
	pthread_mutex_unlock(&st.mu);
	return p;
}

static void
forget_locked(void)
{
	size_t i;

	for (i = 0; i < st.nsmp; i++)
		free(st.smp[i].n);
	free(st.smp);
	for (i = 0; i < st.nfam; i++) {
		free(st.fam[i].name);
		free(st.fam[i].help);
		free(st.fam[i].bounds);
	}
	free(st.dir);
	free(st.path);
	st.smp = NULL;
	st.nsmp = st.nfam = 0;
	st.dir = st.path = NULL;
	st.open = 0;
	st.warned = 0;
}

rs_code
rs_stagestats_open(const char *stage)
{
	char *dir, *path = NULL;
	rs_code rc;

	if (stage == NULL || !stage_ok(stage))
		return RS_EUSAGE;
	if ((dir = rs_state_path("stats")) == NULL ||
	    asprintf(&path, "%s/%s.json", dir, stage) < 0) {
		free(dir);
		return RS_ENOMEM;
	}
	/* the state directory, then stats/ in it, both 0700 and ours */
	rc = rs_state_prepare_parent(dir);
	if (rc == RS_OK)
		rc = rs_state_prepare_parent(path);
	if (rc != RS_OK) {
		free(dir);
		free(path);
		return rc;
	}
	pthread_mutex_lock(&st.mu);
	if (st.open) {
		pthread_mutex_unlock(&st.mu);
		free(dir);
		free(path);
		return RS_EUSAGE;
	}
	st.open = 1;
	snprintf(st.stage, sizeof st.stage, "%s", stage);
	st.dir = dir;
	st.path = path;
	st.start = rs_wall_now();
	rc = write_locked(rs_mono_ns());
	if (rc != RS_OK)
		forget_locked();
	pthread_mutex_unlock(&st.mu);
	return rc;
}

void
rs_stagestats_close(void)
{
	pthread_mutex_lock(&st.mu);
	if (st.open) {
		(void)write_locked(rs_mono_ns());
		forget_locked();
	}
	pthread_mutex_unlock(&st.mu);
}
