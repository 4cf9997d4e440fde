#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labels.h"
#include "strmap.h"

/* The strings were copied in input order, so for equal keys the address
 * tells which came last; that one must sort last to win. */
static int
pair_cmp(const void *a, const void *b)
{
	const struct rs_label *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c != 0)
		return c;
	return (x->key > y->key) - (x->key < y->key);
}

/* The n pairs of l, copied in input order, sorted with the last of each
 * key kept. */
static struct rs_labels *
sorted(struct rs_labels *l, size_t n)
{
	size_t i, j;

	qsort(l->kv, n, sizeof l->kv[0], pair_cmp);
	for (i = j = 0; i < n; i++) {
		if (i + 1 < n && strcmp(l->kv[i].key, l->kv[i + 1].key) == 0)
			continue;
		l->kv[j++] = l->kv[i];
	}
	l->n = j;
	return l;
}

static size_t
count(const cJSON *obj, size_t *bytes, const char **bad)
{
	const cJSON *c;
	size_t n = 0;

	*bytes = 0;
	cJSON_ArrayForEach(c, obj) {
		if (!cJSON_IsString(c) || c->valuestring == NULL) {
			*bad = c->string;
			return 0;
		}
		*bytes += strlen(c->string) + strlen(c->valuestring) + 2;
		n++;
	}
	return n;
}

static char *
copy(char *p, const char *s)
{
	size_t n = strlen(s) + 1;

	memcpy(p, s, n);
	return p + n;
}

rs_code
rs_labels_from_json(const cJSON *obj, struct rs_labels **out,
    char *why, size_t whylen)
{
	struct rs_labels *l;
	const cJSON *c;
	const char *bad = NULL;
	size_t n = 0, bytes = 0, i;
	char *p;

	*out = NULL;
	if (cJSON_IsNull(obj))
		obj = NULL;
	if (obj != NULL && !cJSON_IsObject(obj))
		return rs_why(RS_EPARSE, why, whylen, "labels are not a JSON object");
	if (obj != NULL) {
		n = count(obj, &bytes, &bad);
		if (bad != NULL)
			return rs_why(RS_EPARSE, why, whylen,
			    "label \"%s\": value is not a string", bad);
	}
	l = malloc(sizeof *l + n * sizeof l->kv[0] + bytes);
	if (l == NULL)
		return RS_ENOMEM;
	p = (char *)&l->kv[n];
	i = 0;
	if (obj != NULL)
		cJSON_ArrayForEach(c, obj) {
			l->kv[i].key = p;
			p = copy(p, c->string);
			l->kv[i].value = p;
			p = copy(p, c->valuestring);
			i++;
		}
	*out = sorted(l, n);
	return RS_OK;
}

/* Members of obj, and an upper bound of the bytes their keys and values
 * take unescaped (a string's span, quotes in, holds its text and NUL);
 * *bad is the first member whose value is no string. */
static size_t
jcount(const char *buf, struct rs_jspan obj, size_t *bytes,
    struct rs_jspan *bad)
{
	struct rs_jiter it;
	struct rs_jspan k, v;
	size_t n = 0;

	*bytes = 0;
	if (rs_jscan_iter(&it, buf, obj) != RS_OK)
		return 0;
	while (rs_jscan_member(&it, &k, &v) == RS_OK) {
		if (rs_jscan_type(buf, v) != RS_JSTRING) {
			*bad = k;
			return 0;
		}
		*bytes += (k.end - k.off) + (v.end - v.off);
		n++;
	}
	return n;
}

/* Unescapes the string s to p, which has room: past its NUL. */
static char *
junescape(char *p, const char *buf, struct rs_jspan s)
{
	(void)rs_jscan_unescape(buf, s, p, s.end - s.off, NULL);
	return p + strlen(p) + 1;
}

rs_code
rs_labels_from_jscan(const char *buf, struct rs_jspan obj,
    struct rs_labels **out, char *why, size_t whylen)
{
	struct rs_labels *l;
	struct rs_jiter it;
	struct rs_jspan k, v, bad = { 0, 0 };
	enum rs_jtype t = rs_jscan_type(buf, obj);
	size_t n = 0, bytes = 0, i = 0;
	char *p, key[64];

	*out = NULL;
	if (t != RS_JNONE && t != RS_JNULL && t != RS_JOBJECT)
		return rs_why(RS_EPARSE, why, whylen, "labels are not a JSON object");
	if (t == RS_JOBJECT) {
		n = jcount(buf, obj, &bytes, &bad);
		if (bad.end > bad.off) {
			(void)rs_jscan_unescape(buf, bad, key, sizeof key, NULL);
			return rs_why(RS_EPARSE, why, whylen,
			    "label \"%s\": value is not a string", key);
		}
	}
	if ((l = malloc(sizeof *l + n * sizeof l->kv[0] + bytes)) == NULL)
		return RS_ENOMEM;
	p = (char *)&l->kv[n];
	if (n > 0 && rs_jscan_iter(&it, buf, obj) == RS_OK)
		while (i < n && rs_jscan_member(&it, &k, &v) == RS_OK) {
			l->kv[i].key = p;
			p = junescape(p, buf, k);
			l->kv[i].value = p;
			p = junescape(p, buf, v);
			i++;
		}
	*out = sorted(l, i);
	return RS_OK;
}

const char *
rs_labels_get(const struct rs_labels *l, const char *key)
{
	size_t lo = 0, hi, mid;
	int c;

	if (l == NULL)
		return NULL;
	hi = l->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(key, l->kv[mid].key);
		if (c == 0)
			return l->kv[mid].value;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

int
rs_labels_equal(const struct rs_labels *a, const struct rs_labels *b)
{
	size_t na = a ? a->n : 0, nb = b ? b->n : 0, i;

	if (a == b)
		return 1;  /* a shared set */
	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (strcmp(a->kv[i].key, b->kv[i].key) != 0 ||
		    strcmp(a->kv[i].value, b->kv[i].value) != 0)
			return 0;
	return 1;
}

void
rs_labels_free(struct rs_labels *l)
{
	free(l);
}

uint64_t
rs_labels_hash(const struct rs_labels *l)
{
	uint64_t h = 0;
	size_t i;

	/* key and value hashed apart: ("ab", "c") and ("a", "bc") differ */
	for (i = 0; l != NULL && i < l->n; i++) {
		h = h * 1099511628211ULL ^
		    rs_strhash(l->kv[i].key, strlen(l->kv[i].key));
		h = h * 1099511628211ULL ^
		    rs_strhash(l->kv[i].value, strlen(l->kv[i].value));
	}
	return h;
}

size_t
rs_labels_size(const struct rs_labels *l)
{
	size_t n = l ? l->n : 0, t = sizeof *l + n * sizeof l->kv[0], i;

	for (i = 0; i < n; i++)
		t += strlen(l->kv[i].key) + strlen(l->kv[i].value) + 2;
	return t;
}

struct rs_labels *
rs_labels_copy(const struct rs_labels *l, void *mem)
{
	struct rs_labels *c = mem;
	size_t n = l ? l->n : 0, i;
	char *p = (char *)&c->kv[n];

	c->n = n;
	for (i = 0; i < n; i++) {
		c->kv[i].key = p;
		p = copy(p, l->kv[i].key);
		c->kv[i].value = p;
		p = copy(p, l->kv[i].value);
	}
	return c;
}
