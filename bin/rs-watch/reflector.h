/* reflector.h: one resource's list and watch, as client-go's Reflector.
 *
 * Each resource runs in its own thread:
 *   list (a watch that sends every object first and then a bookmark, as
 *   client-go's WatchListClient; paginated where the server refuses it or
 *   --list pages says so) -> print the difference from what was printed, then
 *   SYNCED (the first time) or BOOKMARK (a relist) with the list's
 *   resourceVersion -> watch from it -> print each event and bookmark ->
 *   on stream end, watch again from the last resourceVersion seen; on 410,
 *   list again.
 * Failures to connect, to list or to start a watch wait (backoff with
 * jitter, or the server's Retry-After) and retry forever, as a
 * controller's reflector does; a refused connection's wait ends early
 * when the server says it is ready again (GET /readyz every 0.25 s); a
 * watch that was established and then ended or was cut is started again
 * at once, and a 410 relists at once.
 * Only a first list that the server answers 404 or 400 (no such
 * resource, bad selector) is fatal.
 *
 * The state the threads share with main is small: the hup flag (set by
 * main on SIGHUP, taken by the thread) and stop (ends the current watch
 * stream so the thread sees hup at once). */
#ifndef RS_WATCH_REFLECTOR_H
#define RS_WATCH_REFLECTOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backoff.h"
#include "code.h"
#include "event.h"
#include "kube.h"
#include "resource.h"
#include "resourceversion.h"
#include "seen.h"
#include "shard.h"

struct watch_opts {
	struct rs_kube *kube;
	const char *ns;                  /* NULL: all namespaces */
	char *label_q, *field_q;         /* URL-escaped selectors, or NULL */
	char *shard_q;                   /* URL-escaped shard selector, or NULL:
	                                    none, or one of every namespace */
	const struct rs_shard_ranges *shard;   /* its ranges, or NULL: none,
	                                    or of every namespace (all pass) */
	int shard_said;                  /* --shard-selector given: each
	                                    list says what it dropped */
	long page_size;                  /* 0: no pagination */
	int stream_list;                 /* list by a streaming watch */
	int trim;                        /* drop metadata.managedFields */
	int protobuf;                    /* pods in protobuf, their fields
	                                    the controller reads (pbpod.h) */
	long min_watch_timeout;          /* seconds; the server's timeout is
	                                    this times (1 + rand) */
	int64_t bo_initial, bo_max, bo_reset;   /* nanoseconds */
	long batch_ms;                   /* watch events gathered per write */
	size_t max_line;                 /* longest event line printed */
};

/* A list in progress; it survives failed pages, which are retried. */
struct listing {
	int active;
	int streaming;                   /* by a watch with sendInitialEvents */
	uint32_t pass;                   /* marks what this list saw */
	uint32_t snap_from;              /* 0, or the pass a snapshot began at */
	char *cont;                      /* continue token of the next page */
	int expired;                     /* continue tokens that expired */
	long pages, items;
	long dropped;                    /* objects out of the shard */
	int echo;                        /* a page had shardInfo: 1, had not:
	                                    -1, no page yet: 0 */
	int64_t t0;
};

struct reflector {
	const struct watch_opts *o;
	struct resource res;
	char api_version[320];
	char kind[128];                  /* learned from lists and events */
	char *path;                      /* the collection's URL path */
	struct seen seen;
	struct linebuf buf;
	int pb;                          /* read in protobuf (pods only) */
	struct linebuf pbtext;           /* the JSON an object in protobuf
	                                    is read as, one at a time */
	struct backoff bo;
	struct listing ls;
	char rv[RS_RV_MAX];              /* resume point; "" when a list is due */
	int synced;                      /* the first list is out */
	long watches;                    /* watch requests since the last
	                                    list began (its stream included) */
	int stream_refused;              /* said once: the server refused one */
	atomic_int hup;
	volatile int stop;
	pthread_t tid;
};

rs_code reflector_init(struct reflector *r, const struct watch_opts *o,
    const struct resource *res);
rs_code reflector_start(struct reflector *r);
/* From main on SIGHUP: relist and print everything, then SYNCED. */
void reflector_hup(struct reflector *r);

/* list.c: starts a list pass (snapshot: print unchanged objects too). */
void list_begin(struct reflector *r, int snapshot);
/* Starts the pass in progress over, after an expired continue token or a
 * streaming list cut short, by a stream or in pages: what the attempt so
 * far saw does not count, except that a snapshot does not print again
 * what it printed (marks from the snapshot's start on stay printed). */
void list_restart(struct reflector *r, int token_expired, int streaming);
/* One listed object (id: what event_objid read of it), printed as the
 * difference from what was printed. */
rs_code list_object(struct reflector *r, const struct objtext *t,
    const struct objid *id);
/* The pass is complete at rv: the objects it did not see are printed
 * DELETED, then SYNCED (the first list, a snapshot) or BOOKMARK; the
 * watch goes on from rv. */
rs_code list_complete(struct reflector *r, const char *rv);
/* Runs the list in progress to its end: RS_OK with everything printed and
 * r->rv set; otherwise the failure, with resp filled, to be retried by
 * calling again (it goes on from the page that failed). */
rs_code list_run(struct reflector *r, struct rs_kresp *resp);

/* watch.c: how one watch stream ended. */
struct watch_end {
	long events;                     /* events and bookmarks received */
	int64_t ns;                      /* how long it lasted */
	int expired;                     /* 410: a relist is due */
	char why[1200];                  /* an ERROR event's or parse message */
};
/* One watch from r->rv; prints events as they come. RS_OK when the stream
 * ended or was stopped; otherwise the failure, resp filled, or RS_EAPI or
 * RS_EPARSE with end->why for an ERROR event or a bad line (end->expired
 * for a 410 one). */
rs_code watch_run(struct reflector *r, struct watch_end *end,
    struct rs_kresp *resp);

/* "?a&labelSelector=..&fieldSelector=..&shardSelector=..": the path with
 * the query. */
char *reflector_url(const struct reflector *r, const char *query);

#endif
