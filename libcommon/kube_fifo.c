/* kube_fifo.c: a FIFO of requests linked by their next, the one shape of
 * every queue the asynchronous interface keeps (kube_multi.c's requests
 * waiting for their start, kube_h2.c's waiting for a stream and ended). */
#include <stddef.h>

#include "kube_internal.h"

void
kfifo_push(struct kfifo *q, struct kreq *r)
{
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	q->n++;
}

void
kfifo_push_front(struct kfifo *q, struct kreq *r)
{
	r->next = q->head;
	q->head = r;
	if (q->tail == NULL)
		q->tail = r;
	q->n++;
}

struct kreq *
kfifo_pop(struct kfifo *q)
{
	struct kreq *r = q->head;

	if (r == NULL)
		return NULL;
	q->head = r->next;
	if (q->head == NULL)
		q->tail = NULL;
	r->next = NULL;
	q->n--;
	return r;
}

void
kfifo_remove(struct kfifo *q, struct kreq *r)
{
	struct kreq **pp, *prev = NULL;

	for (pp = &q->head; *pp && *pp != r; pp = &(*pp)->next)
		prev = *pp;
	if (*pp == NULL)
		return;
	*pp = r->next;
	if (q->tail == r)
		q->tail = prev;
	r->next = NULL;
	q->n--;
}
