/* rank.h: the order in which upstream deletes pods on scale-down
 * (controller.ActivePodsWithRanks), with the co-location ranks of
 * getPodsRankedByRelatedPodsOnSameNode. */
#ifndef RS_SYNC_RANK_H
#define RS_SYNC_RANK_H

#include <stddef.h>
#include "sync.h"

struct ranked {
	struct pod *pod;
	int rank;          /* active related pods on the same node */
};

/* Fills rank for each pod: the active pods of r's siblings (controllers
 * with the same controllerRef, r included) on the pod's node. */
rs_code rank_colocated(struct sync *s, const struct ctrl *r,
    struct ranked *v, size_t n);
/* Sorts v so the pods to delete first come first; now is the reference
 * for the logarithmic age buckets. */
void rank_sort(struct ranked *v, size_t n, double now);
/* The comparison itself: 1 when a goes before b. */
int rank_less(const struct ranked *a, const struct ranked *b, double now);

#endif
