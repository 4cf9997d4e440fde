/* intents.h: the lines rs-sync writes for rs-apply (doc/intents.md). */
#ifndef RS_SYNC_INTENTS_H
#define RS_SYNC_INTENTS_H

#include <cJSON.h>
#include "sync.h"

/* {"op":op,"key":key,"owner":{...}}; r may be NULL (no owner). */
cJSON *intent_new(const struct sync *s, const char *op, const char *key,
    const struct ctrl *r);
/* {"name":..,"uid":..} of a pod, added to arr. */
void intent_add_pod(cJSON *arr, const struct pod *p);
/* Writes the intent as one line and frees it. */
rs_code intent_emit(struct sync *s, cJSON *take);

#endif
