/* labels.h: an object's label set (metadata.labels), compact and immutable.
 * One block per set (its own malloc block, or the caller's memory for
 * rs_labels_copy): the header, the pairs sorted by key (byte order, as Go
 * compares strings), then the strings themselves. It holds nothing else:
 * rs-sync keeps one per distinct label set of its cached pods.
 * A NULL set is accepted everywhere and means "no labels". */
#ifndef RS_LABELS_H
#define RS_LABELS_H

#include <stddef.h>
#include <stdint.h>
#include <cJSON.h>

#include "code.h"
#include "jscan.h"

struct rs_label {
	const char *key;
	const char *value;
};

struct rs_labels {
	size_t n;
	struct rs_label kv[];   /* sorted by key, keys unique */
};

/* Builds a set from a JSON object of string to string. NULL, a missing
 * field or JSON null give an empty set (Go decodes null to a nil map). A
 * value that is not a string, or obj not an object, is RS_EPARSE with the
 * reason in why (if why is not NULL). A key given twice keeps its last
 * value, as Go's decoder does. Keys and values are not validated: the API
 * server did that. Free with rs_labels_free. */
rs_code rs_labels_from_json(const cJSON *obj, struct rs_labels **out,
    char *why, size_t whylen);

/* The same from the JSON text of a value that rs_jscan validated: an
 * empty span (absent) or null give an empty set. */
rs_code rs_labels_from_jscan(const char *buf, struct rs_jspan obj,
    struct rs_labels **out, char *why, size_t whylen);

/* The value of key, or NULL if the set has no such key. */
const char *rs_labels_get(const struct rs_labels *l, const char *key);

/* 1 if both sets hold the same pairs (NULL equals an empty set). */
int rs_labels_equal(const struct rs_labels *a, const struct rs_labels *b);

void rs_labels_free(struct rs_labels *l);

/* For a caller that keeps sets elsewhere than in their own block (rs-sync
 * shares one copy among the pods that carry the same labels): */

/* A hash of the pairs: sets that rs_labels_equal hash the same. */
uint64_t rs_labels_hash(const struct rs_labels *l);

/* The bytes a copy of l takes (header, pairs and strings). */
size_t rs_labels_size(const struct rs_labels *l);

/* Copies l (NULL copies as an empty set) into mem, rs_labels_size(l)
 * bytes aligned for a pointer, and returns the copy. It lives in mem: do
 * not rs_labels_free it. */
struct rs_labels *rs_labels_copy(const struct rs_labels *l, void *mem);

#endif
