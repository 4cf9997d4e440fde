/* delay.h: the keys waiting for a time (AFTER, RETRY), a binary min-heap
 * ordered by due time, then by arrival so that keys due at the same time
 * come out in the order they were delayed. Each item knows its position
 * (rsq_item.heap), so an earlier AFTER for a waiting key moves it up in
 * O(log n) (client-go keeps the earlier of two times). */
#ifndef RSQ_DELAY_H
#define RSQ_DELAY_H

#include <stdint.h>

#include "keys.h"

struct rsq_wait {
	int64_t due_ns;
	uint32_t seq;
	uint32_t item;
};

struct rsq_heap {
	struct rsq_wait *v;
	uint32_t n, cap;
	uint32_t seq;
};

void rsq_heap_init(struct rsq_heap *h);
void rsq_heap_free(struct rsq_heap *h);
/* Adds item i due at due_ns, or moves it earlier if it already waits for
 * a later time; a later time never postpones it. -1 when out of memory. */
int rsq_heap_schedule(struct rsq_heap *h, struct rsq_item *items, uint32_t i,
    int64_t due_ns);
/* The item due first if it is due at now, removed; else RSQ_NONE. */
uint32_t rsq_heap_pop_due(struct rsq_heap *h, struct rsq_item *items,
    int64_t now);
/* Due time of the first item, or -1 when the heap is empty. */
int64_t rsq_heap_next(const struct rsq_heap *h);

#endif
