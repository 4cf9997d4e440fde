/* Unit tests of the age ratio rs-sync reports for the victims of a
 * scale-down (bin/rs-sync/rank.c; doc/metrics.md,
 * replicaset_controller_sorting_deletion_age_ratio): the youngest is the
 * latest creation among the Ready pods only; a ratio is whole milliseconds
 * divided as integers, as upstream divides them; victims that are not
 * Ready, and a youngest age under a millisecond, report nothing. And the
 * order of the victims (rank_sort, with the age buckets worked out once a
 * sort): pods of one age bucket go by UID, of two by age; the comparison
 * is a consistent order over pods that tie on many keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-sync/cache.c"
#include "../../bin/rs-sync/pod.c"
#include "../../bin/rs-sync/scan.c"
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
	struct ranked v[] = { { .pod = &a }, { .pod = &b }, { .pod = &c } };

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

static void
sort_by_bucket_then_uid(void **state)
{
	/* 100 s and 101 s old share a log2 bucket of nanoseconds; 1 s does not */
	struct pod a = { .uid = "b", .node = "", .created = NOW - 100 };
	struct pod b = { .uid = "a", .node = "", .created = NOW - 101 };
	struct pod c = { .uid = "z", .node = "", .created = NOW - 1 };
	struct ranked v[] = { { .pod = &a }, { .pod = &b }, { .pod = &c } };

	rank_sort(v, 3, NOW);
	assert_ptr_equal(v[0].pod, &c);
	assert_ptr_equal(v[1].pod, &b);
	assert_ptr_equal(v[2].pod, &a);
}

enum { N = 400 };

/* Many pods drawn from few values of every key, so that each rule and its
 * ties are met. */
static void
random_pods(struct pod *pods, struct ranked *v, unsigned seed)
{
	static const char *nodes[] = { "", "n1", "n2" };
	static const char *uids[] = { "u1", "u2", "u3", "u4", "u10", "" };

	for (int i = 0; i < N; i++) {
		struct pod *p = &pods[i];

		p->node = nodes[rand_r(&seed) % 3];
		p->uid = uids[rand_r(&seed) % 6];
		p->phase_rank = rand_r(&seed) % 3;
		p->ready = rand_r(&seed) % 2;
		p->cost = rand_r(&seed) % 2;
		p->restarts = rand_r(&seed) % 2;
		/* times differ but for zero: upstream's order ties pods of
		 * one time and compares them by UID with a third of that
		 * bucket, which no order can keep transitive */
		p->ready_since = rand_r(&seed) % 3 ? NOW - 1 - i * 0.75 : 0;
		p->created = rand_r(&seed) % 5 ? NOW - 1 - i * 0.5 : 0;
		v[i] = (struct ranked){ .pod = p, .rank = rand_r(&seed) % 2 };
	}
}

/* The sorted order never has a later pod that goes before an earlier
 * one, and the comparison is antisymmetric. */
static void
order_is_consistent(void **state)
{
	static struct pod pods[N];
	static struct ranked v[N];

	random_pods(pods, v, 42);
	rank_sort(v, N, NOW);
	for (int i = 0; i < N; i++)
		for (int j = i; j < N; j++) {
			assert_true(rank_order(&v[j], &v[i], NOW) >= 0);
			assert_int_equal(rank_order(&v[i], &v[j], NOW),
			    -rank_order(&v[j], &v[i], NOW));
		}
}

/* rank_first's first pods are the whole sort's: at each place, a pod the
 * order cannot tell from the one the sort put there. */
static void
first_is_the_sort_head(void **state)
{
	static struct pod pods[N];
	static struct ranked all[N], head[N];
	static const size_t firsts[] = { 0, 1, 2, 7, 100, N - 1, N, N + 5 };

	for (unsigned seed = 1; seed <= 20; seed++)
		for (size_t f = 0; f < sizeof firsts / sizeof *firsts; f++) {
			size_t first = firsts[f], m = first < N ? first : N;

			random_pods(pods, all, seed);
			memcpy(head, all, sizeof all);
			rank_sort(all, N, NOW);
			rank_first(head, N, first, NOW);
			for (size_t i = 0; i < m; i++)
				assert_int_equal(rank_order(&head[i], &all[i],
				    NOW), 0);
		}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(youngest_ready_only),
		cmocka_unit_test(ratio_in_whole_milliseconds),
		cmocka_unit_test(sort_by_bucket_then_uid),
		cmocka_unit_test(order_is_consistent),
		cmocka_unit_test(first_is_the_sort_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
