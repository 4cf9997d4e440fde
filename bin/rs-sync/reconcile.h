/* reconcile.h: syncReplicaSet for one key: expectations, claim, scale,
 * status; its decisions are written as intents ending with "end". */
#ifndef RS_SYNC_RECONCILE_H
#define RS_SYNC_RECONCILE_H

#include "sync.h"

rs_code reconcile(struct sync *s, const char *key);

#endif
