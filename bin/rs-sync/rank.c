#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rank.h"
#include "strmap.h"

/* afterOrZero: a zero time sorts first, then the later time. */
static int
after_or_zero(double a, double b)
{
	if (a == 0 || b == 0)
		return a == 0;
	return a > b;
}

/* log2 of the age in nanoseconds, as upstream buckets time.Duration. */
static long long
log_bucket(double t, double now)
{
	double d = (now - t) * 1e9;

	return d > 0 ? (long long)log2(d) : -1;
}

/* Newer first, compared in powers-of-two age buckets so that pods of
 * similar age are chosen pseudo-randomly (by UID) rather than strictly by
 * age (LogarithmicScaleDown). */
static int
newer_first(const struct pod *a, double ta, const struct pod *b, double tb,
    double now)
{
	long long diff;

	if (now == 0 || ta == 0 || tb == 0)
		return after_or_zero(ta, tb);
	diff = log_bucket(ta, now) - log_bucket(tb, now);
	if (diff == 0)
		return strcmp(a->uid, b->uid) < 0;
	return diff < 0;
}

int
rank_less(const struct ranked *x, const struct ranked *y, double now)
{
	const struct pod *a = x->pod, *b = y->pod;

	/* 1. unassigned before assigned */
	if (strcmp(a->node, b->node) != 0 && (a->node[0] == '\0' ||
	    b->node[0] == '\0'))
		return a->node[0] == '\0';
	/* 2. Pending before Unknown before Running */
	if (a->phase_rank != b->phase_rank)
		return a->phase_rank < b->phase_rank;
	/* 3. not ready before ready */
	if (a->ready != b->ready)
		return !a->ready;
	/* 4. lower pod-deletion-cost first */
	if (a->cost != b->cost)
		return a->cost < b->cost;
	/* 5. more co-located related pods first */
	if (x->rank != y->rank)
		return x->rank > y->rank;
	/* 6. ready for less time first */
	if (a->ready && b->ready && a->ready_since != b->ready_since)
		return newer_first(a, a->ready_since, b, b->ready_since, now);
	/* 7. more restarts first */
	if (a->restarts != b->restarts)
		return a->restarts > b->restarts;
	if (a->sidecar_restarts != b->sidecar_restarts)
		return a->sidecar_restarts > b->sidecar_restarts;
	/* 8. newer first */
	if (a->created != b->created)
		return newer_first(a, a->created, b, b->created, now);
	return 0;
}

static int
rank_cmp(const void *pa, const void *pb, void *arg)
{
	const struct ranked *a = pa, *b = pb;
	double now = *(const double *)arg;

	if (rank_less(a, b, now))
		return -1;
	if (rank_less(b, a, now))
		return 1;
	return 0;
}

void
rank_sort(struct ranked *v, size_t n, double now)
{
	qsort_r(v, n, sizeof *v, rank_cmp, &now);
}

double
rank_youngest_ready(const struct ranked *v, size_t n)
{
	double youngest = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i].pod->ready && v[i].pod->created > youngest)
			youngest = v[i].pod->created;
	return youngest;
}

/* A Go duration's Milliseconds(): truncated toward zero. */
static long long
millis(double seconds)
{
	return (long long)(seconds * 1e3);
}

double
rank_age_ratio(const struct pod *victim, double youngest, double now)
{
	long long age, young;

	if (!victim->ready || youngest <= 0)
		return -1;
	age = millis(now - victim->created);
	young = millis(now - youngest);
	if (young == 0)
		return -1;
	return (double)(age / young);
}

/* Counts p on its node unless it was counted already (an orphan can match
 * several siblings' selectors; upstream counts each pod once). */
static rs_code
count_pod(struct rs_strmap *seen, struct rs_strmap *nodes, struct pod *p)
{
	rs_code rc;

	if (!pod_active(p) || rs_strmap_get(seen, p->key))
		return RS_OK;
	if ((rc = rs_strmap_put(seen, p->key, p, NULL)) != RS_OK)
		return rc;
	intptr_t c = (intptr_t)rs_strmap_get(nodes, p->node);
	return rs_strmap_put(nodes, p->node, (void *)(c + 1), NULL);
}

static rs_code
count_sibling(struct sync *s, const struct ctrl *sib, struct rs_strmap *seen,
    struct rs_strmap *nodes)
{
	const struct podlist *l;
	rs_code rc = RS_OK;

	if (sib->sel == NULL)
		return RS_OK;
	/* upstream lists the namespace by the sibling's selector; a pod
	 * matching it is either owned by the sibling or an orphan (pods owned
	 * by other controllers are left out: see doc/rs-sync.1) */
	l = cache_owned(&s->cache, sib->uid);
	for (struct pod *p = l ? l->head : NULL; p && rc == RS_OK; p = p->next)
		if (strcmp(p->ns, sib->ns) == 0 &&
		    rs_selector_matches(sib->sel, p->labels))
			rc = count_pod(seen, nodes, p);
	l = cache_orphans(&s->cache, sib->ns);
	for (struct pod *p = l ? l->head : NULL; p && rc == RS_OK; p = p->next)
		if (rs_selector_matches(sib->sel, p->labels))
			rc = count_pod(seen, nodes, p);
	return rc;
}

rs_code
rank_colocated(struct sync *s, const struct ctrl *r, struct ranked *v,
    size_t n)
{
	struct rs_strmap seen, nodes;
	const struct ctrl_group *g;
	rs_code rc = RS_OK;
	size_t i;

	for (i = 0; i < n; i++)
		v[i].rank = 0;
	/* getReplicaSetsWithSameController: none without a controllerRef */
	if (r->owner_uid == NULL ||
	    (g = cache_siblings(&s->cache, r->owner_uid)) == NULL)
		return RS_OK;
	rs_strmap_init(&seen);
	rs_strmap_init(&nodes);
	for (struct ctrl *sib = g->head; sib && rc == RS_OK; sib = sib->sib_next)
		if (strcmp(sib->ns, r->ns) == 0)
			rc = count_sibling(s, sib, &seen, &nodes);
	for (i = 0; i < n && rc == RS_OK; i++)
		v[i].rank = (int)(intptr_t)rs_strmap_get(&nodes, v[i].pod->node);
	rs_strmap_free(&seen);
	rs_strmap_free(&nodes);
	return rc;
}
