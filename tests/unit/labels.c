/* Label sets: built from metadata.labels as Go's decoder reads it into a
 * map[string]string (null is an empty map, a key given twice keeps its last
 * value, a non-string value is an error). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "labels.h"

/* Both builders, from the tree and from the text, must agree. */
static void
same_sets(const struct rs_labels *a, const struct rs_labels *b)
{
	size_t i;

	assert_int_equal(a->n, b->n);
	for (i = 0; i < a->n; i++) {
		assert_string_equal(a->kv[i].key, b->kv[i].key);
		assert_string_equal(a->kv[i].value, b->kv[i].value);
	}
}

static struct rs_labels *
from(const char *json, rs_code want, char *why, size_t whylen)
{
	struct rs_labels *l = (struct rs_labels *)1, *t = (struct rs_labels *)1;
	struct rs_jspan v = { 0, 0 };
	char twhy[256] = "";
	cJSON *o = NULL;

	if (json != NULL) {
		assert_non_null(o = cJSON_Parse(json));
		assert_int_equal(rs_jscan_doc(json, strlen(json), &v, NULL),
		    RS_OK);
	}
	assert_int_equal(rs_labels_from_json(o, &l, why, whylen), want);
	assert_int_equal(rs_labels_from_jscan(json ? json : "", v, &t, twhy,
	    sizeof twhy), want);
	cJSON_Delete(o);
	if (want != RS_OK) {
		assert_null(l);
		assert_null(t);
		if (why != NULL)
			assert_string_equal(why, twhy);
		return l;
	}
	same_sets(l, t);
	rs_labels_free(t);
	return l;
}

static void
sorted_and_found(void **state)
{
	struct rs_labels *l = from("{\"tier\":\"fe\",\"app\":\"web\","
	    "\"k8s.io/x\":\"\",\"App\":\"2\"}", RS_OK, NULL, 0);

	assert_int_equal(l->n, 4);
	/* byte order, as Go compares strings: upper case first */
	assert_string_equal(l->kv[0].key, "App");
	assert_string_equal(l->kv[1].key, "app");
	assert_string_equal(l->kv[2].key, "k8s.io/x");
	assert_string_equal(l->kv[3].key, "tier");
	assert_string_equal(rs_labels_get(l, "app"), "web");
	assert_string_equal(rs_labels_get(l, "App"), "2");
	assert_string_equal(rs_labels_get(l, "tier"), "fe");
	assert_string_equal(rs_labels_get(l, "k8s.io/x"), "");
	assert_null(rs_labels_get(l, "ap"));
	assert_null(rs_labels_get(l, "zzz"));
	assert_null(rs_labels_get(l, ""));
	assert_null(rs_labels_get(NULL, "app"));
	rs_labels_free(l);
}

/* The whole set is one block: the strings live inside it. */
static void
one_block(void **state)
{
	struct rs_labels *l = from("{\"b\":\"2\",\"a\":\"1\"}", RS_OK, NULL, 0);
	const char *lo = (const char *)l, *hi = (const char *)&l->kv[l->n];
	size_t i;

	for (i = 0; i < l->n; i++) {
		assert_true(l->kv[i].key >= hi && l->kv[i].key < hi + 8);
		assert_true(l->kv[i].value >= hi && l->kv[i].value < hi + 8);
	}
	assert_true(lo < hi);
	rs_labels_free(l);
}

static void
empty_and_null(void **state)
{
	struct rs_labels *a = from(NULL, RS_OK, NULL, 0);
	struct rs_labels *b = from("null", RS_OK, NULL, 0);
	struct rs_labels *c = from("{}", RS_OK, NULL, 0);

	assert_int_equal(a->n, 0);
	assert_int_equal(b->n, 0);
	assert_int_equal(c->n, 0);
	assert_true(rs_labels_equal(a, c));
	assert_true(rs_labels_equal(NULL, c));
	assert_true(rs_labels_equal(NULL, NULL));
	assert_null(rs_labels_get(c, "a"));
	rs_labels_free(a);
	rs_labels_free(b);
	rs_labels_free(c);
	rs_labels_free(NULL);
}

/* Escaped keys and values read as their text (the two builders agree in
 * from()); a key escaped one way and plain the other is one key. */
static void
escaped(void **state)
{
	struct rs_labels *l = from("{\"caf\\u00e9\":\"a\\/b\",\"x\":\"\\\"q\\\"\","
	    "\"\\u0078\":\"last\",\"t\\tab\":\"\\ud83d\\ude00\"}", RS_OK, NULL, 0);

	assert_int_equal(l->n, 3);
	assert_string_equal(rs_labels_get(l, "caf\xc3\xa9"), "a/b");
	assert_string_equal(rs_labels_get(l, "x"), "last");
	assert_string_equal(rs_labels_get(l, "t\tab"), "\xf0\x9f\x98\x80");
	rs_labels_free(l);
}

static void
last_wins(void **state)
{
	struct rs_labels *l = from("{\"a\":\"1\",\"b\":\"x\",\"a\":\"2\","
	    "\"a\":\"3\"}", RS_OK, NULL, 0);

	assert_int_equal(l->n, 2);
	assert_string_equal(rs_labels_get(l, "a"), "3");
	assert_string_equal(rs_labels_get(l, "b"), "x");
	rs_labels_free(l);
}

/* Many copies among many keys: whatever qsort does with equal keys, the
 * last copy must win. */
static void
last_wins_many(void **state)
{
	cJSON *o = cJSON_CreateObject();
	struct rs_labels *l;
	char k[16], v[16];
	int i;

	for (i = 0; i < 2000; i++) {
		snprintf(k, sizeof k, "k%d", i % 7);
		snprintf(v, sizeof v, "v%d", i);
		assert_non_null(cJSON_AddStringToObject(o, k, v));
	}
	assert_int_equal(rs_labels_from_json(o, &l, NULL, 0), RS_OK);
	assert_int_equal(l->n, 7);
	for (i = 0; i < 7; i++) {
		snprintf(k, sizeof k, "k%d", i);
		/* the last n below 2000 with n % 7 == i */
		snprintf(v, sizeof v, "v%d", 1999 - (1999 - i) % 7);
		assert_string_equal(rs_labels_get(l, k), v);
	}
	rs_labels_free(l);
	cJSON_Delete(o);
}

static void
refused(void **state)
{
	char why[128];

	from("{\"a\":\"1\",\"b\":2}", RS_EPARSE, why, sizeof why);
	assert_string_equal(why, "label \"b\": value is not a string");
	from("{\"a\":null}", RS_EPARSE, why, sizeof why);
	assert_string_equal(why, "label \"a\": value is not a string");
	from("{\"a\":{}}", RS_EPARSE, NULL, 0);
	from("[\"a\"]", RS_EPARSE, why, sizeof why);
	assert_string_equal(why, "labels are not a JSON object");
	from("\"a=b\"", RS_EPARSE, NULL, 0);
}

static void
equality(void **state)
{
	struct rs_labels *a = from("{\"x\":\"1\",\"y\":\"2\"}", RS_OK, NULL, 0);
	struct rs_labels *b = from("{\"y\":\"2\",\"x\":\"1\"}", RS_OK, NULL, 0);
	struct rs_labels *c = from("{\"x\":\"1\",\"y\":\"3\"}", RS_OK, NULL, 0);
	struct rs_labels *d = from("{\"x\":\"1\"}", RS_OK, NULL, 0);
	struct rs_labels *e = from("{\"x\":\"1\",\"z\":\"2\"}", RS_OK, NULL, 0);

	assert_true(rs_labels_equal(a, b));
	assert_true(rs_labels_equal(b, a));
	assert_false(rs_labels_equal(a, c));
	assert_false(rs_labels_equal(a, d));
	assert_false(rs_labels_equal(d, a));
	assert_false(rs_labels_equal(a, e));
	assert_false(rs_labels_equal(a, NULL));
	rs_labels_free(a);
	rs_labels_free(b);
	rs_labels_free(c);
	rs_labels_free(d);
	rs_labels_free(e);
}

/* A copy stands alone in the caller's memory, equal to its source. */
static void
copied(void **state)
{
	struct rs_labels *l = from("{\"tier\":\"fe\",\"app\":\"web\"}", RS_OK,
	    NULL, 0);
	size_t n = rs_labels_size(l);
	char *mem = malloc(n + 1), *end = mem + n;
	struct rs_labels *c;

	assert_non_null(mem);
	mem[n] = 'X';
	c = rs_labels_copy(l, mem);
	assert_ptr_equal(c, mem);
	rs_labels_free(l);
	assert_int_equal(c->n, 2);
	assert_string_equal(c->kv[0].key, "app");
	assert_string_equal(rs_labels_get(c, "app"), "web");
	assert_string_equal(rs_labels_get(c, "tier"), "fe");
	/* the strings live in mem, and the size was exact */
	for (size_t i = 0; i < c->n; i++) {
		assert_true(c->kv[i].key > mem && c->kv[i].key < end);
		assert_true(c->kv[i].value > mem && c->kv[i].value < end);
	}
	assert_int_equal(end[-1], '\0');
	assert_int_equal(mem[n], 'X');
	c = rs_labels_copy(NULL, mem);
	assert_int_equal(c->n, 0);
	assert_int_equal(rs_labels_size(NULL), rs_labels_size(c));
	free(mem);
}

static void
hashed(void **state)
{
	struct rs_labels *a = from("{\"app\":\"web\",\"tier\":\"fe\"}", RS_OK, NULL, 0);
	struct rs_labels *b = from("{\"tier\":\"fe\",\"app\":\"web\"}", RS_OK, NULL, 0);
	struct rs_labels *c = from("{\"ab\":\"c\"}", RS_OK, NULL, 0);
	struct rs_labels *d = from("{\"a\":\"bc\"}", RS_OK, NULL, 0);
	struct rs_labels *e = from("{}", RS_OK, NULL, 0);
	struct rs_labels *f = from("{\"app\":\"web\",\"tier\":\"be\"}", RS_OK, NULL, 0);

	assert_true(rs_labels_hash(a) == rs_labels_hash(b));
	assert_true(rs_labels_hash(e) == rs_labels_hash(NULL));
	assert_true(rs_labels_hash(c) != rs_labels_hash(d));
	assert_true(rs_labels_hash(a) != rs_labels_hash(f));
	assert_true(rs_labels_hash(a) != rs_labels_hash(e));
	assert_true(rs_labels_equal(a, a));
	rs_labels_free(a);
	rs_labels_free(b);
	rs_labels_free(c);
	rs_labels_free(d);
	rs_labels_free(e);
	rs_labels_free(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sorted_and_found),
		cmocka_unit_test(one_block),
		cmocka_unit_test(empty_and_null),
		cmocka_unit_test(escaped),
		cmocka_unit_test(last_wins),
		cmocka_unit_test(last_wins_many),
		cmocka_unit_test(refused),
		cmocka_unit_test(equality),
		cmocka_unit_test(copied),
		cmocka_unit_test(hashed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
