/* event.h: the output line, one per event:
 *   {"type":"ADDED","resource":"pods","at":1795292352.123456,"object":{...}}
 *   {"type":"DELETED","resource":"pods","at":...,"final_state_unknown":true,"object":{...}}
 *   {"type":"ADDED","resource":"pods","at":...,"ref_managers":["m"],"object":{...}}
 *   {"type":"SYNCED","resource":"pods","at":...,"resourceVersion":"N"}
 *   {"type":"BOOKMARK","resource":"pods","at":...,"resourceVersion":"N"}
 * "at" is the wall clock (Unix seconds, microseconds) when the line was
 * written into the output buffer, just after the event was read. SYNCED
 * and BOOKMARK carry how far the stream has come: the resourceVersion of
 * the list, or of the server's bookmark (or of a relist, after its
 * difference). The members of every line come in this order: type,
 * resource, at, then the line's own.
 * "ref_managers": the managers of the object's managedFields entries that
 * own metadata.ownerReferences (who set its owners), when there are any:
 * the one thing of managedFields a consumer reads (rs-sync's take-over
 * guard), kept when the rest is cut.
 * Objects lose metadata.managedFields unless asked not to, and get the
 * apiVersion and kind that list responses leave out of their items.
 *
 * No tree is built: an object is scanned (jscan.h) in the text it came in,
 * and its line is the envelope written by hand around the object's own
 * bytes, less the managedFields member, with the members to add written
 * after its opening brace. */
#ifndef RS_WATCH_EVENT_H
#define RS_WATCH_EVENT_H

#include <stddef.h>

#include "code.h"
#include "jscan.h"
#include "linebuf.h"
#include "resourceversion.h"
#include "seen.h"

/* ref_managers kept at most: a create makes one entry, an adoption one
 * more; the rest of a longer list is left out. */
#define EVENT_MANAGERS_MAX 8

/* An object found in a validated text, and how it is to be printed. Spans
 * that were not found are empty (off == end). */
struct objtext {
	const char *buf;
	struct rs_jspan obj;
	size_t cut_off, cut_end;         /* left out: managedFields, a comma
	                                    (equal: nothing) */
	const char *add_api_version;     /* written after the brace, or NULL */
	const char *add_kind;
	int empty;                       /* no member of its own */
	struct rs_jspan kind;            /* its kind, when a string */
	struct rs_jspan name, ns, rv, uid;   /* metadata's, when strings */
	struct rs_jspan mgr[EVENT_MANAGERS_MAX];  /* ref_managers: strings as
	                                    written, each value once */
	size_t nmgr;
};

/* Scans obj, an object in buf that rs_jscan validated: its identity, the
 * managers that own its ownerReferences, the cut of metadata.managedFields
 * (trim), and the apiVersion and kind to add when it lacks them (NULL:
 * never). */
void event_scan(struct objtext *t, const char *buf, struct rs_jspan obj,
    int trim, const char *api_version, const char *kind);
/* The same for the next element of items (a list's), walked once: the
 * walk finds its end. RS_OK (an element that is no object has no
 * identity), RS_EEOF after the last, RS_EPARSE. */
rs_code event_scan_next(struct objtext *t, const char *buf,
    struct rs_jiter *items, int trim, const char *api_version,
    const char *kind);

/* The identity of an object: its key (namespace/name, or name), uid ("" if
 * none) and resourceVersion. RS_EPARSE without a name or rv, RS_ETOOBIG
 * when one does not fit. */
struct objid {
	char key[512];
	char rv[RS_RV_MAX], uid[256];
};
rs_code event_objid(const struct objtext *t, struct objid *id);

/* Renders and writes one line with an object; flush: write it out now. */
rs_code event_emit(struct linebuf *b, const char *type, const char *resource,
    int final_state_unknown, const struct objtext *t, int flush);
/* The same for a line without object that says how far the stream has
 * come (SYNCED, BOOKMARK): its resourceVersion; relist marks the BOOKMARK
 * that ends a relist ("relist":true after the resourceVersion). */
rs_code event_emit_rv(struct linebuf *b, const char *type,
    const char *resource, const char *rv, int relist, int flush);
/* DELETED with final_state_unknown, for an entry whose object is gone:
 * {"apiVersion","kind","metadata":{"name","namespace","uid","resourceVersion"}}. */
rs_code event_emit_gone(struct linebuf *b, const char *resource,
    const char *api_version, const char *kind, const struct seen_entry *e);

#endif
