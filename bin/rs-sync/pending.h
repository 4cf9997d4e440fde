/* pending.h: for each key queued because of an event and not yet synced,
 * when the earliest such event was read by rs-watch (its "at"). The sync
 * of the key hands the time on in its end intent (event_at,
 * doc/intents.md), so that rs-apply can tell how long the key took from
 * that event to its last write.
 *
 * Only keys waiting for a sync are held: a sync takes its key's time out.
 * What the queue could lose (an ADD that failed) would stay, so the map is
 * bounded by the caller; past the bound, the keys the caller no longer
 * knows (controllers deleted) are dropped first. */
#ifndef RS_SYNC_PENDING_H
#define RS_SYNC_PENDING_H

#include <stddef.h>

#include "code.h"
#include "strmap.h"

struct pending {
	struct rs_strmap map;          /* key -> struct pending_entry */
};

/* Whether key is to be kept when the map is full. */
typedef int (*pending_keep_fn)(void *arg, const char *key);

/* A zeroed struct pending is empty; this frees what it holds. */
void pending_free(struct pending *p);
/* Remembers at (> 0) for key, unless a time is remembered already: the
 * earliest event not yet acted on wins. With bound entries held, those
 * keep refuses are dropped; if that leaves bound or more, at is not
 * remembered (RS_EFULL). RS_ENOMEM. */
rs_code pending_note(struct pending *p, const char *key, double at,
    size_t bound, pending_keep_fn keep, void *arg);
/* The time remembered for key, forgotten; 0 when none. */
double pending_take(struct pending *p, const char *key);
/* Keys held. */
size_t pending_len(const struct pending *p);

#endif
