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

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* A uid of the form 8-4-4-4-12 lowercase hex, as 16 bytes into out: 1;
 * anything else: 0. */
static int
uid_pack(const char *uid, size_t len, unsigned char *out)
{
	size_t i, nib = 0;
	int v;

	if (len != 36)
		return 0;
	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (uid[i] != '-')
				return 0;
			continue;
		}
		if ((v = hexval(uid[i])) < 0)
			return 0;
		if (nib % 2 == 0)
			out[nib / 2] = (unsigned char)(v << 4);
		else
			out[nib / 2] |= (unsigned char)v;
		nib++;
	}
	return 1;
}

const char *
seen_uid(const struct seen_entry *e, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u;
	size_t i;
	char *p = buf;

	u = (const unsigned char *)seen_rv(e) + e->rvlen + 1;
	if (!e->uid_packed)
		return (const char *)u;
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[u[i] >> 4];
		*p++ = hex[u[i] & 15];
	}
	*p = '\0';
	return buf;
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
	size_t kl = strlen(key), rl = strlen(rv), ul = strlen(uid), stored;
	struct seen_entry **pp, *e, *old;
	uint32_t h = hash_key(key);
	unsigned char packed[16];
	int pack;
	rs_code rc;

	if (kl > UINT16_MAX || rl > UINT8_MAX || ul > UINT8_MAX)
		return RS_ETOOBIG;
	pack = uid_pack(uid, ul, packed);
	stored = pack ? 16 : ul + 1;
	if (s->n >= s->cap && (rc = grow(s)) != RS_OK)
		return rc;
	pp = slot(s, key, h);
	old = *pp;
	if (old && old->rvlen == rl && old->uid_packed == pack &&
	    old->uidlen == ul) {
		/* the usual update: same sizes, rewrite in place */
		e = old;
	} else {
		if ((e = malloc(sizeof *e + kl + rl + 2 + stored)) == NULL)
			return RS_ENOMEM;
		e->next = old ? old->next : NULL;
		e->hash = h;
		e->klen = kl;
		e->rvlen = rl;
		e->uidlen = ul;
		e->uid_packed = pack;
		memcpy(e->data, key, kl + 1);
		*pp = e;
		if (old)
			free(old);
		else
			s->n++;
	}
	e->mark = mark;
	memcpy(e->data + kl + 1, rv, rl + 1);
	memcpy(e->data + kl + 1 + rl + 1, pack ? (const void *)packed :
	    (const void *)uid, stored);
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
