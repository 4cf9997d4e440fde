/* takeover.h: the take-over guard. Upstream's controllers and ours must
 * never run side by side: two controllers of one ReplicaSet each create
 * what they think is missing and delete what they think is extra. When a
 * pod appears for a controller of ours and its owners were set by another
 * client, another controller is active: said once per controller (UID),
 * by an error line at once, a Warning Event at the controller's next
 * sync and the counter rs_sync_takeover_warnings_total, which /readyz
 * reads (rs-sync(1), Take-over guard; doc/operator-guide.md). */
#ifndef RS_SYNC_TAKEOVER_H
#define RS_SYNC_TAKEOVER_H

#include "code.h"
#include "strmap.h"

#define TAKEOVER_REASON "AnotherControllerActive"

struct sync;
struct ctrl;
struct pod;

struct takeover {
	struct rs_strmap warned;       /* controller UID -> struct warned */
	unsigned long warnings;        /* controllers warned about, ever */
};

/* A pod just ADDED (the handlers' add) with a controllerRef to r; the
 * managers are the event line's ref_managers (rs-watch(1)): s->line and
 * s->ref_managers (sync.h). Warns when the pods are synced, the managers
 * are known and none of them is rs-apply's (RS_FIELD_MANAGER), and r was
 * not warned about. */
void takeover_pod_added(struct sync *s, const struct ctrl *r,
    const struct pod *p);
/* At r's sync: the Event of its warning, the first time only. */
rs_code takeover_emit(struct sync *s, const struct ctrl *r);
/* r is gone (or came back with another UID): its entry goes. */
void takeover_forget(struct takeover *t, const char *uid);
void takeover_free(struct takeover *t);

#endif
