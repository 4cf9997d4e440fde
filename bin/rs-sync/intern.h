/* intern.h: one shared, reference-counted, immutable copy of each value
 * that many cached pods hold alike: a namespace, a node name, a
 * controllerRef (kind, name, UID), a label set. A pod takes a reference on
 * each of its values when decoded and drops them when freed, so a pod that
 * left the cache (a handler's `old`) keeps its values until its own free,
 * whatever happened to the cache meanwhile.
 * One pool per process, since pod_decode works without a cache at hand;
 * it is not thread-safe (rs-sync has one thread). The pool's table is
 * freed when its last value is. */
#ifndef RS_SYNC_INTERN_H
#define RS_SYNC_INTERN_H

#include <stddef.h>

#include "labels.h"

/* The shared copy of the n strings parts[0..n), laid end to end, each
 * with its NUL: the return value is the copy of parts[0], the copy of
 * parts[1] follows its NUL, and so on. NULL when out of memory (or
 * when the value already has 2^32 - 1 references). */
const char *intern_strs(const char *const *parts, size_t n);

/* intern_strs of one string. */
const char *intern_str(const char *s);

/* The shared copy of a set equal to l (NULL is the empty set); l itself
 * is left to the caller. NULL as for intern_strs. */
const struct rs_labels *intern_labels(const struct rs_labels *l);

/* Drops a reference on v, taken by one of the above; NULL is ignored. The
 * value is freed with its last reference. */
void intern_drop(const void *v);

/* Distinct values in the pool. */
size_t intern_count(void);

#endif
