#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rank.h"
#include "strmap.h"

/* log2 of the age in nanoseconds, as upstream buckets time.Duration;
 * -1 for a zero time or no reference, which compares by time instead. */
static long long
log_bucket(double t, double now)
{
	double d = (now - t) * 1e9;

	if (now == 0 || t == 0)
		return -1;
	return d > 0 ? (long long)log2(d) : -1;
}

static int
sign(long long d)
{
	return (d > 0) - (d < 0);
}

/* The first 8 bytes of a UID as a number that orders as strcmp orders
 * them, so that most comparisons by UID need not read the string. */
static uint64_t
uid_prefix(const char *uid)
{
	uint64_t v = 0;
	int end = 0;

	for (int i = 0; i < 8; i++) {
		end = end || uid[i] == '\0';
		v = v << 8 | (end ? 0 : (unsigned char)uid[i]);
	}
	return v;
}

static int
by_uid(const struct ranked *x, const struct ranked *y)
{
	if (x->uid_prefix != y->uid_prefix)
		return x->uid_prefix < y->uid_prefix ? -1 : 1;
	return sign(strcmp(x->pod->uid, y->pod->uid));
}

static int
before(int a_first)
{
	return a_first ? -1 : 1;
}

/* Newer first, compared in powers-of-two age buckets so that pods of
 * similar age are chosen pseudo-randomly (by UID) rather than strictly by
 * age (LogarithmicScaleDown). Without a reference time or with a zero
 * time, afterOrZero: the zero time first, then the later. ta != tb. */
static int
newer_first(const struct ranked *x, double ta, long long ba,
    const struct ranked *y, double tb, long long bb, double now)
{
	if (now == 0 || ta == 0 || tb == 0) {
		if (ta == 0 || tb == 0)
			return before(ta == 0);
		return before(ta > tb);
	}
	if (ba != bb)
		return before(ba < bb);
	return by_uid(x, y);
}

int
rank_order(const struct ranked *a, const struct ranked *b, double now)
{
	/* 1. unassigned before assigned */
	if (a->unassigned != b->unassigned)
		return before(a->unassigned);
	/* 2. Pending before Unknown before Running */
	if (a->phase_rank != b->phase_rank)
		return before(a->phase_rank < b->phase_rank);
	/* 3. not ready before ready */
	if (a->ready != b->ready)
		return before(!a->ready);
	/* 4. lower pod-deletion-cost first */
	if (a->cost != b->cost)
		return before(a->cost < b->cost);
	/* 5. more co-located related pods first */
	if (a->rank != b->rank)
		return before(a->rank > b->rank);
	/* 6. ready for less time first */
	if (a->ready && b->ready && a->ready_since != b->ready_since)
		return newer_first(a, a->ready_since, a->ready_bucket, b,
		    b->ready_since, b->ready_bucket, now);
	/* 7. more restarts first */
	if (a->restarts != b->restarts)
		return before(a->restarts > b->restarts);
	if (a->sidecar_restarts != b->sidecar_restarts)
		return before(a->sidecar_restarts > b->sidecar_restarts);
	/* 8. newer first */
	if (a->created != b->created)
		return newer_first(a, a->created, a->created_bucket, b,
		    b->created, b->created_bucket, now);
	return 0;
}

static void
rank_keys(struct ranked *r, double now)
{
	const struct pod *p = r->pod;

	r->unassigned = p->node[0] == '\0';
	r->phase_rank = p->phase_rank;
	r->ready = p->ready != 0;
	r->cost = p->cost;
	r->restarts = p->restarts;
	r->sidecar_restarts = p->sidecar_restarts;
	r->ready_since = p->ready_since;
	r->created = p->created;
	r->ready_bucket = log_bucket(p->ready_since, now);
	r->created_bucket = log_bucket(p->created, now);
	r->uid_prefix = uid_prefix(p->uid);
}

static int
rank_cmp(const void *pa, const void *pb, void *arg)
{
	return rank_order(pa, pb, *(const double *)arg);
}

void
rank_sort(struct ranked *v, size_t n, double now)
{
	for (size_t i = 0; i < n; i++)
		rank_keys(&v[i], now);
	qsort_r(v, n, sizeof *v, rank_cmp, &now);
}

static void
swap(struct ranked *a, struct ranked *b)
{
	struct ranked t = *a;

	*a = *b;
	*b = t;
}

/* Restores the heap of h[0..n) below i: each pod goes after its children
 * in the order, so h[0] is the last of the n. */
static void
sift_down(struct ranked *h, size_t n, size_t i, double now)
{
	for (;;) {
		size_t c = 2 * i + 1, last = i;

		if (c < n && rank_order(&h[c], &h[last], now) > 0)
			last = c;
		if (c + 1 < n && rank_order(&h[c + 1], &h[last], now) > 0)
			last = c + 1;
		if (last == i)
			return;
		swap(&h[i], &h[last]);
		i = last;
	}
}

/* A scale-down deletes at most a burst (500) of thousands of pods: only
 * the first `first` are wanted, so they are kept in a heap while the rest
 * go by with one comparison each, and only they are sorted. */
void
rank_first(struct ranked *v, size_t n, size_t first, double now)
{
	size_t i;

	if (first >= n) {
		rank_sort(v, n, now);
		return;
	}
	for (i = 0; i < n; i++)
		rank_keys(&v[i], now);
	for (i = first / 2; i-- > 0;)
		sift_down(v, first, i, now);
	for (i = first; i < n && first > 0; i++)
		if (rank_order(&v[i], &v[0], now) < 0) {
			swap(&v[i], &v[0]);
			sift_down(v, first, 0, now);
		}
	qsort_r(v, first, sizeof *v, rank_cmp, &now);
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
