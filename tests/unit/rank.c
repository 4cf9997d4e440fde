/* Unit tests of the age ratio rs-sync reports for the victims of a
 * scale-down (bin/rs-sync/rank.c; doc/metrics.md,
 * replicaset_controller_sorting_deletion_age_ratio): the youngest is the
 * latest creation among the Ready pods only; a ratio is whole milliseconds
 * divided as integers, as upstream divides them; victims that are not
 * Ready, and a youngest age under a millisecond, report nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-sync/cache.c"
#include "../../bin/rs-sync/intern.c"
#include "../../bin/rs-sync/kind.c"
#include "../../bin/rs-sync/rank.c"

#define NOW 1000000.0

static void
youngest_ready_only(void **state)
{
	struct pod a = { .ready = 1, .created = NOW - 100 };
	struct pod b = { .ready = 0, .created = NOW - 1 };    /* younger */
	struct pod c = { .ready = 1, .created = NOW - 40 };
	struct ranked v[] = { { &a, 0 }, { &b, 0 }, { &c, 0 } };

	assert_true(rank_youngest_ready(v, 3) == NOW - 40);
	assert_true(rank_youngest_ready(v, 2) == NOW - 100);
	/* none Ready: nothing to compare with */
	assert_true(rank_youngest_ready(&v[1], 1) == 0);
}

static void
ratio_in_whole_milliseconds(void **state)
{
	struct pod young = { .ready = 1, .created = NOW - 40 };
	struct pod old = { .ready = 1, .created = NOW - 100 };
	struct pod older = { .ready = 1, .created = NOW - 119.999 };
	struct pod unready = { .ready = 0, .created = NOW - 100 };

	assert_true(rank_age_ratio(&young, NOW - 40, NOW) == 1);
	/* 100000 / 40000 = 2 as integers, not 2.5 */
	assert_true(rank_age_ratio(&old, NOW - 40, NOW) == 2);
	assert_true(rank_age_ratio(&older, NOW - 40, NOW) == 2);
	assert_true(rank_age_ratio(&old, NOW - 1000, NOW) == 0);
	assert_true(rank_age_ratio(&unready, NOW - 40, NOW) == -1);
	/* no Ready pod, or one younger than a millisecond: no report */
	assert_true(rank_age_ratio(&old, 0, NOW) == -1);
	assert_true(rank_age_ratio(&old, NOW - 0.0004, NOW) == -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(youngest_ready_only),
		cmocka_unit_test(ratio_in_whole_milliseconds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
