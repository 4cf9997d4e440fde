/* status.h: the controller's status (calculateStatus) as JSON in the form
 * the API server returns it, so that an unchanged status compares equal
 * and is not written. */
#ifndef RS_SYNC_STATUS_H
#define RS_SYNC_STATUS_H

#include <cJSON.h>
#include "sync.h"

struct counts {
	int replicas;      /* active pods claimed */
	int fully;         /* of them, matching the template's labels */
	int ready;
	int available;     /* ready for minReadySeconds */
	int terminating;   /* claimed pods being deleted */
};

/* The cached status ({} when absent); a new tree. NULL: no memory. */
cJSON *status_old(const struct ctrl *r);
/* The new status: old (status_old's) with the counts, observedGeneration
 * and no ReplicaFailure condition (rs-apply adds it when a write fails);
 * a new tree. */
cJSON *status_build(const struct sync *s, const struct ctrl *r,
    const struct counts *c, const cJSON *old);
/* 1 when status_build would give the cached status back unchanged, told
 * from the counts read when it was cached, without a tree; 0 when it
 * would not, or when only the trees can tell. */
int status_unchanged(const struct sync *s, const struct ctrl *r,
    const struct counts *c);
/* Seconds until the next pod of v becomes available, or min_ready when
 * none is pending (FindMinNextPodAvailabilityCheck). */
double status_next_check(const struct ctrl *r, struct pod *const *v,
    size_t n, double now);

#endif
