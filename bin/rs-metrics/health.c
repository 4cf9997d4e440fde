/* health.c: /healthz and /readyz, in the shape of the Kubernetes
 * components' endpoints: "ok" when every check passes, else one line per
 * check ("[+]name ok", "[-]name failed: reason") and a verdict. The
 * reasons are shown: the endpoint listens on loopback by default and they
 * name no secret.
 *
 * healthz: ping; queue (rs-queue answers STATS and is not shutting down);
 * one check per required stage (its stats file written within --stale).
 * readyz: the same, plus synced (every rs_sync_synced sample is 1, and
 * there is at least one: rs-sync read SYNCED for each resource) and
 * takeover (no rs_sync_takeover_warnings_total sample above 0: no other
 * controller was seen creating pods for ours since rs-sync started). */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "rsm.h"

struct report {
	FILE *f;                       /* the lines, written as we go */
	int failed;
};

static void
check(struct report *r, const char *name, const char *why)
{
	if (why == NULL) {
		fprintf(r->f, "[+]%s ok\n", name);
		return;
	}
	fprintf(r->f, "[-]%s failed: %s\n", name, why);
	r->failed = 1;
}

static void
check_queue(struct report *r, const struct rsm_opts *o)
{
	char why[256];
	char *json = rsm_queue_stats(o->queue, RSM_QUEUE_TIMEOUT_MS, why,
	    sizeof why);
	cJSON *s = NULL;

	if (json == NULL) {
		check(r, "queue", why);
		return;
	}
	if (rs_json_parse(json, strlen(json), &s, NULL) != RS_OK)
		check(r, "queue", "rs-queue's STATS is not JSON");
	else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s,
	    "shutting_down")))
		check(r, "queue", "rs-queue is shutting down");
	else
		check(r, "queue", NULL);
	if (s != NULL)
		cJSON_Delete(s);
	free(json);
}

static void
check_stage(struct report *r, const struct rsm_opts *o,
    const struct rsm_stages *st, const char *name)
{
	const struct rsm_stage *s = rsm_stage_find(st, name);
	char label[96], why[256];

	snprintf(label, sizeof label, "stage %s", name);
	if (s == NULL) {
		snprintf(why, sizeof why, "no stats file %s/%s.json",
		    o->stats_dir, name);
		check(r, label, why);
	} else if (s->json == NULL) {
		snprintf(why, sizeof why, "unreadable stats: %s", s->err);
		check(r, label, why);
	} else if (s->age > o->stale) {
		snprintf(why, sizeof why, "stats written %.1f s ago (limit "
		    "%g s): the stage is gone or stuck", s->age, o->stale);
		check(r, label, why);
	} else {
		check(r, label, NULL);
	}
}

typedef void (*sample_fn)(void *arg, const cJSON *sample);

/* Calls fn for every sample of the family name, of every stage. */
static void
each_sample(const struct rsm_stages *st, const char *name, sample_fn fn,
    void *arg)
{
	const cJSON *fam, *s;
	size_t i;

	for (i = 0; i < st->n; i++)
		cJSON_ArrayForEach(fam, cJSON_GetObjectItemCaseSensitive(
		    st->v[i].json, "families")) {
			const char *n = rs_json_str(fam, "name", NULL);

			if (n == NULL || strcmp(n, name) != 0)
				continue;
			cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(
			    fam, "samples"))
				fn(arg, s);
		}
}

static double
sample_value(const cJSON *s)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, "value");

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

struct unsynced {
	size_t n;                      /* samples seen */
	char why[256];                 /* the resources not synced */
};

static void
note_unsynced(void *arg, const cJSON *s)
{
	struct unsynced *u = arg;
	const char *res = rs_json_str(s, "labels", "resource", NULL);
	size_t len = strlen(u->why);

	u->n++;
	if (sample_value(s) == 1)
		return;
	snprintf(u->why + len, sizeof u->why - len, "%s%s", len ? ", " : "",
	    res ? res : "?");
}

/* Every rs_sync_synced sample of every stage. */
static void
check_synced(struct report *r, const struct rsm_stages *st)
{
	struct unsynced u = { 0, "" };
	size_t len;

	each_sample(st, "rs_sync_synced", note_unsynced, &u);
	if (u.n == 0) {
		check(r, "synced", "no stage reports rs_sync_synced yet");
	} else if (u.why[0]) {
		len = strlen(u.why);
		snprintf(u.why + len, sizeof u.why - len, " not synced");
		check(r, "synced", u.why);
	} else {
		check(r, "synced", NULL);
	}
}

static void
add_value(void *arg, const cJSON *s)
{
	*(double *)arg += sample_value(s);
}

/* The take-over guard's warnings (rs-sync(1)): another controller of
 * ours is active, and the two undo each other's work. */
static void
check_takeover(struct report *r, const struct rsm_stages *st)
{
	char why[256];
	double n = 0;

	each_sample(st, "rs_sync_takeover_warnings_total", add_value, &n);
	if (n <= 0) {
		check(r, "takeover", NULL);
		return;
	}
	snprintf(why, sizeof why, "another controller is active: it created "
	    "pods for %.0f of ours (rs-sync's log and the "
	    "AnotherControllerActive events name it)", n);
	check(r, "takeover", why);
}

int
rsm_health(FILE *f, const struct rsm_opts *o, int ready, int verbose)
{
	struct rsm_stages st;
	struct report r = { NULL, 0 };
	char *buf = NULL;
	size_t len = 0, i;

	if ((r.f = open_memstream(&buf, &len)) == NULL) {
		fputs("out of memory\n", f);
		return 0;
	}
	check(&r, "ping", NULL);
	check_queue(&r, o);
	rsm_stages_load(o->stats_dir, &st);
	for (i = 0; i < o->nstages; i++)
		check_stage(&r, o, &st, o->stages[i]);
	if (ready) {
		check_synced(&r, &st);
		check_takeover(&r, &st);
	}
	rsm_stages_free(&st);
	fclose(r.f);
	if (!r.failed && !verbose) {
		fputs("ok", f);
	} else {
		fwrite(buf, 1, len, f);
		fprintf(f, "%s check %s\n", ready ? "readyz" : "healthz",
		    r.failed ? "failed" : "passed");
	}
	free(buf);
	return !r.failed;
}
