/* scrape.c: the /metrics body. The work-queue families from rs-queue's
 * STATS, the shard file's, rs-metrics' own view of the stages, then every family of every
 * stats file. A family is written as one group (HELP, TYPE, samples) even
 * when several stages report it, as the text format requires; what does
 * not validate (names, labels, values, a type differing between stages)
 * is left out, so one bad file cannot spoil the scrape. */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "prom.h"
#include "rsm.h"

#define LABELS_MAX 16

/* One family of one stage. */
struct ref {
	const char *name, *type, *help;
	const cJSON *fam;
	size_t stage;                  /* index in the sorted stages */
};

static void
queue_families(FILE *f, const struct rsm_opts *o)
{
	char why[256];
	char *json = rsm_queue_stats(o->queue, RSM_QUEUE_TIMEOUT_MS, why,
	    sizeof why);
	int up = 0;

	if (json != NULL)
		up = rs_prom_workqueue(f, json, strlen(json)) == 0;
	else
		rs_info(2, "no work-queue metrics: %s", why);
	free(json);
	rs_prom_head(f, "rs_queue_up", "gauge",
	    "1 when rs-queue answered STATS for this scrape.");
	rs_prom_sample(f, "rs_queue_up", NULL, NULL, 0, up);
}

static void
stage_families(FILE *f, const struct rsm_stages *st)
{
	struct rs_prom_label l = { "stage", NULL };
	size_t i;
	int heads = 0;

	if (st->n > 0)
		rs_prom_head(f, "rs_stage_stats_age_seconds", "gauge",
		    "Seconds since the stage last wrote its stats file.");
	for (i = 0; i < st->n; i++) {
		l.value = st->v[i].name;
		rs_prom_sample(f, "rs_stage_stats_age_seconds", NULL, &l, 1,
		    st->v[i].age);
	}
	for (i = 0; i < st->n; i++) {
		const cJSON *t;

		if (st->v[i].json == NULL)
			continue;
		t = cJSON_GetObjectItemCaseSensitive(st->v[i].json,
		    "start_time");
		if (!cJSON_IsNumber(t))
			continue;
		if (!heads++)
			rs_prom_head(f, "rs_stage_start_time_seconds", "gauge",
			    "Start time of the stage's process, seconds since "
			    "the epoch.");
		l.value = st->v[i].name;
		rs_prom_sample(f, "rs_stage_start_time_seconds", NULL, &l, 1,
		    t->valuedouble);
	}
}

/* Names rs-metrics writes itself; a stage may not report them. */
static int
reserved(const char *name)
{
	return strncmp(name, "workqueue_", 10) == 0 ||
	    strncmp(name, "rs_stage_", 9) == 0 ||
	    strncmp(name, "rs_shard_bucket", 15) == 0 ||
	    strcmp(name, "rs_shard_rebalances_total") == 0 ||
	    strcmp(name, "rs_queue_up") == 0;
}

static size_t
labels(const cJSON *s, struct rs_prom_label *l, int histogram)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(s, "labels"), *v;
	size_t n = 0;

	if (o != NULL && !cJSON_IsObject(o))
		return (size_t)-1;
	cJSON_ArrayForEach(v, o) {
		if (n == LABELS_MAX || !cJSON_IsString(v) ||
		    !rs_prom_label_ok(v->string) ||
		    (histogram && strcmp(v->string, "le") == 0))
			return (size_t)-1;
		l[n].name = v->string;
		l[n].value = v->valuestring;
		n++;
	}
	return n;
}

static int
histogram_ok(const cJSON *s)
{
	const cJSON *le = cJSON_GetObjectItemCaseSensitive(s, "le");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(s, "counts"), *v;

	if (!cJSON_IsArray(le) || !cJSON_IsArray(c) ||
	    cJSON_GetArraySize(le) != cJSON_GetArraySize(c) ||
	    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(s, "sum")) ||
	    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(s, "count")))
		return 0;
	cJSON_ArrayForEach(v, le)
		if (!cJSON_IsNumber(v))
			return 0;
	cJSON_ArrayForEach(v, c)
		if (!cJSON_IsNumber(v))
			return 0;
	return 1;
}

/* The samples of one stage's family; returns how many were written. */
static size_t
samples(FILE *f, const struct ref *r)
{
	int histogram = strcmp(r->type, "histogram") == 0;
	struct rs_prom_label l[LABELS_MAX];
	const cJSON *s, *v;
	size_t n, written = 0;

	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(r->fam,
	    "samples")) {
		if ((n = labels(s, l, histogram)) == (size_t)-1)
			continue;
		if (histogram) {
			if (!histogram_ok(s))
				continue;
			rs_prom_histogram(f, r->name, l, n, s);
		} else {
			v = cJSON_GetObjectItemCaseSensitive(s, "value");
			if (!cJSON_IsNumber(v))
				continue;
			rs_prom_sample(f, r->name, NULL, l, n, v->valuedouble);
		}
		written++;
	}
	return written;
}

static int
by_name(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->stage < y->stage ? -1 : x->stage > y->stage;
}

static size_t
collect(const struct rsm_stages *st, struct ref **out)
{
	struct ref *v = NULL, *nv;
	size_t n = 0, cap = 0, i;
	const cJSON *fam;

	for (i = 0; i < st->n; i++) {
		if (st->v[i].json == NULL)
			continue;
		cJSON_ArrayForEach(fam, cJSON_GetObjectItemCaseSensitive(
		    st->v[i].json, "families")) {
			struct ref r = {
				.name = rs_json_str(fam, "name", NULL),
				.type = rs_json_str(fam, "type", NULL),
				.help = rs_json_str(fam, "help", NULL),
				.fam = fam, .stage = i,
			};

			if (!rs_prom_name_ok(r.name) ||
			    !rs_prom_type_ok(r.type) || reserved(r.name)) {
				rs_info(1, "stage %s: family %.64s left out",
				    st->v[i].name, r.name ? r.name : "?");
				continue;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 32;
				if ((nv = realloc(v, cap * sizeof *v)) == NULL)
					goto out;
				v = nv;
			}
			v[n++] = r;
		}
	}
out:
	if (n > 1)
		qsort(v, n, sizeof *v, by_name);
	*out = v;
	return n;
}

/* One family, all stages: the samples go to a buffer first, so that a
 * family with none left is not announced. */
static void
group(FILE *f, const struct ref *r, size_t n, const struct rsm_stages *st)
{
	char *buf = NULL;
	size_t len = 0, i, written = 0;
	FILE *m = open_memstream(&buf, &len);

	if (m == NULL)
		return;
	for (i = 0; i < n; i++) {
		if (strcmp(r[i].type, r[0].type) != 0) {
			rs_info(1, "stage %s: %s is a %s, not a %s: left out",
			    st->v[r[i].stage].name, r[i].name, r[i].type,
			    r[0].type);
			continue;
		}
		written += samples(m, &r[i]);
	}
	if (fclose(m) == 0 && written > 0) {
		rs_prom_head(f, r[0].name, r[0].type, r[0].help);
		fwrite(buf, 1, len, f);
	}
	free(buf);
}

void
rsm_scrape(FILE *f, const struct rsm_opts *o)
{
	struct rsm_stages st;
	struct ref *refs;
	size_t n, i, j;

	queue_families(f, o);
	rsm_shard(f, o->shard_file);
	rsm_stages_load(o->stats_dir, &st);
	stage_families(f, &st);
	n = collect(&st, &refs);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && strcmp(refs[j].name, refs[i].name) == 0;
		    j++)
			;
		group(f, &refs[i], j - i, &st);
	}
	free(refs);
	rsm_stages_free(&st);
}
