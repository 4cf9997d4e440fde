/* handlers.h: the informer event handlers of the upstream controller
 * (addRS, updateRS, deleteRS, addPod, updatePod, deletePod), fed by
 * rs-watch's NDJSON events. */
#ifndef RS_SYNC_HANDLERS_H
#define RS_SYNC_HANDLERS_H

#include <stddef.h>
#include "sync.h"

/* Applies one line of rs-watch's stream: an event to the cache, running
 * the handlers; SYNCED and BOOKMARK to the read position (sync_read_rv),
 * which every line of our resources moves; the BOOKMARK that ends a relist
 * of the controllers queues every one of them. A bad line is reported and
 * skipped (RS_EPARSE); the caller goes on. */
rs_code handle_event(struct sync *s, const char *line, size_t len);
/* Queues every cached controller, as a resync or a relist's update
 * handlers do (a relist's: with its event time). */
void handlers_enqueue_all(struct sync *s);

#endif
