/* sync.h: the state of one rs-sync process, shared by its parts. */
#ifndef RS_SYNC_SYNC_H
#define RS_SYNC_SYNC_H

#include "cache.h"
#include "expectations.h"
#include "line.h"
#include "pending.h"
#include "resourceversion.h"
#include "takeover.h"

/* Where handlers send keys: rs-queue, or nowhere in --once mode. */
typedef void (*enqueue_fn)(void *arg, const char *key, double after);
/* The end of a key's sync that wrote no intent (rs_queue_end): RETRY
 * (retry) or FORGET, and AFTER after seconds when > 0. */
typedef void (*end_fn)(void *arg, const char *key, int retry, double after);

struct sync {
	struct cache cache;
	const struct kind *kind;
	struct rs_exp *exp;
	enqueue_fn enqueue;
	void *enqueue_arg;
	end_fn end_here;               /* NULL: every end is an intent */
	void *end_arg;
	struct rs_line_writer *out;    /* intents */
	int burst_replicas;
	int terminating;               /* report status.terminatingReplicas */
	double fixed_now;              /* --now, for replay; 0 = the clock */
	int synced_pods, synced_ctrls;
	char read_rv_pods[RS_RV_MAX];  /* how far each stream is read: */
	char read_rv_ctrls[RS_RV_MAX]; /* see sync_read_rv */
	unsigned long events, bad_events, intents, syncs;
	unsigned long round_start;     /* intents before this sync's */
	unsigned long ended_here;      /* syncs ended through end_here */
	double event_at;               /* "at" of the event being handled, 0:
	                                  none (or no event) */
	struct pending pending;        /* the event times of queued keys */
	const char *line;              /* the ADDED line being handled, */
	struct rs_jspan ref_managers;  /* and its ref_managers (rs-watch's,
	                                  empty when none); line is NULL
	                                  for any other line */
	struct takeover takeover;      /* the take-over guard's warnings */
};

/* How far rs-sync has read the stream of resource ("pods", or the kind's
 * resource: replicasets, replicationcontrollers), as client-go's
 * LastStoreSyncResourceVersion: the resourceVersion of the last line of
 * it applied to the cache: SYNCED's (the list's), an event's object's
 * (final-state-unknown deletions included) or a BOOKMARK's. "" before
 * the resource's SYNCED, for another resource, and when the last line
 * gave none (a recording's SYNCED from before rs-watch printed one, or a
 * resourceVersion past RS_RV_MAX): rs_rv_compare refuses "", as
 * upstream's comparison refuses what is not well-formed. It is the last
 * one, not the highest: a relist's or snapshot's lines may go back
 * (objects in list order, deletions with their last known version) until
 * the BOOKMARK or SYNCED that ends them. Valid until the next line is
 * handled. */
const char *sync_read_rv(const struct sync *s, const char *resource);

double sync_now(const struct sync *s);

/* shardkeys.c: the keys dropped and gained when the held buckets changed
 * (shard mode only; nothing otherwise). Open after the stats set. */
void shardkeys_open(void);
void shardkeys_publish(const struct sync *s);
void sync_enqueue(struct sync *s, const char *key, double after);

#endif
