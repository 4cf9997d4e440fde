#include <stdlib.h>
#include <string.h>

#include "delay.h"

void
rsq_heap_init(struct rsq_heap *h)
{
	memset(h, 0, sizeof *h);
}

void
rsq_heap_free(struct rsq_heap *h)
{
	free(h->v);
	memset(h, 0, sizeof *h);
}

static int
wait_before(const struct rsq_wait *a, const struct rsq_wait *b)
{
	if (a->due_ns != b->due_ns)
		return a->due_ns < b->due_ns;
	/* sequence numbers wrap; compare them as a window */
	return (int32_t)(a->seq - b->seq) < 0;
}

static void
heap_set(struct rsq_heap *h, struct rsq_item *items, uint32_t pos,
    struct rsq_wait w)
{
	h->v[pos] = w;
	items[w.item].heap = pos;
}

static void
heap_up(struct rsq_heap *h, struct rsq_item *items, uint32_t pos)
{
	struct rsq_wait w = h->v[pos];

	while (pos > 0) {
		uint32_t parent = (pos - 1) / 2;

		if (!wait_before(&w, &h->v[parent]))
			break;
		heap_set(h, items, pos, h->v[parent]);
		pos = parent;
	}
	heap_set(h, items, pos, w);
}

static void
heap_down(struct rsq_heap *h, struct rsq_item *items, uint32_t pos)
{
	struct rsq_wait w = h->v[pos];

	for (;;) {
		uint32_t c = pos * 2 + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && wait_before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!wait_before(&h->v[c], &w))
			break;
		heap_set(h, items, pos, h->v[c]);
		pos = c;
	}
	heap_set(h, items, pos, w);
}

int
rsq_heap_schedule(struct rsq_heap *h, struct rsq_item *items, uint32_t i,
    int64_t due_ns)
{
	struct rsq_wait w;

	if (items[i].heap != RSQ_NONE) {
		struct rsq_wait *cur = &h->v[items[i].heap];

		if (due_ns < cur->due_ns) {
			cur->due_ns = due_ns;
			heap_up(h, items, items[i].heap);
		}
		return 0;
	}
	if (h->n == h->cap) {
		uint32_t ncap = h->cap ? h->cap * 2 : 64;
		struct rsq_wait *nv = realloc(h->v, (size_t)ncap * sizeof *nv);

		if (nv == NULL)
			return -1;
		h->v = nv;
		h->cap = ncap;
	}
	w.due_ns = due_ns;
	w.seq = h->seq++;
	w.item = i;
	h->v[h->n++] = w;
	heap_up(h, items, h->n - 1);
	return 0;
}

uint32_t
rsq_heap_pop_due(struct rsq_heap *h, struct rsq_item *items, int64_t now)
{
	uint32_t i;

	if (h->n == 0 || h->v[0].due_ns > now)
		return RSQ_NONE;
	i = h->v[0].item;
	items[i].heap = RSQ_NONE;
	if (--h->n > 0) {
		heap_set(h, items, 0, h->v[h->n]);
		heap_down(h, items, 0);
	}
	return i;
}

int64_t
rsq_heap_next(const struct rsq_heap *h)
{
	return h->n ? h->v[0].due_ns : -1;
}
