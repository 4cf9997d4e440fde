#include <stdlib.h>
#include <string.h>

#include "seen.h"

/* FNV-1a: keys are short and this is not exposed to hostile input beyond
 * object names the API server accepted. */
static uint32_t
hash_key(const char *k)
{
	uint32_t h = 2166136261u;

	for (; *k; k++) {
		h ^= (unsigned char)*k;
		h *= 16777619u;
	}
	return h;
}

void
seen_init(struct seen *s)
{
	memset(s, 0, sizeof *s);
}

void
seen_free(struct seen *s)
{
	size_t i;

	for (i = 0; i < s->cap; i++) {
		struct seen_entry *e = s->tab[i], *nx;

		for (; e; e = nx) {
			nx = e->next;
			free(e);
		}
	}
	free(s->tab);
	seen_init(s);
}

static struct seen_entry **
slot(const struct seen *s, const char *key, uint32_t h)
{
	struct seen_entry **pp = &s->tab[h & (s->cap - 1)];

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == h && strcmp((*pp)->data, key) == 0)
			break;
	return pp;
}

struct seen_entry *
seen_get(const struct seen *s, const char *key)
{
	if (s->cap == 0)
		return NULL;
	return *slot(s, key, hash_key(key));
}

static rs_code
grow(struct seen *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024, i;
	struct seen_entry **nt = calloc(ncap, sizeof *nt);

	if (nt == NULL)
		return RS_ENOMEM;
	for (i = 0; i < s->cap; i++) {
		struct seen_entry *e = s->tab[i], *nx;

		for (; e; e = nx) {
			nx = e->next;
			e->next = nt[e->hash & (ncap - 1)];
			nt[e->hash & (ncap - 1)] = e;
		}
	}
	free(s->tab);
	s->tab = nt;
	s->cap = ncap;
	return RS_OK;
}

rs_code
seen_put(struct seen *s, const char *key, const char *rv, const char *uid,
    uint32_t mark)
{
	size_t kl = strlen(key), rl = strlen(rv), ul = strlen(uid);
	struct seen_entry **pp, *e, *old;
	uint32_t h = hash_key(key);
	rs_code rc;

	if (kl > UINT16_MAX || rl > UINT8_MAX || ul > UINT8_MAX)
		return RS_ETOOBIG;
	if (s->n >= s->cap && (rc = grow(s)) != RS_OK)
		return rc;
	pp = slot(s, key, h);
	old = *pp;
	if (old && old->rvlen == rl && old->uidlen == ul) {
		/* the usual update: same sizes, rewrite in place */
		e = old;
	} else {
		if ((e = malloc(sizeof *e + kl + rl + ul + 3)) == NULL)
			return RS_ENOMEM;
		e->next = old ? old->next : NULL;
		e->hash = h;
		e->klen = kl;
		e->rvlen = rl;
		e->uidlen = ul;
		memcpy(e->data, key, kl + 1);
		*pp = e;
		if (old)
			free(old);
		else
			s->n++;
	}
	e->mark = mark;
	memcpy(e->data + kl + 1, rv, rl + 1);
	memcpy(e->data + kl + 1 + rl + 1, uid, ul + 1);
	return RS_OK;
}

void
seen_del(struct seen *s, const char *key)
{
	struct seen_entry **pp, *e;

	if (s->cap == 0)
		return;
	pp = slot(s, key, hash_key(key));
	if ((e = *pp) == NULL)
		return;
	*pp = e->next;
	free(e);
	s->n--;
}

rs_code
seen_sweep(struct seen *s, uint32_t mark, seen_fn fn, void *arg)
{
	size_t i;
	rs_code rc;

	for (i = 0; i < s->cap; i++) {
		struct seen_entry **pp = &s->tab[i], *e;

		while ((e = *pp) != NULL) {
			if (e->mark == mark) {
				pp = &e->next;
				continue;
			}
			if (fn && (rc = fn(arg, e)) != RS_OK)
				return rc;
			*pp = e->next;
			free(e);
			s->n--;
		}
	}
	return RS_OK;
}
