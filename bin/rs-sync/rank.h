/* rank.h: the order in which upstream deletes pods on scale-down
 * (controller.ActivePodsWithRanks), with the co-location ranks of
 * getPodsRankedByRelatedPodsOnSameNode. */
#ifndef RS_SYNC_RANK_H
#define RS_SYNC_RANK_H

#include <stddef.h>
#include <stdint.h>
#include "sync.h"

struct ranked {
	struct pod *pod;
	int rank;          /* active related pods on the same node */
	/* The pod's keys of the order, copied by rank_keys so that a
	 * comparison reads this array and not the pods scattered in the
	 * cache (a sort of 12,000 took 4.5 ms chasing them). */
	double ready_since, created;
	long long ready_bucket, created_bucket;  /* log2 of the age in ns */
	uint64_t uid_prefix;
	int32_t cost, restarts, sidecar_restarts;
	unsigned char unassigned, phase_rank, ready;
};

/* Fills rank for each pod: the active pods of r's siblings (controllers
 * with the same controllerRef, r included) on the pod's node. */
rs_code rank_colocated(struct sync *s, const struct ctrl *r,
    struct ranked *v, size_t n);
/* Sorts v so the pods to delete first come first; now is the reference
 * for the logarithmic age buckets. */
void rank_sort(struct ranked *v, size_t n, double now);
/* The same for the first `first` pods only: they come first in v, sorted;
 * the order of the others is left undefined. */
void rank_first(struct ranked *v, size_t n, size_t first, double now);
/* The comparison itself: -1 when a goes before b, 1 when after, 0 when
 * upstream would take either; a and b must come from a rank_sort or
 * rank_first, which copy their keys. */
int rank_order(const struct ranked *a, const struct ranked *b, double now);

/* The histogram of victims' age ratios, named as upstream's: the
 * replicaset_controller subsystem, on ReplicationControllers too (the
 * manager is upstream's ReplicaSet controller). Buckets 0.25 to 8. */
#define RANK_AGE_RATIO "replicaset_controller_sorting_deletion_age_ratio"

/* replicaset_controller_sorting_deletion_age_ratio (doc/metrics.md), as
 * upstream reports it once the pods are sorted: the creation time of the
 * youngest Ready pod of v (0: none is Ready), then, for one victim, its
 * age over that pod's age, both in whole milliseconds and divided as
 * integers, as upstream divides them. -1 when there is nothing to
 * report: the victim is not Ready, or the youngest age is under a
 * millisecond (upstream would divide by zero). */
double rank_youngest_ready(const struct ranked *v, size_t n);
double rank_age_ratio(const struct pod *victim, double youngest, double now);

#endif
