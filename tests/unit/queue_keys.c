/* Unit tests of rs-queue's data structures: the interned key table
 * (open addressing, backward-shift deletion) against a plain array model
 * under random inserts and removals, and the delay heap against sorting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-queue/keys.c"
#include "../../bin/rs-queue/delay.c"

#define NKEYS 20000

static void
key_name(char *buf, size_t n, int i)
{
	snprintf(buf, n, "ns-%d/name-%d", i % 7, i);
}

/* Random interns and removals; the table must agree with the model at
 * every step, through several rehashes. */
static void
test_keys_model(void **state)
{
	static uint32_t model[NKEYS];   /* item index + 1, 0 = absent */
	struct rsq_keys k;
	char key[64];
	unsigned seed = 42;
	int step, i, live = 0;

	assert_int_equal(rsq_keys_init(&k), 0);
	for (step = 0; step < 200000; step++) {
		seed = seed * 1103515245 + 12345;
		i = (seed >> 8) % NKEYS;
		key_name(key, sizeof key, i);
		if (model[i] == 0 || (seed & 1)) {
			uint32_t it = rsq_keys_intern(&k, key, strlen(key));

			assert_int_not_equal(it, RSQ_NONE);
			if (model[i])
				assert_int_equal(it, model[i] - 1);
			else
				live++;
			model[i] = it + 1;
			assert_string_equal(k.items[it].key, key);
		} else {
			rsq_keys_remove(&k, model[i] - 1);
			model[i] = 0;
			live--;
		}
		assert_int_equal(k.count, live);
	}
	for (i = 0; i < NKEYS; i++) {
		key_name(key, sizeof key, i);
		assert_int_equal(rsq_keys_find(&k, key, strlen(key)),
		    model[i] ? model[i] - 1 : RSQ_NONE);
	}
	/* the table stays at most three quarters full */
	assert_true((size_t)k.count * 4 <= ((size_t)k.mask + 1) * 3);
	rsq_keys_free(&k);
}

/* Keys that differ only in length or case are different keys. */
static void
test_keys_distinct(void **state)
{
	struct rsq_keys k;
	uint32_t a, b, c;

	assert_int_equal(rsq_keys_init(&k), 0);
	a = rsq_keys_intern(&k, "ns/a", 4);
	b = rsq_keys_intern(&k, "ns/ab", 5);
	c = rsq_keys_intern(&k, "ns/ab", 4);
	assert_int_not_equal(a, b);
	assert_int_equal(a, c);
	assert_int_equal(k.items[a].flags, RSQ_USED);
	assert_int_equal(k.items[a].heap, RSQ_NONE);
	assert_int_equal(k.items[a].added_ns, -1);
	assert_int_equal(rsq_keys_find(&k, "ns/abc", 6), RSQ_NONE);
	rsq_keys_free(&k);
}

static int
cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Random times come out sorted; rescheduling earlier moves up, later
 * is ignored. */
static void
test_heap_order(void **state)
{
	enum { N = 5000 };
	static struct rsq_item items[N];
	static int64_t due[N], sorted[N];
	struct rsq_heap h;
	unsigned seed = 7;
	int i;

	rsq_heap_init(&h);
	for (i = 0; i < N; i++) {
		items[i].heap = RSQ_NONE;
		seed = seed * 1103515245 + 12345;
		due[i] = 1000 + (seed >> 4) % 100000;
		assert_int_equal(rsq_heap_schedule(&h, items, i, due[i]), 0);
	}
	for (i = 0; i < N; i += 3) {
		assert_int_equal(rsq_heap_schedule(&h, items, i, due[i] + 50), 0);
		if (due[i] > 2000)
			due[i] -= 1000;
		assert_int_equal(rsq_heap_schedule(&h, items, i, due[i]), 0);
	}
	assert_int_equal(h.n, N);
	for (i = 0; i < N; i++)
		assert_int_equal(h.v[items[i].heap].item, i);
	memcpy(sorted, due, sizeof due);
	qsort(sorted, N, sizeof sorted[0], cmp64);
	assert_int_equal(rsq_heap_next(&h), sorted[0]);
	assert_int_equal(rsq_heap_pop_due(&h, items, sorted[0] - 1), RSQ_NONE);
	for (i = 0; i < N; i++) {
		uint32_t it = rsq_heap_pop_due(&h, items, INT64_MAX);

		assert_int_not_equal(it, RSQ_NONE);
		assert_int_equal(due[it], sorted[i]);
		assert_int_equal(items[it].heap, RSQ_NONE);
	}
	assert_int_equal(rsq_heap_next(&h), -1);
	rsq_heap_free(&h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_model),
		cmocka_unit_test(test_keys_distinct),
		cmocka_unit_test(test_heap_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
