/* seen.h: what rs-watch has printed for one resource, kept compact.
 *
 * For each object printed and not yet deleted: its key (namespace/name, or
 * name for cluster-scoped objects), resourceVersion and uid, and nothing
 * else: some 80 bytes an object with malloc's own (a 20-byte key, a
 * 6-digit resourceVersion), so 100,000 pods cost some 9 MB with the
 * table. A relist compares against this to print only the difference; a
 * deletion the watch never delivered is printed from it as a minimal
 * object.
 * A uid in the form the API server makes (8-4-4-4-12 lowercase hex) is
 * kept as its 16 bytes, not its 37: 16 to 32 bytes less an entry after
 * malloc's rounding (bench/scale/abstart at 100,000 pods and 10,000
 * ReplicaSets: rs-watch's peak 22.9 -> 21.2 MB). Any other uid is kept
 * as written.
 *
 * Each entry carries the list pass that last saw it: a relist bumps the
 * pass, marks what it lists, then sweeps out what it did not mark. */
#ifndef RS_WATCH_SEEN_H
#define RS_WATCH_SEEN_H

#include <stddef.h>
#include <stdint.h>
#include "code.h"

struct seen_entry {
	struct seen_entry *next;     /* hash chain */
	uint32_t hash;
	uint32_t mark;               /* list pass that last saw it */
	uint16_t klen;
	uint8_t rvlen, uidlen;
	uint8_t uid_packed;          /* the uid is its 16 bytes */
	char data[];                 /* key NUL rv NUL, then the uid: its 16
	                                bytes, or its text and NUL */
};

#define SEEN_UID_MAX 256         /* a uid as text, with its NUL */

struct seen {
	struct seen_entry **tab;
	size_t cap;                  /* a power of two, or 0 */
	size_t n;
};

void seen_init(struct seen *s);
void seen_free(struct seen *s);

static inline const char *seen_key(const struct seen_entry *e)
{ return e->data; }
static inline const char *seen_rv(const struct seen_entry *e)
{ return e->data + e->klen + 1; }
/* The uid as text; a packed one is written into buf (SEEN_UID_MAX). */
const char *seen_uid(const struct seen_entry *e, char *buf);

struct seen_entry *seen_get(const struct seen *s, const char *key);
/* Inserts or updates key with rv and uid, marked with mark. Keys are at
 * most 65535 bytes, rv and uid at most 255 (else RS_ETOOBIG), as
 * event_objid reads them. */
rs_code seen_put(struct seen *s, const char *key, const char *rv,
    const char *uid, uint32_t mark);
/* Removes key if present. */
void seen_del(struct seen *s, const char *key);

/* Removes every entry whose mark is not mark, calling fn on it first. */
typedef rs_code (*seen_fn)(void *arg, const struct seen_entry *e);
rs_code seen_sweep(struct seen *s, uint32_t mark, seen_fn fn, void *arg);

#endif
