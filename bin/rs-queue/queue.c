#include <stdlib.h>
#include <string.h>

#include "queue.h"

#define NS 1e9

void
rsq_config_default(struct rsq_config *c)
{
	c->base_delay_ns = RSQ_BASE_DELAY_NS;
	c->max_delay_ns = RSQ_MAX_DELAY_NS;
	c->qps = RSQ_QPS;
	c->burst = RSQ_BURST;
}

rs_code
rsq_init(struct rsq *q, const struct rsq_config *c)
{
	memset(q, 0, sizeof *q);
	if (rsq_keys_init(&q->k) < 0)
		return RS_ENOMEM;
	rsq_heap_init(&q->heap);
	rsq_limiter_init(&q->lim, c->base_delay_ns, c->max_delay_ns, c->qps,
	    c->burst);
	q->head = q->tail = RSQ_NONE;
	return RS_OK;
}

void
rsq_free(struct rsq *q)
{
	rsq_keys_free(&q->k);
	rsq_heap_free(&q->heap);
	free(q->holders);
	memset(q, 0, sizeof *q);
}

static struct rsq_item *
item(const struct rsq *q, uint32_t i)
{
	return &q->k.items[i];
}

static void
fifo_push(struct rsq *q, uint32_t i)
{
	item(q, i)->next = RSQ_NONE;
	if (q->tail == RSQ_NONE)
		q->head = i;
	else
		item(q, q->tail)->next = i;
	q->tail = i;
	q->len++;
}

static uint32_t
fifo_pop(struct rsq *q)
{
	uint32_t i = q->head;

	if (i == RSQ_NONE)
		return i;
	q->head = item(q, i)->next;
	if (q->head == RSQ_NONE)
		q->tail = RSQ_NONE;
	q->len--;
	return i;
}

/* A key nothing refers to any more is forgotten, so that memory follows
 * the keys in use, not every key ever seen. */
static void
maybe_free(struct rsq *q, uint32_t i)
{
	struct rsq_item *it = item(q, i);

	if ((it->flags & (RSQ_DIRTY | RSQ_PROCESSING)) == 0 &&
	    it->heap == RSQ_NONE && it->failures == 0)
		rsq_keys_remove(&q->k, i);
}

/* client-go Add, past its shutdown check. */
static void
add_item(struct rsq *q, uint32_t i, int64_t now)
{
	struct rsq_item *it = item(q, i);

	if (it->flags & RSQ_DIRTY)
		return;
	q->adds++;
	q->depth++;
	if (it->added_ns < 0)
		it->added_ns = now;
	it->flags |= RSQ_DIRTY;
	if (it->flags & RSQ_PROCESSING)
		return;
	fifo_push(q, i);
}

rs_code
rsq_add(struct rsq *q, const char *key, size_t len, int64_t now)
{
	uint32_t i;

	if (q->shutting_down)
		return RS_EREFUSED;
	if ((i = rsq_keys_intern(&q->k, key, len)) == RSQ_NONE)
		return RS_ENOMEM;
	add_item(q, i, now);
	return RS_OK;
}

static void
holder_link(struct rsq *q, uint32_t i, uint32_t h)
{
	struct rsq_item *it = item(q, i);

	it->holder = h;
	it->hprev = RSQ_NONE;
	it->hnext = q->holders[h];
	if (it->hnext != RSQ_NONE)
		item(q, it->hnext)->hprev = i;
	q->holders[h] = i;
}

static void
holder_unlink(struct rsq *q, uint32_t i)
{
	struct rsq_item *it = item(q, i);

	if (it->holder == RSQ_NONE)
		return;
	if (it->hprev != RSQ_NONE)
		item(q, it->hprev)->hnext = it->hnext;
	else
		q->holders[it->holder] = it->hnext;
	if (it->hnext != RSQ_NONE)
		item(q, it->hnext)->hprev = it->hprev;
	it->holder = it->hprev = it->hnext = RSQ_NONE;
}

uint32_t
rsq_get(struct rsq *q, uint32_t holder, int64_t now)
{
	struct rsq_item *it;
	uint32_t i;

	if (q->shutting_down || (i = fifo_pop(q)) == RSQ_NONE)
		return RSQ_NONE;
	it = item(q, i);
	q->depth--;
	if (it->added_ns >= 0)
		rsq_hist_observe(&q->queue_duration, (now - it->added_ns) / NS);
	it->added_ns = -1;
	it->started_ns = now;
	it->flags = (it->flags | RSQ_PROCESSING) & ~RSQ_DIRTY;
	q->processing++;
	if (holder != RSQ_NONE)
		holder_link(q, i, holder);
	return i;
}

const char *
rsq_key(const struct rsq *q, uint32_t i, size_t *len)
{
	*len = item(q, i)->len;
	return item(q, i)->key;
}

static rs_code
done_item(struct rsq *q, uint32_t i, int64_t now)
{
	struct rsq_item *it = item(q, i);

	if ((it->flags & RSQ_PROCESSING) == 0)
		return RS_ENOTFOUND;
	rsq_hist_observe(&q->work_duration, (now - it->started_ns) / NS);
	holder_unlink(q, i);
	it->flags &= ~RSQ_PROCESSING;
	q->processing--;
	if (it->flags & RSQ_DIRTY)
		fifo_push(q, i);
	else
		maybe_free(q, i);
	return RS_OK;
}

rs_code
rsq_done(struct rsq *q, const char *key, size_t len, int64_t now)
{
	uint32_t i = rsq_keys_find(&q->k, key, len);

	return i == RSQ_NONE ? RS_ENOTFOUND : done_item(q, i, now);
}

rs_code
rsq_forget(struct rsq *q, const char *key, size_t len)
{
	uint32_t i = rsq_keys_find(&q->k, key, len);

	if (i != RSQ_NONE) {
		item(q, i)->failures = 0;
		maybe_free(q, i);
	}
	return RS_OK;
}

/* client-go AddAfter for an interned item, past its shutdown check. */
static rs_code
after_item(struct rsq *q, uint32_t i, int64_t delay, int64_t now)
{
	q->retries++;
	if (delay <= 0) {
		add_item(q, i, now);
		return RS_OK;
	}
	if (delay > INT64_MAX - now)
		delay = INT64_MAX - now;
	if (rsq_heap_schedule(&q->heap, q->k.items, i, now + delay) < 0) {
		maybe_free(q, i);
		return RS_ENOMEM;
	}
	return RS_OK;
}

rs_code
rsq_after(struct rsq *q, const char *key, size_t len, int64_t delay_ns,
    int64_t now)
{
	uint32_t i;

	if (q->shutting_down)
		return RS_EREFUSED;
	if ((i = rsq_keys_intern(&q->k, key, len)) == RSQ_NONE)
		return RS_ENOMEM;
	return after_item(q, i, delay_ns, now);
}

rs_code
rsq_retry(struct rsq *q, const char *key, size_t len, int64_t now,
    int64_t *delay_ns)
{
	uint32_t i;
	int64_t d;

	if (q->shutting_down)
		return RS_EREFUSED;
	if ((i = rsq_keys_intern(&q->k, key, len)) == RSQ_NONE)
		return RS_ENOMEM;
	d = rsq_limiter_when(&q->lim, &item(q, i)->failures, now);
	if (delay_ns)
		*delay_ns = d;
	return after_item(q, i, d, now);
}

uint32_t
rsq_failures(const struct rsq *q, const char *key, size_t len)
{
	uint32_t i = rsq_keys_find(&q->k, key, len);

	return i == RSQ_NONE ? 0 : item(q, i)->failures;
}

size_t
rsq_tick(struct rsq *q, int64_t now)
{
	size_t n = 0;
	uint32_t i;

	if (q->shutting_down)
		return 0;
	while ((i = rsq_heap_pop_due(&q->heap, q->k.items, now)) != RSQ_NONE) {
		add_item(q, i, now);
		n++;
	}
	return n;
}

int64_t
rsq_next_due(const struct rsq *q)
{
	return q->shutting_down ? -1 : rsq_heap_next(&q->heap);
}

rs_code
rsq_holder_reserve(struct rsq *q, uint32_t h)
{
	uint32_t n = q->nholders ? q->nholders : 16, i;
	uint32_t *nh;

	if (h < q->nholders)
		return RS_OK;
	while (n <= h)
		n *= 2;
	if ((nh = realloc(q->holders, (size_t)n * sizeof *nh)) == NULL)
		return RS_ENOMEM;
	for (i = q->nholders; i < n; i++)
		nh[i] = RSQ_NONE;
	q->holders = nh;
	q->nholders = n;
	return RS_OK;
}

void
rsq_release(struct rsq *q, uint32_t h, int64_t now)
{
	uint32_t i, prev;

	if (h >= q->nholders || (i = q->holders[h]) == RSQ_NONE)
		return;
	/* the list is newest first: walk back from its end so that keys
	 * go back in the order they were handed out */
	while (item(q, i)->hnext != RSQ_NONE)
		i = item(q, i)->hnext;
	for (; i != RSQ_NONE; i = prev) {
		prev = item(q, i)->hprev;
		/* marked dirty first, so that DONE queues it again */
		if (!q->shutting_down)
			add_item(q, i, now);
		done_item(q, i, now);
	}
}

void
rsq_shutdown(struct rsq *q)
{
	q->shutting_down = 1;
}

int
rsq_drained(const struct rsq *q)
{
	return q->shutting_down && q->processing == 0;
}

size_t
rsq_len(const struct rsq *q)
{
	return q->len;
}

void
rsq_stats(const struct rsq *q, int64_t now, struct rsq_stats *s)
{
	uint32_t i;

	memset(s, 0, sizeof *s);
	s->depth = q->depth;
	s->len = q->len;
	s->processing = q->processing;
	s->waiting = q->heap.n;
	s->keys = q->k.count;
	s->adds = q->adds;
	s->retries = q->retries;
	s->queue_duration = q->queue_duration;
	s->work_duration = q->work_duration;
	s->shutting_down = q->shutting_down;
	for (i = 0; i < q->k.nitems && q->processing > 0; i++) {
		const struct rsq_item *it = item(q, i);
		double age;

		if ((it->flags & RSQ_PROCESSING) == 0)
			continue;
		age = (now - it->started_ns) / NS;
		s->unfinished += age;
		if (age > s->longest)
			s->longest = age;
	}
}
