/* event.h: the output line, one per event:
 *   {"type":"ADDED","resource":"pods","object":{...}}
 *   {"type":"DELETED","resource":"pods","final_state_unknown":true,"object":{...}}
 *   {"type":"SYNCED","resource":"pods"}
 * Objects lose metadata.managedFields unless asked not to, and get the
 * apiVersion and kind that list responses leave out of their items. */
#ifndef RS_WATCH_EVENT_H
#define RS_WATCH_EVENT_H

#include <stddef.h>
#include <cJSON.h>

#include "code.h"
#include "seen.h"

/* A growing buffer for rendering lines, one per thread. */
struct linebuf {
	char *p;
	size_t cap;
};

void linebuf_free(struct linebuf *b);

/* Removes metadata.managedFields; adds apiVersion and kind when absent
 * (and known: NULL leaves them absent). */
void event_prepare(cJSON *obj, int trim, const char *api_version,
    const char *kind);

/* The identity of an object: its key (namespace/name, or name), uid and
 * resourceVersion, pointing into obj. RS_EPARSE without a name or rv. */
struct objid {
	char key[512];
	const char *uid, *rv;
};
rs_code event_objid(const cJSON *obj, struct objid *id);

/* Renders and writes one line (obj NULL: no object, as SYNCED); flush:
 * write it out now. */
rs_code event_emit(struct linebuf *b, const char *type, const char *resource,
    int final_state_unknown, const cJSON *obj, int flush);
/* DELETED with final_state_unknown, for an entry whose object is gone:
 * {"apiVersion","kind","metadata":{"name","namespace","uid","resourceVersion"}}. */
rs_code event_emit_gone(struct linebuf *b, const char *resource,
    const char *api_version, const char *kind, const struct seen_entry *e);

#endif
