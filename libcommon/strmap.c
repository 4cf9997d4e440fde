#include <stdlib.h>
#include <string.h>

#include "strmap.h"

/* FNV-1a: short keys, good enough spread for namespace/name strings. */
uint64_t
rs_strhash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	while (len-- > 0) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ULL;
	}
	return h ^ (h >> 29);
}

void
rs_strmap_init(struct rs_strmap *m)
{
	memset(m, 0, sizeof *m);
}

void
rs_strmap_free(struct rs_strmap *m)
{
	free(m->slots);
	rs_strmap_init(m);
}

static size_t
find_slot(const struct rs_strmap *m, const char *key, size_t len, uint64_t h)
{
	size_t mask = m->cap - 1, i = h & mask;

	while (m->slots[i].key != NULL) {
		if (m->slots[i].hash == h && strncmp(m->slots[i].key, key, len) == 0 &&
		    m->slots[i].key[len] == '\0')
			return i;
		i = (i + 1) & mask;
	}
	return i;
}

void *
rs_strmap_getn(const struct rs_strmap *m, const char *key, size_t len)
{
	if (m->cap == 0)
		return NULL;
	size_t i = find_slot(m, key, len, rs_strhash(key, len));
	return m->slots[i].key ? m->slots[i].value : NULL;
}

void *
rs_strmap_get(const struct rs_strmap *m, const char *key)
{
	return rs_strmap_getn(m, key, strlen(key));
}

static rs_code
grow(struct rs_strmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 16, i;
	struct rs_strmap_slot *old = m->slots, *ns;
	size_t ocap = m->cap;

	if ((ns = calloc(ncap, sizeof *ns)) == NULL)
		return RS_ENOMEM;
	m->slots = ns;
	m->cap = ncap;
	for (i = 0; i < ocap; i++) {
		if (old[i].key == NULL)
			continue;
		size_t j = old[i].hash & (ncap - 1);
		while (ns[j].key != NULL)
			j = (j + 1) & (ncap - 1);
		ns[j] = old[i];
	}
	free(old);
	return RS_OK;
}

rs_code
rs_strmap_put(struct rs_strmap *m, const char *key, void *value, void **old)
{
	size_t len = strlen(key), i;
	uint64_t h = rs_strhash(key, len);

	if (old)
		*old = NULL;
	if ((m->len + 1) * 4 > m->cap * 3 && grow(m) != RS_OK)
		return RS_ENOMEM;
	i = find_slot(m, key, len, h);
	if (m->slots[i].key != NULL) {
		if (old)
			*old = m->slots[i].value;
		m->slots[i].key = key;
		m->slots[i].value = value;
		return RS_OK;
	}
	m->slots[i].key = key;
	m->slots[i].value = value;
	m->slots[i].hash = h;
	m->len++;
	return RS_OK;
}

void *
rs_strmap_del(struct rs_strmap *m, const char *key)
{
	size_t len = strlen(key), mask, i, j;
	void *v;

	if (m->cap == 0)
		return NULL;
	mask = m->cap - 1;
	i = find_slot(m, key, len, rs_strhash(key, len));
	if (m->slots[i].key == NULL)
		return NULL;
	v = m->slots[i].value;
	/* backward shift: pull later entries of the probe run into the hole */
	for (j = (i + 1) & mask; m->slots[j].key != NULL; j = (j + 1) & mask) {
		size_t home = m->slots[j].hash & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].key = NULL;
	m->slots[i].value = NULL;
	m->len--;
	return v;
}

int
rs_strmap_next(const struct rs_strmap *m, size_t *i, const char **key,
    void **value)
{
	while (*i < m->cap) {
		size_t k = (*i)++;

		if (m->slots[k].key != NULL) {
			if (key)
				*key = m->slots[k].key;
			if (value)
				*value = m->slots[k].value;
			return 1;
		}
	}
	return 0;
}
