/* lru.c: a string-keyed cache that forgets its least recently used entry
 * past a fixed size, as golang/groupcache/lru does for client-go's event
 * correlator: Get and Add both count as a use. */
#include <stdlib.h>
#include <string.h>

#include "apply.h"

struct lru_entry {
	struct lru_entry *prev, *next;
	char *key;
	void *value;
};

void
lru_init(struct lru *c, size_t max, void (*free_value)(void *))
{
	memset(c, 0, sizeof *c);
	rs_strmap_init(&c->map);
	c->max = max;
	c->free_value = free_value;
}

static void
unlink_entry(struct lru *c, struct lru_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void
push_front(struct lru *c, struct lru_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (c->tail == NULL)
		c->tail = e;
}

void *
lru_get(struct lru *c, const char *key)
{
	struct lru_entry *e = rs_strmap_get(&c->map, key);

	if (e == NULL)
		return NULL;
	if (c->head != e) {
		unlink_entry(c, e);
		push_front(c, e);
	}
	return e->value;
}

static void
evict_oldest(struct lru *c)
{
	struct lru_entry *e = c->tail;

	unlink_entry(c, e);
	rs_strmap_del(&c->map, e->key);
	c->len--;
	if (c->free_value)
		c->free_value(e->value);
	free(e->key);
	free(e);
}

rs_code
lru_add(struct lru *c, const char *key, void *value)
{
	struct lru_entry *e = rs_strmap_get(&c->map, key);

	if (e != NULL) {
		if (e->value != value && c->free_value)
			c->free_value(e->value);
		e->value = value;
		if (c->head != e) {
			unlink_entry(c, e);
			push_front(c, e);
		}
		return RS_OK;
	}
	if ((e = calloc(1, sizeof *e)) == NULL ||
	    (e->key = strdup(key)) == NULL) {
		free(e);
		return RS_ENOMEM;
	}
	e->value = value;
	if (rs_strmap_put(&c->map, e->key, e, NULL) != RS_OK) {
		free(e->key);
		free(e);
		return RS_ENOMEM;
	}
	push_front(c, e);
	if (++c->len > c->max)
		evict_oldest(c);
	return RS_OK;
}
