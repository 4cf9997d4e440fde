#include <string.h>

#include "json.h"
#include "status.h"

/* Go omits these when zero (omitempty); replicas is always present. */
static void
set_count(cJSON *st, const char *name, long long v, int omit_zero)
{
	cJSON_DeleteItemFromObjectCaseSensitive(st, name);
	if (v != 0 || !omit_zero)
		cJSON_AddNumberToObject(st, name, (double)v);
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
	const cJSON *st = r->status;

	return cJSON_IsObject(st) ? cJSON_Duplicate(st, 1) : cJSON_CreateObject();
}

cJSON *
status_build(const struct sync *s, const struct ctrl *r,
    const struct counts *c)
{
	cJSON *st = status_old(r);

	if (st == NULL)
		return NULL;
	set_count(st, "replicas", c->replicas, 0);
	set_count(st, "fullyLabeledReplicas", c->fully, 1);
	set_count(st, "readyReplicas", c->ready, 1);
	set_count(st, "availableReplicas", c->available, 1);
	if (s->kind->terminating && s->terminating)
		set_count(st, "terminatingReplicas", c->terminating, 0);
	set_count(st, "observedGeneration", r->generation, 1);
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
