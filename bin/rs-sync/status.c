#include <string.h>

#include "json.h"
#include "status.h"

/* Go omits these when zero (omitempty); the others are always there. */
static int
omit_zero(int i)
{
	return i == SC_FULLY || i == SC_READY || i == SC_AVAILABLE ||
	    i == SC_OBSERVED;
}

/* The value of each count in the new status; which of them it sets. */
static unsigned
new_counts(const struct sync *s, const struct ctrl *r, const struct counts *c,
    long long v[SC_N])
{
	unsigned set = (1u << SC_N) - 1;

	v[SC_REPLICAS] = c->replicas;
	v[SC_FULLY] = c->fully;
	v[SC_READY] = c->ready;
	v[SC_AVAILABLE] = c->available;
	v[SC_TERMINATING] = c->terminating;
	v[SC_OBSERVED] = r->generation;
	if (!(s->kind->terminating && s->terminating))
		set &= ~(1u << SC_TERMINATING);    /* left as it is */
	return set;
}

static void
drop_failure(cJSON *st)
{
	cJSON *conds = cJSON_GetObjectItemCaseSensitive(st, "conditions");
	cJSON *c, *next;

	if (!cJSON_IsArray(conds))
		return;
	for (c = conds->child; c; c = next) {
		const char *t = rs_json_str(c, "type", NULL);

		next = c->next;
		if (t && strcmp(t, "ReplicaFailure") == 0)
			cJSON_Delete(cJSON_DetachItemViaPointer(conds, c));
	}
	if (cJSON_GetArraySize(conds) == 0)
		cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
}

cJSON *
status_old(const struct ctrl *r)
{
	return r->status ? cJSON_Parse(r->status) : cJSON_CreateObject();
}

int
status_unchanged(const struct sync *s, const struct ctrl *r,
    const struct counts *c)
{
	const struct status_counts *old = &r->counts;
	long long v[SC_N];
	unsigned set = new_counts(s, r, c, v);

	if (!old->plain)
		return 0;
	for (int i = 0; i < SC_N; i++) {
		int there = (old->present >> i) & 1;
		int want = v[i] != 0 || !omit_zero(i);

		if (!(set & 1u << i))
			continue;
		if (want != there || (want && v[i] != old->v[i]))
			return 0;
	}
	return 1;
}

cJSON *
status_build(const struct sync *s, const struct ctrl *r,
    const struct counts *c, const cJSON *old)
{
	cJSON *st = cJSON_Duplicate(old, 1);
	long long v[SC_N];
	unsigned set = new_counts(s, r, c, v);

	if (st == NULL)
		return NULL;
	for (int i = 0; i < SC_N; i++) {
		if (!(set & 1u << i))
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(st,
		    status_count_name[i]);
		if (v[i] != 0 || !omit_zero(i))
			cJSON_AddNumberToObject(st, status_count_name[i],
			    (double)v[i]);
	}
	drop_failure(st);
	return st;
}

double
status_next_check(const struct ctrl *r, struct pod *const *v, size_t n,
    double now)
{
	double next = -1, left;

	for (size_t i = 0; i < n; i++) {
		const struct pod *p = v[i];

		if (!p->ready || pod_available(p, r->min_ready, now) ||
		    p->ready_since == 0)
			continue;
		left = p->ready_since + r->min_ready - now;
		if (left > 0 && (next < 0 || left < next))
			next = left;
	}
	if (next < 0)
		next = r->min_ready;
	/* availability is strict (ready_since + minReady < now): look just
	 * after the moment, not at it */
	return next + 0.1;
}
