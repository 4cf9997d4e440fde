/* Unit tests of rs-sync's pending event times (bin/rs-sync/pending.c): the
 * earliest time of a key wins until a sync takes it, no stamp is no entry,
 * and past its bound the map drops the keys the caller no longer knows
 * before it refuses a new one; a model check under random notes and
 * takes through growth and back to empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-sync/pending.c"

static void
earliest_wins(void **state)
{
	struct pending p = { 0 };

	assert_int_equal(pending_note(&p, "ns/a", 10.5, 100, NULL, NULL),
	    RS_OK);
	assert_int_equal(pending_note(&p, "ns/a", 11, 100, NULL, NULL), RS_OK);
	assert_int_equal(pending_note(&p, "ns/b", 12, 100, NULL, NULL), RS_OK);
	assert_int_equal(pending_len(&p), 2);
	assert_true(pending_take(&p, "ns/a") == 10.5);
	/* taken: forgotten, and a later event starts a new wait */
	assert_true(pending_take(&p, "ns/a") == 0);
	assert_int_equal(pending_note(&p, "ns/a", 13, 100, NULL, NULL), RS_OK);
	assert_true(pending_take(&p, "ns/a") == 13);
	assert_true(pending_take(&p, "ns/b") == 12);
	assert_true(pending_take(&p, "ns/never") == 0);
	assert_int_equal(pending_len(&p), 0);
	pending_free(&p);
}

static void
no_stamp_no_entry(void **state)
{
	struct pending p = { 0 };

	assert_int_equal(pending_note(&p, "ns/a", 0, 100, NULL, NULL), RS_OK);
	assert_int_equal(pending_note(&p, "ns/a", -3, 100, NULL, NULL), RS_OK);
	assert_int_equal(pending_len(&p), 0);
	/* an event without a stamp leaves an earlier one as it was */
	assert_int_equal(pending_note(&p, "ns/a", 5, 100, NULL, NULL), RS_OK);
	assert_int_equal(pending_note(&p, "ns/a", 0, 100, NULL, NULL), RS_OK);
	assert_true(pending_take(&p, "ns/a") == 5);
	pending_free(&p);
}

/* Keys of the form ns/live-N are known; the others are deleted. */
static int
live(void *arg, const char *key)
{
	(*(int *)arg)++;
	return strncmp(key, "ns/live-", 8) == 0;
}

static void
bounded(void **state)
{
	struct pending p = { 0 };
	char key[32];
	int asked = 0, i;

	for (i = 0; i < 3; i++) {
		snprintf(key, sizeof key, "ns/live-%d", i);
		assert_int_equal(pending_note(&p, key, 1 + i, 5, live, &asked),
		    RS_OK);
		snprintf(key, sizeof key, "ns/gone-%d", i);
		if (i < 2)
			assert_int_equal(pending_note(&p, key, 1 + i, 5, live,
			    &asked), RS_OK);
	}
	assert_int_equal(pending_len(&p), 5);
	assert_int_equal(asked, 0);
	/* full: the two deleted ones make room */
	assert_int_equal(pending_note(&p, "ns/live-3", 9, 5, live, &asked),
	    RS_OK);
	assert_int_equal(asked, 5);
	assert_int_equal(pending_len(&p), 4);
	assert_true(pending_take(&p, "ns/gone-0") == 0);
	assert_true(pending_take(&p, "ns/live-0") == 1);
	assert_int_equal(pending_note(&p, "ns/live-4", 9, 5, live, &asked),
	    RS_OK);
	assert_int_equal(pending_note(&p, "ns/live-5", 9, 5, live, &asked),
	    RS_OK);
	/* full of known keys: the new one is refused, the others kept */
	assert_int_equal(pending_note(&p, "ns/live-6", 9, 5, live, &asked),
	    RS_EFULL);
	assert_int_equal(pending_len(&p), 5);
	assert_true(pending_take(&p, "ns/live-6") == 0);
	/* a key held already is no new entry, even when full */
	assert_int_equal(pending_note(&p, "ns/live-1", 0.5, 4, live, &asked),
	    RS_OK);
	assert_true(pending_take(&p, "ns/live-1") == 2);
	/* no keep function: full is full */
	assert_int_equal(pending_note(&p, "ns/gone-9", 9, 4, NULL, NULL),
	    RS_EFULL);
	pending_free(&p);
	assert_int_equal(pending_len(&p), 0);
}

/* Random notes and takes against an array: the map agrees at every step,
 * through several growths, and empties. */
static void
model(void **state)
{
	enum { NKEYS = 3000 };
	static double want[NKEYS];
	struct pending p = { 0 };
	char key[32];
	size_t held = 0;
	int i, k;

	srand(7);
	for (i = 0; i < 200000; i++) {
		k = rand() % NKEYS;
		snprintf(key, sizeof key, "ns/k-%d", k);
		if (rand() % 3) {
			double at = 1 + rand() % 1000;

			assert_int_equal(pending_note(&p, key, at, NKEYS, NULL,
			    NULL), RS_OK);
			if (want[k] == 0) {
				want[k] = at;
				held++;
			}
		} else {
			assert_true(pending_take(&p, key) == want[k]);
			if (want[k] != 0)
				held--;
			want[k] = 0;
		}
		assert_int_equal(pending_len(&p), held);
	}
	for (k = 0; k < NKEYS; k++) {
		snprintf(key, sizeof key, "ns/k-%d", k);
		assert_true(pending_take(&p, key) == want[k]);
	}
	assert_int_equal(pending_len(&p), 0);
	pending_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(earliest_wins),
		cmocka_unit_test(no_stamp_no_entry),
		cmocka_unit_test(bounded),
		cmocka_unit_test(model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
