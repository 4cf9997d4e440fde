#include <stdlib.h>
#include <string.h>

#include "keys.h"

#define KEYS_INIT 1024u

int
rsq_keys_init(struct rsq_keys *k)
{
	memset(k, 0, sizeof *k);
	k->free = RSQ_NONE;
	k->items = malloc(KEYS_INIT * sizeof *k->items);
	k->slots = calloc(KEYS_INIT * 2, sizeof *k->slots);
	if (k->items == NULL || k->slots == NULL) {
		rsq_keys_free(k);
		return -1;
	}
	k->cap = KEYS_INIT;
	k->mask = KEYS_INIT * 2 - 1;
	return 0;
}

void
rsq_keys_free(struct rsq_keys *k)
{
	uint32_t i;

	for (i = 0; k->items && i < k->nitems; i++)
		if (k->items[i].flags & RSQ_USED)
			free(k->items[i].key);
	free(k->items);
	free(k->slots);
	memset(k, 0, sizeof *k);
}

/* FNV-1a, then a murmur3 finalizer: keys differ mostly in their last
 * bytes and linear probing wants the low bits well mixed. */
uint32_t
rsq_keys_hash(const char *key, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 16777619u;
	}
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static uint32_t
keys_slot(const struct rsq_keys *k, const char *key, size_t len, uint32_t h)
{
	uint32_t s = h & k->mask, v;

	while ((v = k->slots[s]) != 0) {
		const struct rsq_item *it = &k->items[v - 1];

		if (it->hash == h && it->len == len &&
		    memcmp(it->key, key, len) == 0)
			return s;
		s = (s + 1) & k->mask;
	}
	return s;
}

uint32_t
rsq_keys_find(const struct rsq_keys *k, const char *key, size_t len)
{
	uint32_t s = keys_slot(k, key, len, rsq_keys_hash(key, len));

	return k->slots[s] ? k->slots[s] - 1 : RSQ_NONE;
}

/* Doubles the table when it is three quarters full. */
static int
keys_rehash(struct rsq_keys *k)
{
	uint32_t nmask = k->mask * 2 + 1, i;
	uint32_t *ns = calloc((size_t)nmask + 1, sizeof *ns);

	if (ns == NULL)
		return -1;
	for (i = 0; i <= k->mask; i++) {
		uint32_t v = k->slots[i], s;

		if (v == 0)
			continue;
		s = k->items[v - 1].hash & nmask;
		while (ns[s] != 0)
			s = (s + 1) & nmask;
		ns[s] = v;
	}
	free(k->slots);
	k->slots = ns;
	k->mask = nmask;
	return 0;
}

static uint32_t
keys_new_item(struct rsq_keys *k)
{
	uint32_t i;

	if (k->free != RSQ_NONE) {
		i = k->free;
		k->free = k->items[i].next;
		return i;
	}
	if (k->nitems == k->cap) {
		struct rsq_item *ni;

		if (k->cap >= RSQ_NONE / 2)
			return RSQ_NONE;
		ni = realloc(k->items, (size_t)k->cap * 2 * sizeof *ni);
		if (ni == NULL)
			return RSQ_NONE;
		k->items = ni;
		k->cap *= 2;
	}
	return k->nitems++;
}

uint32_t
rsq_keys_intern(struct rsq_keys *k, const char *key, size_t len)
{
	uint32_t h = rsq_keys_hash(key, len), s, i;
	struct rsq_item *it;
	char *copy;

	s = keys_slot(k, key, len, h);
	if (k->slots[s] != 0)
		return k->slots[s] - 1;
	if (len > UINT16_MAX)
		return RSQ_NONE;
	if ((size_t)(k->count + 1) * 4 > ((size_t)k->mask + 1) * 3) {
		if (keys_rehash(k) < 0)
			return RSQ_NONE;
		s = keys_slot(k, key, len, h);
	}
	if ((copy = malloc(len + 1)) == NULL)
		return RSQ_NONE;
	if ((i = keys_new_item(k)) == RSQ_NONE) {
		free(copy);
		return RSQ_NONE;
	}
	memcpy(copy, key, len);
	copy[len] = '\0';
	it = &k->items[i];
	memset(it, 0, sizeof *it);
	it->key = copy;
	it->hash = h;
	it->len = len;
	it->flags = RSQ_USED;
	it->next = it->heap = it->holder = it->hprev = it->hnext = RSQ_NONE;
	it->added_ns = -1;
	k->slots[s] = i + 1;
	k->count++;
	return i;
}

/* Backward-shift deletion: later entries of the probe run move up into
 * the hole, so lookups never need tombstones. */
static void
keys_unslot(struct rsq_keys *k, uint32_t s)
{
	uint32_t j = s, home, v;

	for (;;) {
		j = (j + 1) & k->mask;
		if ((v = k->slots[j]) == 0)
			break;
		home = k->items[v - 1].hash & k->mask;
		/* can v live at s? only if s lies on its probe path home..j */
		if (((j - home) & k->mask) >= ((j - s) & k->mask)) {
			k->slots[s] = v;
			s = j;
		}
	}
	k->slots[s] = 0;
}

void
rsq_keys_remove(struct rsq_keys *k, uint32_t i)
{
	struct rsq_item *it = &k->items[i];
	uint32_t s = it->hash & k->mask;

	while (k->slots[s] != i + 1)
		s = (s + 1) & k->mask;
	keys_unslot(k, s);
	free(it->key);
	it->key = NULL;
	it->flags = 0;
	it->next = k->free;
	k->free = i;
	k->count--;
}
