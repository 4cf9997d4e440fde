/* sync.h: the state of one rs-sync process, shared by its parts. */
#ifndef RS_SYNC_SYNC_H
#define RS_SYNC_SYNC_H

#include "cache.h"
#include "expectations.h"
#include "line.h"
#include "pending.h"
#include "takeover.h"

/* Where handlers send keys: rs-queue, or nowhere in --once mode. */
typedef void (*enqueue_fn)(void *arg, const char *key, double after);

struct sync {
	struct cache cache;
	const struct kind *kind;
	struct rs_exp *exp;
	enqueue_fn enqueue;
	void *enqueue_arg;
	struct rs_line_writer *out;    /* intents */
	int burst_replicas;
	int terminating;               /* report status.terminatingReplicas */
	double fixed_now;              /* --now, for replay; 0 = the clock */
	int synced_pods, synced_ctrls;
	unsigned long events, bad_events, intents, syncs;
	double event_at;               /* "at" of the event being handled, 0:
	                                  none (or no event) */
	struct pending pending;        /* the event times of queued keys */
	const cJSON *ref_managers;     /* of the ADDED line being handled:
	                                  rs-watch's, NULL when none */
	struct takeover takeover;      /* the take-over guard's warnings */
};

double sync_now(const struct sync *s);
void sync_enqueue(struct sync *s, const char *key, double after);

#endif
