#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"

/* A value and its header in one block: a value's address finds its
 * header, so a pod holds a plain pointer and drops it without a lookup. */
struct ient {
	uint32_t refs;
	uint32_t hash;
	uint32_t len;                  /* bytes of data */
	uint32_t labels;               /* data is a struct rs_labels */
	_Alignas(void *) char data[];
};

typedef int eq_fn(const struct ient *, const void *, size_t);

/* Open addressing over the entries, linear probing on the hash each entry
 * keeps, backward-shift deletion (no tombstones). */
static struct {
	struct ient **slot;
	size_t cap;                    /* a power of two, or 0 */
	size_t len;
} pool;

/* FNV-1a over the strings and their NULs (a NUL ends each one, so the
 * parts are told apart: ("ab", "c") is not ("a", "bc")). */
static uint32_t
strs_hash(const char *const *parts, size_t n, size_t *len)
{
	uint64_t h = 1469598103934665603ULL;

	*len = 0;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *s = (const unsigned char *)parts[i];

		do {
			h ^= *s;
			h *= 1099511628211ULL;
			++*len;
		} while (*s++ != '\0');
	}
	return (uint32_t)(h ^ (h >> 32));
}

static int
strs_eq(const struct ient *e, const void *arg, size_t n)
{
	const char *const *parts = arg;
	const char *d = e->data;

	if (e->labels)
		return 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(parts[i]) + 1;

		if ((size_t)(d - e->data) + l > e->len || memcmp(d, parts[i], l) != 0)
			return 0;
		d += l;
	}
	return (size_t)(d - e->data) == e->len;
}

static int
labels_eq(const struct ient *e, const void *arg, size_t n)
{
	return e->labels && rs_labels_equal((const void *)e->data, arg);
}

/* The slot of the entry eq accepts, or the empty slot where it would go. */
static size_t
find(uint32_t h, eq_fn *eq, const void *arg, size_t n)
{
	size_t mask = pool.cap - 1, i = h & mask;

	for (; pool.slot[i] != NULL; i = (i + 1) & mask)
		if (pool.slot[i]->hash == h && eq(pool.slot[i], arg, n))
			return i;
	return i;
}

static int
grow(void)
{
	size_t ncap = pool.cap ? pool.cap * 2 : 64;
	struct ient **ns = calloc(ncap, sizeof *ns);

	if (ns == NULL)
		return -1;
	for (size_t i = 0; i < pool.cap; i++) {
		struct ient *e = pool.slot[i];
		size_t j;

		if (e == NULL)
			continue;
		for (j = e->hash & (ncap - 1); ns[j] != NULL; j = (j + 1) & (ncap - 1))
			;
		ns[j] = e;
	}
	free(pool.slot);
	pool.slot = ns;
	pool.cap = ncap;
	return 0;
}

/* The entry eq accepts with one more reference, or NULL and *at, the slot
 * for a new one (the table has room for it). */
static struct ient *
lookup(uint32_t h, eq_fn *eq, const void *arg, size_t n, size_t *at)
{
	size_t i;

	if (pool.cap > 0) {
		i = find(h, eq, arg, n);
		if (pool.slot[i] != NULL) {
			if (pool.slot[i]->refs == UINT32_MAX)
				return NULL;
			pool.slot[i]->refs++;
			return pool.slot[i];
		}
	}
	if ((pool.len + 1) * 4 > pool.cap * 3 && grow() < 0) {
		*at = SIZE_MAX;
		return NULL;
	}
	*at = find(h, eq, arg, n);
	return NULL;
}

static struct ient *
insert(size_t at, uint32_t h, size_t len)
{
	struct ient *e;

	if (at == SIZE_MAX || len > UINT32_MAX ||
	    (e = malloc(sizeof *e + len)) == NULL)
		return NULL;
	e->refs = 1;
	e->hash = h;
	e->len = (uint32_t)len;
	e->labels = 0;
	pool.slot[at] = e;
	pool.len++;
	return e;
}

const char *
intern_strs(const char *const *parts, size_t n)
{
	size_t len, at = SIZE_MAX;
	uint32_t h = strs_hash(parts, n, &len);
	struct ient *e = lookup(h, strs_eq, parts, n, &at);
	char *d;

	if (e != NULL)
		return e->data;
	if ((e = insert(at, h, len)) == NULL)
		return NULL;
	d = e->data;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(parts[i]) + 1;

		memcpy(d, parts[i], l);
		d += l;
	}
	return e->data;
}

const char *
intern_str(const char *s)
{
	return intern_strs(&s, 1);
}

const struct rs_labels *
intern_labels(const struct rs_labels *l)
{
	uint64_t h64 = rs_labels_hash(l);
	uint32_t h = (uint32_t)(h64 ^ (h64 >> 32));
	size_t at = SIZE_MAX;
	struct ient *e = lookup(h, labels_eq, l, 0, &at);

	if (e != NULL)
		return (const void *)e->data;
	if ((e = insert(at, h, rs_labels_size(l))) == NULL)
		return NULL;
	e->labels = 1;
	return rs_labels_copy(l, e->data);
}

/* Backward shift: later entries of the probe run move into the hole. */
static void
unslot(size_t i)
{
	size_t mask = pool.cap - 1, j;

	for (j = (i + 1) & mask; pool.slot[j] != NULL; j = (j + 1) & mask) {
		size_t home = pool.slot[j]->hash & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			pool.slot[i] = pool.slot[j];
			i = j;
		}
	}
	pool.slot[i] = NULL;
	if (--pool.len == 0) {
		free(pool.slot);
		pool.slot = NULL;
		pool.cap = 0;
	}
}

void
intern_drop(const void *v)
{
	struct ient *e;
	size_t i;

	if (v == NULL)
		return;
	e = (struct ient *)((const char *)v - offsetof(struct ient, data));
	if (--e->refs > 0)
		return;
	for (i = e->hash & (pool.cap - 1); pool.slot[i] != e;
	    i = (i + 1) & (pool.cap - 1))
		;
	unslot(i);
	free(e);
}

size_t
intern_count(void)
{
	return pool.len;
}
