#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "featuregate.h"
#include "intents.h"
#include "json.h"
#include "log.h"
#include "rank.h"
#include "reconcile.h"
#include "resourceversion.h"
#include "stagestats.h"
#include "status.h"

struct podvec {
	struct pod **v;
	size_t n, cap;
};

struct round {
	struct sync *s;
	struct ctrl *r;
	double now;
	struct podvec claimed, adopt, release;
	int terminating;
	int managed;        /* a create or delete was emitted */
	double requeue;     /* seconds, 0 = none */
};

static rs_code
podvec_push(struct podvec *pv, struct pod *p)
{
	if (pv->n == pv->cap) {
		size_t ncap = pv->cap ? pv->cap * 2 : 16;
		struct pod **nv = realloc(pv->v, ncap * sizeof *nv);

		if (nv == NULL)
			return RS_ENOMEM;
		pv->v = nv;
		pv->cap = ncap;
	}
	pv->v[pv->n++] = p;
	return RS_OK;
}

/* A pod carries every label of the template (fullyLabeledReplicas). */
static int
fully_labeled(const struct rs_labels *tmpl, const struct pod *p)
{
	for (size_t i = 0; tmpl && i < tmpl->n; i++) {
		const char *v = rs_labels_get(p->labels, tmpl->kv[i].key);

		if (v == NULL || strcmp(v, tmpl->kv[i].value) != 0)
			return 0;
	}
	return 1;
}

/* ClaimPods over the pods the controller owns and the orphans of its
 * namespace: keep what matches, release what stopped matching (not while
 * the controller is being deleted), adopt matching orphans. Pods owned by
 * other controllers are never in these lists. */
static rs_code
claim(struct round *o)
{
	struct ctrl *r = o->r;
	const struct podlist *l;
	rs_code rc = RS_OK;

	l = cache_owned(&o->s->cache, r->uid);
	for (struct pod *p = l ? l->head : NULL; p && rc == RS_OK; p = p->next) {
		int match;

		/* upstream lists the controller's namespace only */
		if (strcmp(p->ns, r->ns) != 0)
			continue;
		match = rs_selector_matches(r->sel, p->labels);
		if (!pod_active(p)) {
			if (match && p->deleted && !p->terminal)
				o->terminating++;
			continue;
		}
		if (match)
			rc = podvec_push(&o->claimed, p);
		else if (!r->deleting)
			rc = podvec_push(&o->release, p);
	}
	if (r->deleting)
		return rc;
	l = cache_orphans(&o->s->cache, r->ns);
	for (struct pod *p = l ? l->head : NULL; p && rc == RS_OK; p = p->next)
		if (pod_active(p) && rs_selector_matches(r->sel, p->labels))
			rc = podvec_push(&o->adopt, p);
	return rc;
}

static rs_code
emit_claims(struct round *o, const char *op, const struct podvec *pv)
{
	rs_code rc = RS_OK;

	for (size_t i = 0; i < pv->n && rc == RS_OK; i++) {
		cJSON *in = intent_new(o->s, op, o->r->key, o->r);
		cJSON *pod = cJSON_AddObjectToObject(in, "pod");

		cJSON_AddStringToObject(pod, "name", pv->v[i]->name);
		cJSON_AddStringToObject(pod, "uid", pv->v[i]->uid);
		rs_info(2, "%s %s: %s pod %s", o->s->kind->kind, o->r->key, op,
		    pv->v[i]->key);
		rc = intent_emit(o->s, in);
	}
	return rc;
}

static rs_code
scale_up(struct round *o, int n)
{
	cJSON *in, *tmpl;
	rs_code rc;

	if ((rc = ctrl_template(o->r, &tmpl)) != RS_OK)
		return rc;
	/* raised before the intent leaves, so no reader of the expectations
	 * can see the pods arrive before they are expected */
	if ((rc = rs_exp_expect_creations(o->s->exp, o->r->key, n)) != RS_OK) {
		rs_error("unable to expect %d creations for %s: %s; not creating",
		    n, o->r->key, rs_strerror(rc));
		cJSON_Delete(tmpl);
		o->requeue = 5;
		return RS_OK;
	}
	rs_info(2, "too few replicas for %s %s, need %d, creating %d",
	    o->s->kind->kind, o->r->key, o->r->replicas, n);
	in = intent_new(o->s, "create", o->r->key, o->r);
	cJSON_AddNumberToObject(in, "count", n);
	cJSON_AddItemToObject(in, "template",
	    tmpl ? tmpl : cJSON_CreateObject());
	o->managed = 1;
	return intent_emit(o->s, in);
}

/* How far from the youngest the victims were (the families of rs-sync:
 * doc/metrics.md); upstream reports it only when it sorted, as here. */
static void
report_age_ratios(const struct ranked *v, size_t nc, size_t n, double now)
{
	double youngest = rank_youngest_ready(v, nc), ratio;

	for (size_t i = 0; i < n; i++)
		if ((ratio = rank_age_ratio(v[i].pod, youngest, now)) >= 0)
			rs_stagestats_observe(RANK_AGE_RATIO, NULL, ratio);
}

static rs_code
scale_down(struct round *o, int n)
{
	size_t nc = o->claimed.n, i;
	struct ranked *v = calloc(nc, sizeof *v);
	const char **keys = calloc(n, sizeof *keys);
	cJSON *in, *pods;
	rs_code rc;

	if (v == NULL || keys == NULL) {
		rc = RS_ENOMEM;
		goto out;
	}
	for (i = 0; i < nc; i++)
		v[i].pod = o->claimed.v[i];
	if ((size_t)n < nc) {
		if ((rc = rank_colocated(o->s, o->r, v, nc)) != RS_OK)
			goto out;
		rank_first(v, nc, n, o->now);
		report_age_ratios(v, nc, n, o->now);
	}
	for (i = 0; i < (size_t)n; i++) {
		keys[i] = v[i].pod->key;
		rs_info(3, "%s: victim %zu: %s (node %s, rank %d)", o->r->key, i,
		    v[i].pod->key, v[i].pod->node, v[i].rank);
	}
	if ((rc = rs_exp_expect_deletions(o->s->exp, o->r->key, keys, n)) != RS_OK) {
		rs_error("unable to expect %d deletions for %s: %s; not deleting",
		    n, o->r->key, rs_strerror(rc));
		o->requeue = 5;
		rc = RS_OK;
		goto out;
	}
	rs_info(2, "too many replicas for %s %s, need %d, deleting %d",
	    o->s->kind->kind, o->r->key, o->r->replicas, n);
	in = intent_new(o->s, "delete", o->r->key, o->r);
	pods = cJSON_AddArrayToObject(in, "pods");
	for (i = 0; i < (size_t)n; i++)
		intent_add_pod(pods, v[i].pod);
	o->managed = 1;
	rc = intent_emit(o->s, in);
out:
	free(v);
	free(keys);
	return rc;
}

/* manageReplicas: the difference, capped at the burst size. */
static rs_code
manage(struct round *o)
{
	int diff = (int)o->claimed.n - o->r->replicas;

	if (diff < 0)
		return scale_up(o, -diff > o->s->burst_replicas ?
		    o->s->burst_replicas : -diff);
	if (diff > 0)
		return scale_down(o, diff > o->s->burst_replicas ?
		    o->s->burst_replicas : diff);
	return RS_OK;
}


/* The object a status write PUTs: the cached one (which holds no status:
 * cache.h) without its spec (the API server keeps the stored spec on a
 * /status write, so the template would only be printed, piped, parsed and
 * sent for nothing), with st as its status. The metadata stays whole: a
 * /status write does change labels and annotations. Written from the
 * cached text, member by member: a tree of it cost a parse and a copy of
 * the whole object per write. NULL when out of memory. */
static char *
status_object(const struct ctrl *r, const cJSON *st)
{
	static const char sep[] = "\"status\":";
	struct rs_jspan all = { 0, strlen(r->text) }, k, v;
	struct rs_jiter it;
	char *text = rs_json_print(st), *out, *p;

	if (text == NULL)
		return NULL;
	/* the text is ctrl_strip's, an object that rs_jscan validated */
	if ((out = malloc(all.end + sizeof sep + strlen(text) + 2)) == NULL ||
	    rs_jscan_iter(&it, r->text, all) != RS_OK) {
		free(out);
		cJSON_free(text);
		return NULL;
	}
	p = out;
	*p++ = '{';
	while (rs_jscan_member(&it, &k, &v) == RS_OK) {
		if (rs_jscan_keyeq(r->text, k, "spec"))
			continue;
		memcpy(p, r->text + k.off, k.end - k.off);
		p += k.end - k.off;
		*p++ = ':';
		memcpy(p, r->text + v.off, v.end - v.off);
		p += v.end - v.off;
		*p++ = ',';
	}
	p = stpcpy(stpcpy(p, sep), text);
	*p++ = '}';
	*p = '\0';
	cJSON_free(text);
	return out;
}

static rs_code
status(struct round *o)
{
	struct counts c = { .replicas = (int)o->claimed.n,
	    .terminating = o->terminating };
	cJSON *now_st, *old, *in;
	char *obj;

	for (size_t i = 0; i < o->claimed.n; i++) {
		struct pod *p = o->claimed.v[i];

		c.fully += fully_labeled(o->r->tmpl_labels, p);
		c.ready += p->ready;
		c.available += pod_available(p, o->r->min_ready, o->now);
	}
	if (o->r->min_ready > 0 && c.ready != c.available)
		o->requeue = status_next_check(o->r, o->claimed.v, o->claimed.n,
		    o->now);
	if (!o->managed && status_unchanged(o->s, o->r, &c))
		return RS_OK;
	old = status_old(o->r);
	now_st = old ? status_build(o->s, o->r, &c, old) : NULL;
	if (now_st == NULL) {
		cJSON_Delete(old);
		return RS_ENOMEM;
	}
	if (!o->managed && cJSON_Compare(old, now_st, 1)) {
		cJSON_Delete(now_st);
		cJSON_Delete(old);
		return RS_OK;
	}
	rs_info(4, "%s %s status: replicas %d, fully labeled %d, ready %d, "
	    "available %d, terminating %d", o->s->kind->kind, o->r->key,
	    c.replicas, c.fully, c.ready, c.available, c.terminating);
	obj = status_object(o->r, now_st);
	cJSON_Delete(now_st);
	if (obj == NULL) {
		cJSON_Delete(old);
		return RS_ENOMEM;
	}
	in = intent_new(o->s, "status", o->r->key, o->r);
	if (cJSON_AddRawToObject(in, "object", obj) == NULL) {
		free(obj);
		cJSON_Delete(old);
		cJSON_Delete(in);
		return RS_ENOMEM;
	}
	free(obj);
	cJSON_AddItemToObject(in, "old_status", old);
	return intent_emit(o->s, in);
}

/* A wall-clock time as rs-watch writes its "at": microseconds, so that
 * the text neither grows nor loses what the stamp had. */
static void
add_time(cJSON *o, const char *name, double t)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%.6f", t);
	cJSON_AddRawToObject(o, name, buf);
}

/* upstream's ConsistencyError: what the guard found behind */
struct behind {
	const struct rs_exp_write *w;
	const char *read;
};

/* EnsureReady: 1 when the streams rs-sync has read have not reached a
 * write rs-apply recorded for key (*b says which). A resource that
 * compares to nothing, or whose stream gave no version yet, is not
 * waited for, as upstream skips what it cannot compare. Ready, the
 * record is cleared, as upstream's Clear(owner, record's uid). */
static int
behind_writes(struct sync *s, const char *key, struct rs_exp_written *wr,
    struct behind *b)
{
	const char *read;
	size_t i;
	int cmp;
	rs_code rc;

	if (!rs_feature_enabled(RS_FEATURE_STALE_CONSISTENCY_RS))
		return 0;
	rc = rs_exp_written(s->exp, key, wr);
	if (rc == RS_ENOTFOUND)
		return 0;
	if (rc != RS_OK) {
		rs_warn("unable to read the writes recorded for %s: %s", key,
		    rs_strerror(rc));
		return 0;
	}
	for (i = 0; i < wr->n; i++) {
		read = sync_read_rv(s, wr->w[i].resource);
		if (read == NULL || rs_rv_compare(wr->w[i].rv, read, &cmp) !=
		    RS_OK || cmp <= 0)
			continue;
		b->w = &wr->w[i];
		b->read = read;
		return 1;
	}
	rc = rs_exp_clear_written(s->exp, key, wr->uid);
	if (rc != RS_OK)
		rs_warn("unable to clear the writes recorded for %s: %s", key,
		    rs_strerror(rc));
	return 0;
}

/* The key's last line. event_at: the earliest event this sync acts on (0:
 * none, as for a resync); sent_at: now, for rs-apply to tell how long the
 * intents took to reach it (under --now, that time, so that a replay
 * prints the same each run); retry: the sync was skipped, rs-apply is to
 * report RETRY. */
static rs_code
end(struct sync *s, const char *key, const struct ctrl *r, double requeue,
    double event_at, int retry)
{
	cJSON *in;

	/* nothing for rs-apply to do: its end line would only wake it to
	 * send the queue what rs-sync can send with its next GET */
	if (s->end_here != NULL && s->intents == s->round_start) {
		s->end_here(s->end_arg, key, retry, requeue);
		s->ended_here++;
		return RS_OK;
	}
	in = intent_new(s, "end", key, r);

	if (retry)
		cJSON_AddBoolToObject(in, "retry", 1);
	if (requeue > 0)
		cJSON_AddNumberToObject(in, "requeue_after", requeue);
	if (event_at > 0)
		add_time(in, "event_at", event_at);
	add_time(in, "sent_at", sync_now(s));
	return intent_emit(s, in);
}

/* A sync skipped for a stale cache: counted under upstream's name, and
 * the key retried through rs-queue with its rate limit (rs-apply reports
 * RETRY), as upstream requeues it rate-limited. */
static rs_code
stale_skip(struct sync *s, const char *key, const struct behind *b,
    double event_at)
{
	char labels[2 * RS_EXP_RES_MAX + 32];

	snprintf(labels, sizeof labels, "group=%s,resource=%s", b->w->group,
	    b->w->resource);
	rs_stagestats_add("replicaset_controller_stale_sync_skips_total",
	    labels, 1);
	rs_info(2, "%s: not synced: read version %s is not as new as written "
	    "version %s for %s%s%s, retry", key, b->read, b->w->rv,
	    b->w->resource, b->w->group[0] ? "." : "", b->w->group);
	/* the event stays pending: the sync that acts on it comes later */
	if (event_at > 0)
		(void)pending_note(&s->pending, key, event_at, SIZE_MAX, NULL,
		    NULL);
	return end(s, key, cache_ctrl(&s->cache, key), 0, 0, 1);
}

static rs_code
sync_ctrl(struct round *o)
{
	struct sync *s = o->s;
	enum rs_exp_why why = RS_EXP_PENDING;
	int satisfied = 0;
	rs_code rc;

	if ((rc = takeover_emit(s, o->r)) != RS_OK)
		return rc;
	rc = rs_exp_satisfied(s->exp, o->r->key, &satisfied, &why);
	if (rc != RS_OK) {
		rs_error("unable to read expectations of %s: %s", o->r->key,
		    rs_strerror(rc));
		satisfied = 0;
		o->requeue = 1;
	}
	rs_info(4, "%s: expectations %s", o->r->key, rs_exp_why_name(why));
	if (o->r->sel == NULL) {
		rs_info(2, "%s: invalid selector, not syncing", o->r->key);
		return RS_OK;
	}
	if ((rc = claim(o)) != RS_OK)
		return rc;
	rs_info(3, "%s: %zu claimed, %zu to adopt, %zu to release, %d terminating",
	    o->r->key, o->claimed.n, o->adopt.n, o->release.n, o->terminating);
	if ((rc = emit_claims(o, "release", &o->release)) != RS_OK)
		return rc;
	if (o->adopt.n > 0)
		/* adopted pods come back as pod updates and sync the key again */
		return emit_claims(o, "adopt", &o->adopt);
	if (satisfied && !o->r->deleting && (rc = manage(o)) != RS_OK)
		return rc;
	return status(o);
}

static rs_code
sync_key(struct sync *s, const char *key, double event_at)
{
	struct round o = { .s = s, .now = sync_now(s) };
	struct rs_exp_written wr;
	struct behind b;
	rs_code rc;

	if (behind_writes(s, key, &wr, &b))
		return stale_skip(s, key, &b, event_at);
	o.r = cache_ctrl(&s->cache, key);
	if (o.r == NULL) {
		rs_info(4, "%s %s has been deleted", s->kind->kind, key);
		rc = rs_exp_delete(s->exp, key);
		if (rc == RS_OK)
			rc = rs_exp_clear_written(s->exp, key, NULL);
		if (rc != RS_OK)
			rs_warn("unable to delete expectations of %s: %s", key,
			    rs_strerror(rc));
		return end(s, key, NULL, 0, event_at, 0);
	}
	rc = sync_ctrl(&o);
	free(o.claimed.v);
	free(o.adopt.v);
	free(o.release.v);
	if (rc != RS_OK)
		return rc;
	return end(s, key, o.r, o.requeue, event_at, 0);
}

/* The key's event time is taken out whatever the sync does: the events
 * are acted on from here, and a later one starts a new wait. */
rs_code
reconcile(struct sync *s, const char *key)
{
	int64_t t0 = rs_mono_ns();
	rs_code rc;

	s->syncs++;
	s->round_start = s->intents;
	rc = sync_key(s, key, pending_take(&s->pending, key));
	rs_stagestats_observe("rs_sync_reconcile_seconds", NULL,
	    (rs_mono_ns() - t0) / 1e9);
	return rc;
}
