/* keys.h: the interned keys of one queue. Every key the queue knows about
 * (queued, being processed, waiting in the delay heap, or with failures to
 * remember) has one item, found through an open-addressing hash table
 * (linear probing, backward-shift deletion) of 32-bit item indices. Items
 * live in one array and link to each other by index, so the only
 * allocation per key is the key text itself. Indices are stable while the
 * key lives; pointers into the array are not (it grows by realloc). */
#ifndef RSQ_KEYS_H
#define RSQ_KEYS_H

#include <stddef.h>
#include <stdint.h>

#define RSQ_NONE UINT32_MAX

/* item flags */
#define RSQ_USED       0x01   /* the slot holds a key */
#define RSQ_DIRTY      0x02   /* needs processing (client-go dirty set) */
#define RSQ_PROCESSING 0x04   /* handed out, no DONE yet */

struct rsq_item {
	char *key;
	uint32_t hash;
	uint16_t len;
	uint8_t flags;
	uint8_t unused;
	uint32_t next;        /* FIFO link; free-list link when not used */
	uint32_t heap;        /* position in the delay heap, or RSQ_NONE */
	uint32_t failures;    /* RETRYs since the last FORGET */
	uint32_t holder;      /* connection holding it, or RSQ_NONE */
	uint32_t hprev, hnext;/* the holder's list */
	int64_t added_ns;     /* first ADD since the last GET, or -1 */
	int64_t started_ns;   /* GET time while processing */
};

struct rsq_keys {
	struct rsq_item *items;
	uint32_t nitems;      /* slots ever used (high-water mark) */
	uint32_t cap;
	uint32_t free;        /* free-list head */
	uint32_t *slots;      /* item index + 1; 0 is empty */
	uint32_t mask;        /* slot count - 1 */
	uint32_t count;       /* live keys */
};

int rsq_keys_init(struct rsq_keys *k);
void rsq_keys_free(struct rsq_keys *k);
uint32_t rsq_keys_hash(const char *key, size_t len);
/* The item of key, or RSQ_NONE. */
uint32_t rsq_keys_find(const struct rsq_keys *k, const char *key, size_t len);
/* The item of key, created (all fields cleared) if missing; RSQ_NONE when
 * out of memory. */
uint32_t rsq_keys_intern(struct rsq_keys *k, const char *key, size_t len);
/* Forgets the key of item i and frees its slot. */
void rsq_keys_remove(struct rsq_keys *k, uint32_t i);

#endif
