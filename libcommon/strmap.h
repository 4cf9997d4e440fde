/* strmap.h: a string-keyed hash map of pointers (open addressing, linear
 * probing, backward-shift deletion: no tombstones, so lookups stay short
 * under churn). The map does not own keys or values: the caller keeps each
 * key alive while it is in the map (usually the key lives in the value). */
#ifndef RS_STRMAP_H
#define RS_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "code.h"

struct rs_strmap_slot {
	const char *key;
	void *value;
	uint64_t hash;
};

struct rs_strmap {
	struct rs_strmap_slot *slots;
	size_t cap;       /* a power of two, or 0 */
	size_t len;
};

uint64_t rs_strhash(const char *s, size_t len);

void rs_strmap_init(struct rs_strmap *m);
/* Frees the table and leaves m empty, ready to be used again. */
void rs_strmap_free(struct rs_strmap *m);
void *rs_strmap_get(const struct rs_strmap *m, const char *key);
/* Same, for a key that is not NUL-terminated. */
void *rs_strmap_getn(const struct rs_strmap *m, const char *key, size_t len);
/* Inserts or replaces; *old (if not NULL) gets the value replaced or NULL. */
rs_code rs_strmap_put(struct rs_strmap *m, const char *key, void *value,
    void **old);
/* Removes key; returns its value or NULL. */
void *rs_strmap_del(struct rs_strmap *m, const char *key);

/* Iteration: for (i = 0; rs_strmap_next(m, &i, &k, &v); ) ... Do not
 * insert while iterating; deleting the current entry is not allowed either. */
int rs_strmap_next(const struct rs_strmap *m, size_t *i, const char **key,
    void **value);

#endif
