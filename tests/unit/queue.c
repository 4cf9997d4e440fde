/* Unit tests of rs-queue's state machine (bin/rs-queue/queue.c) on an
 * injected clock, sequence by sequence against client-go's workqueue:
 * queue_test.go, delaying_queue_test.go, rate_limiting_queue_test.go,
 * default_rate_limiters_test.go and metrics_test.go. The tool's sources
 * are compiled in: the Makefile links unit tests with libcommon only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-queue/keys.c"
#include "../../bin/rs-queue/delay.c"
#include "../../bin/rs-queue/limiter.c"
#include "../../bin/rs-queue/metrics.c"
#include "../../bin/rs-queue/queue.c"

#define MS 1000000LL
#define SEC 1000000000LL
#define T0 (1000 * SEC)

static struct rsq q;

static int
setup_default(void **state)
{
	struct rsq_config c;

	rsq_config_default(&c);
	return rsq_init(&q, &c) == RS_OK ? 0 : -1;
}

static int
teardown(void **state)
{
	rsq_free(&q);
	return 0;
}

static void
add(const char *k, int64_t now)
{
	assert_int_equal(rsq_add(&q, k, strlen(k), now), RS_OK);
}

/* Get: the key handed out, or "" when none. */
static const char *
get(uint32_t holder, int64_t now)
{
	uint32_t i = rsq_get(&q, holder, now);
	size_t len;

	return i == RSQ_NONE ? "" : rsq_key(&q, i, &len);
}

static rs_code
done(const char *k, int64_t now)
{
	return rsq_done(&q, k, strlen(k), now);
}

static void
after(const char *k, int64_t d, int64_t now)
{
	assert_int_equal(rsq_after(&q, k, strlen(k), d, now), RS_OK);
}

static int64_t
retry(const char *k, int64_t now)
{
	int64_t d = -1;

	assert_int_equal(rsq_retry(&q, k, strlen(k), now, &d), RS_OK);
	return d;
}

/* A key is queued once, handed out in FIFO order. */
static void
test_fifo_dedup(void **state)
{
	add("ns/a", T0);
	add("ns/b", T0);
	add("ns/a", T0);
	add("ns/c", T0);
	assert_int_equal(rsq_len(&q), 3);
	assert_string_equal(get(RSQ_NONE, T0), "ns/a");
	assert_string_equal(get(RSQ_NONE, T0), "ns/b");
	assert_string_equal(get(RSQ_NONE, T0), "ns/c");
	assert_string_equal(get(RSQ_NONE, T0), "");
	assert_int_equal(q.adds, 3);
}

/* TestReinsert: added while processing, it comes back at DONE, and only
 * then. */
static void
test_add_while_processing(void **state)
{
	add("ns/foo", T0);
	assert_string_equal(get(RSQ_NONE, T0), "ns/foo");
	add("ns/foo", T0);
	assert_int_equal(rsq_len(&q), 0);
	assert_string_equal(get(RSQ_NONE, T0), "");
	assert_int_equal(done("ns/foo", T0), RS_OK);
	assert_int_equal(rsq_len(&q), 1);
	assert_string_equal(get(RSQ_NONE, T0), "ns/foo");
	assert_int_equal(done("ns/foo", T0), RS_OK);
	assert_int_equal(rsq_len(&q), 0);
	assert_int_equal(q.k.count, 0);
}

/* TestCollapseWhileProcessing: two adds while out make one more run. */
static void
test_collapse_while_processing(void **state)
{
	add("ns/foo", T0);
	assert_string_equal(get(RSQ_NONE, T0), "ns/foo");
	add("ns/foo", T0);
	add("ns/foo", T0);
	assert_string_equal(get(RSQ_NONE, T0), "");
	assert_int_equal(done("ns/foo", T0), RS_OK);
	assert_string_equal(get(RSQ_NONE, T0), "ns/foo");
	assert_int_equal(done("ns/foo", T0), RS_OK);
	assert_int_equal(rsq_len(&q), 0);
	assert_int_equal(q.processing, 0);
}

/* DONE of a key not being processed changes nothing (client-go would
 * queue a queued key a second time). */
static void
test_done_not_processing(void **state)
{
	assert_int_equal(done("ns/none", T0), RS_ENOTFOUND);
	add("ns/a", T0);
	assert_int_equal(done("ns/a", T0), RS_ENOTFOUND);
	assert_int_equal(rsq_len(&q), 1);
	assert_string_equal(get(RSQ_NONE, T0), "ns/a");
	assert_string_equal(get(RSQ_NONE, T0), "");
}

/* AFTER then ADD: the ADD queues it now; the delayed add still fires
 * later and queues it again once it is done. */
static void
test_after_then_add(void **state)
{
	after("ns/foo", SEC, T0);
	assert_int_equal(rsq_len(&q), 0);
	add("ns/foo", T0);
	assert_string_equal(get(RSQ_NONE, T0), "ns/foo");
	assert_int_equal(done("ns/foo", T0 + 100 * MS), RS_OK);
	assert_int_equal(rsq_tick(&q, T0 + 999 * MS), 0);
	assert_int_equal(rsq_len(&q), 0);
	assert_int_equal(rsq_next_due(&q), T0 + SEC);
	assert_int_equal(rsq_tick(&q, T0 + SEC), 1);
	assert_string_equal(get(RSQ_NONE, T0 + SEC), "ns/foo");
	assert_int_equal(rsq_next_due(&q), -1);
}

/* A key parked by a run of RETRYs (the 17th waits 5 ms * 2^16) is
 * queued at once by an ADD, as a relist's update handler adds it in
 * client-go; the ADD leaves its failures alone, and the parked retry
 * still fires when due. */
static void
test_add_wakes_parked_retry(void **state)
{
	int64_t t = T0, d, parked;
	int n;

	for (n = 0; n < 16; n++) {
		t += retry("ns/web", t);
		assert_int_equal(rsq_tick(&q, t), 1);
		assert_string_equal(get(RSQ_NONE, t), "ns/web");
		assert_int_equal(done("ns/web", t), RS_OK);
	}
	d = retry("ns/web", t);
	assert_int_equal(d, 5 * MS << 16);
	parked = t + d;
	assert_int_equal(rsq_tick(&q, t + SEC), 0);
	add("ns/web", t + SEC);
	assert_string_equal(get(RSQ_NONE, t + SEC), "ns/web");
	assert_int_equal(rsq_failures(&q, "ns/web", 6), 17);
	assert_int_equal(done("ns/web", t + 2 * SEC), RS_OK);
	assert_int_equal(rsq_forget(&q, "ns/web", 6), RS_OK);
	assert_int_equal(rsq_next_due(&q), parked);
	assert_int_equal(rsq_tick(&q, parked), 1);
	assert_string_equal(get(RSQ_NONE, parked), "ns/web");
}

/* The delayed add of a key still queued is absorbed by the dirty set. */
static void
test_after_while_queued(void **state)
{
	add("ns/foo", T0);
	after("ns/foo", 10 * MS, T0);
	assert_int_equal(rsq_tick(&q, T0 + 10 * MS), 1);
	assert_int_equal(rsq_len(&q), 1);
	assert_string_equal(get(RSQ_NONE, T0), "ns/foo");
	assert_string_equal(get(RSQ_NONE, T0), "");
}

/* TestDeduping: a later AFTER does not postpone, an earlier one wins. */
static void
test_after_dedup(void **state)
{
	int64_t t = T0;

	after("ns/foo", 50 * MS, t);
	after("ns/foo", 70 * MS, t);
	assert_int_equal(rsq_len(&q), 0);
	t += 60 * MS;
	assert_int_equal(rsq_tick(&q, t), 1);
	assert_string_equal(get(RSQ_NONE, t), "ns/foo");
	assert_int_equal(done("ns/foo", t), RS_OK);
	t += 20 * MS;
	assert_int_equal(rsq_tick(&q, t), 0);
	assert_int_equal(rsq_len(&q), 0);

	after("ns/foo", 50 * MS, t);
	after("ns/foo", 30 * MS, t);
	assert_int_equal(rsq_next_due(&q), t + 30 * MS);
	t += 40 * MS;
	assert_int_equal(rsq_tick(&q, t), 1);
	assert_string_equal(get(RSQ_NONE, t), "ns/foo");
	assert_int_equal(done("ns/foo", t), RS_OK);
	t += 20 * MS;
	assert_int_equal(rsq_tick(&q, t), 0);
	assert_int_equal(rsq_len(&q), 0);
	assert_int_equal(q.k.count, 0);
}

/* TestAddTwoFireEarly and TestCopyShifting: earliest first. */
static void
test_after_order(void **state)
{
	after("ns/foo", SEC, T0);
	after("ns/bar", 50 * MS, T0);
	assert_int_equal(rsq_tick(&q, T0 + 60 * MS), 1);
	assert_string_equal(get(RSQ_NONE, T0), "ns/bar");
	after("ns/baz", 2 * SEC, T0 + 60 * MS);
	assert_int_equal(rsq_tick(&q, T0 + 1060 * MS), 1);
	assert_string_equal(get(RSQ_NONE, T0), "ns/foo");
	assert_int_equal(rsq_tick(&q, T0 + 3060 * MS), 1);
	assert_string_equal(get(RSQ_NONE, T0), "ns/baz");

	after("ns/one", SEC, T0);
	after("ns/two", 500 * MS, T0);
	after("ns/three", 250 * MS, T0);
	after("ns/four", 250 * MS, T0);
	assert_int_equal(rsq_tick(&q, T0 + 2 * SEC), 4);
	assert_string_equal(get(RSQ_NONE, T0), "ns/three");
	assert_string_equal(get(RSQ_NONE, T0), "ns/four");
	assert_string_equal(get(RSQ_NONE, T0), "ns/two");
	assert_string_equal(get(RSQ_NONE, T0), "ns/one");
}

/* A delay of zero or less adds at once; every AFTER counts as a retry. */
static void
test_after_now(void **state)
{
	after("ns/a", 0, T0);
	after("ns/b", -5 * SEC, T0);
	assert_int_equal(rsq_len(&q), 2);
	assert_int_equal(q.retries, 2);
	assert_int_equal(q.heap.n, 0);
}

/* RETRY: 5 ms doubling per failure to the 1000 s cap; FORGET resets. */
static void
test_retry_backoff(void **state)
{
	int64_t want = 5 * MS;
	int n;

	for (n = 0; want < 1000 * SEC; n++, want *= 2)
		assert_int_equal(retry("ns/one", T0), want);
	assert_int_equal(n, 18);         /* 5 ms * 2^17 = 655.36 s */
	assert_int_equal(retry("ns/one", T0), 1000 * SEC);
	assert_int_equal(retry("ns/one", T0), 1000 * SEC);
	assert_int_equal(rsq_failures(&q, "ns/one", 6), 20);

	/* another key has its own count (TestRateLimitingQueue) */
	assert_int_equal(retry("ns/two", T0), 5 * MS);
	assert_int_equal(retry("ns/two", T0), 10 * MS);
	assert_int_equal(rsq_failures(&q, "ns/two", 6), 2);

	assert_int_equal(rsq_forget(&q, "ns/one", 6), RS_OK);
	assert_int_equal(rsq_failures(&q, "ns/one", 6), 0);
	assert_int_equal(retry("ns/one", T0), 5 * MS);
	assert_int_equal(rsq_failures(&q, "ns/one", 6), 1);
	assert_int_equal(q.retries, 23);
}

/* The retried key comes back once its delay has passed. */
static void
test_retry_requeues(void **state)
{
	add("ns/a", T0);
	assert_string_equal(get(RSQ_NONE, T0), "ns/a");
	assert_int_equal(done("ns/a", T0), RS_OK);
	assert_int_equal(retry("ns/a", T0), 5 * MS);
	assert_int_equal(rsq_tick(&q, T0 + 4 * MS), 0);
	assert_int_equal(rsq_tick(&q, T0 + 5 * MS), 1);
	assert_string_equal(get(RSQ_NONE, T0 + 5 * MS), "ns/a");
	assert_int_equal(done("ns/a", T0 + 6 * MS), RS_OK);
	/* failures keep the key known until FORGET */
	assert_int_equal(q.k.count, 1);
	assert_int_equal(rsq_forget(&q, "ns/a", 4), RS_OK);
	assert_int_equal(q.k.count, 0);
}

/* The token bucket: 100 RETRYs pass at the per-key delay, then each one
 * waits 100 ms more (10/s), and time refills the bucket. */
static void
test_bucket_after_burst(void **state)
{
	char key[32];
	int i;

	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof key, "ns/k%d", i);
		assert_int_equal(retry(key, T0), 5 * MS);
	}
	assert_int_equal(retry("ns/k100", T0), 100 * MS);
	assert_int_equal(retry("ns/k101", T0), 200 * MS);
	assert_int_equal(retry("ns/k102", T0), 300 * MS);
	/* one second later 10 tokens have come back: 3 owed, 7 left */
	for (i = 0; i < 7; i++) {
		snprintf(key, sizeof key, "ns/j%d", i);
		assert_int_equal(retry(key, T0 + SEC), 5 * MS);
	}
	assert_int_equal(retry("ns/j7", T0 + SEC), 100 * MS);
	/* the larger of the two: a key's own backoff past the bucket's */
	for (i = 0; i < 6; i++)
		retry("ns/slow", T0 + 100 * SEC);
	assert_int_equal(retry("ns/slow", T0 + 100 * SEC), 320 * MS);
}

/* Every RETRY takes a token, whatever the key's own delay
 * (MaxOfRateLimiter asks both). */
static void
test_bucket_shared(void **state)
{
	int i;

	for (i = 0; i < 100; i++)
		retry("ns/same", T0);
	assert_int_equal(retry("ns/other", T0), 100 * MS);
}

/* The exponential alone, client-go's own sequence and its overflow. */
static void
test_backoff_limiter(void **state)
{
	struct rsq_limiter l;
	uint32_t f = 0;

	rsq_limiter_init(&l, 1 * MS, 1 * SEC, 0, 1);
	assert_int_equal(rsq_limiter_when(&l, &f, T0), 1 * MS);
	assert_int_equal(rsq_limiter_when(&l, &f, T0), 2 * MS);
	assert_int_equal(rsq_limiter_when(&l, &f, T0), 4 * MS);
	assert_int_equal(rsq_limiter_when(&l, &f, T0), 8 * MS);
	assert_int_equal(rsq_limiter_when(&l, &f, T0), 16 * MS);
	assert_int_equal(f, 5);
	/* qps 0: the bucket never delays */
	f = 0;
	rsq_limiter_init(&l, 1, 1000 * SEC, 0, 1);
	f = 5;
	assert_int_equal(rsq_backoff_when(&l, &f), 32);
	f = 80;
	assert_int_equal(rsq_backoff_when(&l, &f), 1000 * SEC);
	f = UINT32_MAX - 1;
	assert_int_equal(rsq_backoff_when(&l, &f), 1000 * SEC);
	assert_int_equal(rsq_backoff_when(&l, &f), 1000 * SEC);
	assert_int_equal(f, UINT32_MAX);
}

/* A holder's keys go back when it goes away, in the order handed out;
 * held-by-nobody keys (GET HOLD) stay out. */
static void
test_release_holder(void **state)
{
	assert_int_equal(rsq_holder_reserve(&q, 3), RS_OK);
	add("ns/a", T0);
	add("ns/b", T0);
	add("ns/c", T0);
	add("ns/d", T0);
	assert_string_equal(get(3, T0), "ns/a");
	assert_string_equal(get(3, T0), "ns/b");
	assert_string_equal(get(RSQ_NONE, T0), "ns/c");
	assert_int_equal(rsq_len(&q), 1);
	rsq_release(&q, 3, T0 + MS);
	assert_int_equal(q.processing, 1);
	assert_int_equal(rsq_len(&q), 3);
	assert_string_equal(get(RSQ_NONE, T0), "ns/d");
	assert_string_equal(get(RSQ_NONE, T0), "ns/a");
	assert_string_equal(get(RSQ_NONE, T0), "ns/b");
	assert_int_equal(q.work_duration.count, 2);
	rsq_release(&q, 3, T0);
	assert_int_equal(rsq_len(&q), 0);
}

/* Released while also re-added: queued once. DONE from someone else
 * takes the key off its holder. */
static void
test_release_dirty_and_done(void **state)
{
	assert_int_equal(rsq_holder_reserve(&q, 0), RS_OK);
	add("ns/a", T0);
	add("ns/b", T0);
	assert_string_equal(get(0, T0), "ns/a");
	assert_string_equal(get(0, T0), "ns/b");
	add("ns/a", T0);
	assert_int_equal(done("ns/b", T0), RS_OK);
	rsq_release(&q, 0, T0);
	assert_int_equal(rsq_len(&q), 1);
	assert_string_equal(get(RSQ_NONE, T0), "ns/a");
	assert_int_equal(q.k.count, 1);
}

/* ShutDownWithDrain: nothing added or handed out; DONE drains. */
static void
test_shutdown_drain(void **state)
{
	add("ns/a", T0);
	add("ns/b", T0);
	after("ns/later", MS, T0);
	assert_string_equal(get(RSQ_NONE, T0), "ns/a");
	rsq_shutdown(&q);
	assert_int_equal(rsq_add(&q, "ns/c", 4, T0), RS_EREFUSED);
	assert_int_equal(rsq_after(&q, "ns/c", 4, MS, T0), RS_EREFUSED);
	assert_int_equal(rsq_retry(&q, "ns/c", 4, T0, NULL), RS_EREFUSED);
	assert_string_equal(get(RSQ_NONE, T0), "");
	assert_int_equal(rsq_tick(&q, T0 + SEC), 0);
	assert_int_equal(rsq_next_due(&q), -1);
	assert_false(rsq_drained(&q));
	assert_int_equal(done("ns/a", T0), RS_OK);
	assert_true(rsq_drained(&q));
}

/* TestMetrics: adds, depth, queue and work durations, unfinished work. */
static void
test_metrics(void **state)
{
	struct rsq_stats s;
	int i;

	add("ns/foo", 0);
	assert_int_equal(q.adds, 1);
	assert_int_equal(q.depth, 1);
	assert_string_equal(get(RSQ_NONE, 50000), "ns/foo");
	assert_int_equal(q.queue_duration.count, 1);
	assert_true(q.queue_duration.sum == 5e-05);
	assert_int_equal(q.queue_duration.n[4], 1);   /* le 1e-4 */
	for (i = 0; i < 5; i++)
		add("ns/foo", 50000);
	assert_int_equal(q.adds, 2);
	assert_int_equal(q.depth, 1);
	assert_int_equal(done("ns/foo", 75000), RS_OK);
	assert_int_equal(q.work_duration.count, 1);
	assert_true(q.work_duration.sum == 2.5e-05);
	assert_int_equal(q.depth, 1);
	assert_string_equal(get(RSQ_NONE, 75000), "ns/foo");
	assert_int_equal(q.queue_duration.count, 2);
	rsq_stats(&q, 75000 + MS, &s);
	assert_true(s.unfinished > 0.000999 && s.unfinished < 0.001001);
	assert_true(s.longest > 0.000999 && s.longest < 0.001001);
	assert_int_equal(s.depth, 0);
	assert_int_equal(s.processing, 1);
	assert_int_equal(done("ns/foo", 75000 + MS), RS_OK);
	assert_int_equal(q.work_duration.count, 2);
	rsq_stats(&q, 75000 + 2 * MS, &s);
	assert_true(s.unfinished == 0);
}

/* Keys come and go without the item array growing: slots are reused. */
static void
test_memory_reuse(void **state)
{
	char key[32];
	int i;

	for (i = 0; i < 100000; i++) {
		snprintf(key, sizeof key, "ns/k%d", i);
		add(key, T0);
		assert_string_equal(get(RSQ_NONE, T0), key);
		assert_int_equal(done(key, T0), RS_OK);
	}
	assert_int_equal(q.k.count, 0);
	assert_true(q.k.nitems <= 1);
	assert_int_equal(q.adds, 100000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup_default, teardown)
		T(test_fifo_dedup),
		T(test_add_while_processing),
		T(test_collapse_while_processing),
		T(test_done_not_processing),
		T(test_after_then_add),
		T(test_after_while_queued),
		T(test_add_wakes_parked_retry),
		T(test_after_dedup),
		T(test_after_order),
		T(test_after_now),
		T(test_retry_backoff),
		T(test_retry_requeues),
		T(test_bucket_after_burst),
		T(test_bucket_shared),
		T(test_backoff_limiter),
		T(test_release_holder),
		T(test_release_dirty_and_done),
		T(test_shutdown_drain),
		T(test_metrics),
		T(test_memory_reuse),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
