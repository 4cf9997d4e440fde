/* Unit tests of rs-sync's intern pool: equal values share one copy, values
 * that differ never do, a value lives until its last reference goes, and
 * the table (open addressing, backward-shift deletion) agrees with a model
 * under random interns and drops, through growth and back to empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-sync/intern.c"

static struct rs_labels *
labels(const char *json)
{
	struct rs_labels *l;
	cJSON *o = cJSON_Parse(json);

	assert_non_null(o);
	assert_int_equal(rs_labels_from_json(o, &l, NULL, 0), RS_OK);
	cJSON_Delete(o);
	return l;
}

static void
strings_shared(void **state)
{
	char buf[] = "team-a";
	const char *a = intern_str("team-a"), *b = intern_str(buf), *c;

	assert_non_null(a);
	assert_ptr_equal(a, b);
	assert_ptr_not_equal(a, buf);
	assert_string_equal(a, "team-a");
	assert_int_equal(intern_count(), 1);
	c = intern_str("team-b");
	assert_ptr_not_equal(a, c);
	assert_int_equal(intern_count(), 2);
	/* one of two references gone: the value stays, and is still found */
	intern_drop(a);
	assert_int_equal(intern_count(), 2);
	assert_string_equal(b, "team-a");
	assert_ptr_equal(intern_str("team-a"), b);
	intern_drop(b);
	intern_drop(b);
	assert_int_equal(intern_count(), 1);
	intern_drop(c);
	intern_drop(NULL);
	assert_int_equal(intern_count(), 0);
	assert_null(pool.slot);   /* an empty pool holds no memory */
}

/* Parts keep their NULs: where one ends is part of the value. */
static void
parts_apart(void **state)
{
	const char *x[] = { "ab", "c" }, *y[] = { "a", "bc" }, *z[] = { "ab", "" };
	const char *px = intern_strs(x, 2), *py = intern_strs(y, 2);
	const char *pz = intern_strs(z, 2), *pw = intern_str("ab");
	const char *again[] = { "ab", "c" };

	assert_ptr_not_equal(px, py);
	assert_ptr_not_equal(px, pz);
	assert_ptr_not_equal(pz, pw);
	assert_ptr_not_equal(px, pw);
	assert_string_equal(px, "ab");
	assert_string_equal(px + 3, "c");
	assert_string_equal(py, "a");
	assert_string_equal(py + 2, "bc");
	assert_string_equal(pz + 3, "");
	assert_ptr_equal(intern_strs(again, 2), px);
	assert_int_equal(intern_count(), 4);
	intern_drop(px);
	intern_drop(px);
	intern_drop(py);
	intern_drop(pz);
	intern_drop(pw);
	assert_int_equal(intern_count(), 0);
}

/* Equality itself, below the hash: a value is equal only to the same
 * parts in full, never to a prefix, a longer run or a label set. */
static void
equality(void **state)
{
	const char *x[] = { "ab", "c" }, *pre[] = { "ab" }, *more[] = { "ab", "c", "" };
	const char *v = intern_strs(x, 2);
	const struct rs_labels *l = intern_labels(NULL);
	const struct ient *e = (const void *)(v - offsetof(struct ient, data));
	const struct ient *le = (const void *)((const char *)l -
	    offsetof(struct ient, data));

	assert_true(strs_eq(e, x, 2));
	assert_false(strs_eq(e, pre, 1));
	assert_false(strs_eq(e, more, 3));
	assert_false(labels_eq(e, NULL, 0));
	assert_true(labels_eq(le, NULL, 0));
	assert_false(strs_eq(le, x, 0));
	intern_drop(v);
	intern_drop(l);
	assert_int_equal(intern_count(), 0);
}

static void
labels_shared(void **state)
{
	struct rs_labels *a = labels("{\"app\":\"web\",\"tier\":\"fe\"}");
	struct rs_labels *b = labels("{\"tier\":\"fe\",\"app\":\"web\"}");
	struct rs_labels *c = labels("{\"app\":\"web\",\"tier\":\"be\"}");
	struct rs_labels *e = labels("{}");
	const struct rs_labels *sa = intern_labels(a), *sb = intern_labels(b);
	const struct rs_labels *sc = intern_labels(c), *se = intern_labels(e);
	const struct rs_labels *sn = intern_labels(NULL);
	const char *s = intern_str("");

	assert_ptr_equal(sa, sb);
	assert_ptr_not_equal(sa, a);
	assert_ptr_not_equal(sa, sc);
	assert_ptr_equal(se, sn);     /* NULL is the empty set */
	assert_ptr_not_equal((const void *)se, (const void *)s);
	rs_labels_free(a);
	rs_labels_free(b);
	rs_labels_free(c);
	rs_labels_free(e);
	/* the shared copy stands alone once its sources are gone */
	assert_int_equal(sa->n, 2);
	assert_string_equal(rs_labels_get(sa, "app"), "web");
	assert_string_equal(rs_labels_get(sa, "tier"), "fe");
	assert_string_equal(rs_labels_get(sc, "tier"), "be");
	assert_int_equal(se->n, 0);
	assert_int_equal(intern_count(), 4);
	intern_drop(sa);
	assert_string_equal(rs_labels_get(sb, "tier"), "fe");
	intern_drop(sb);
	intern_drop(sc);
	intern_drop(se);
	intern_drop(sn);
	intern_drop(s);
	assert_int_equal(intern_count(), 0);
}

#define NVALS 5000

/* Random interns and drops against a model of reference counts: a live
 * value is always found at the address it first got, a dead one is gone,
 * and the count of values matches, through several rehashes and shifts. */
static void
model(void **state)
{
	static const char *addr[NVALS];
	static unsigned refs[NVALS];
	char name[32];
	unsigned seed = 7;
	size_t live = 0;
	int step, i;

	for (step = 0; step < 400000; step++) {
		seed = seed * 1103515245 + 12345;
		i = (seed >> 8) % NVALS;
		snprintf(name, sizeof name, "node-%d.example", i);
		if (refs[i] == 0 || (seed >> 4) % 3 != 0) {
			const char *p = intern_str(name);

			assert_non_null(p);
			assert_string_equal(p, name);
			if (refs[i] == 0) {
				addr[i] = p;
				live++;
			}
			assert_ptr_equal(p, addr[i]);
			refs[i]++;
		} else {
			intern_drop(addr[i]);
			if (--refs[i] == 0)
				live--;
		}
		assert_int_equal(intern_count(), live);
	}
	for (i = 0; i < NVALS; i++) {
		if (refs[i] == 0)
			continue;
		snprintf(name, sizeof name, "node-%d.example", i);
		assert_ptr_equal(intern_str(name), addr[i]);
		intern_drop(addr[i]);
		while (refs[i]-- > 0)
			intern_drop(addr[i]);
	}
	assert_int_equal(intern_count(), 0);
	assert_null(pool.slot);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strings_shared),
		cmocka_unit_test(parts_apart),
		cmocka_unit_test(equality),
		cmocka_unit_test(labels_shared),
		cmocka_unit_test(model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
