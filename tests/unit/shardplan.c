/* Unit tests of rs-lease's shard mode without a server: the fair share,
 * which buckets a member takes and gives up (plan.c), the Lease names of
 * a group, and the shard file and fence file prog reads (shardout.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../bin/rs-lease/plan.c"
#include "../../bin/rs-lease/shardout.c"

static void
test_share(void **state)
{
	assert_int_equal(plan_share(32, 1), 32);
	assert_int_equal(plan_share(32, 3), 11);
	assert_int_equal(plan_share(32, 4), 8);
	assert_int_equal(plan_share(32, 5), 7);
	assert_int_equal(plan_share(1, 3), 1);
	assert_int_equal(plan_share(256, 0), 256);
}

/* Ten lease durations of a member Lease: none (0) counts as 1 s, and the
 * largest the server takes (int32 seconds) stays in range. */
static void
test_stale(void **state)
{
	assert_true(plan_stale_ns(15) == 150000000000LL);
	assert_true(plan_stale_ns(0) == 10000000000LL);
	assert_true(plan_stale_ns(-5) == 10000000000LL);
	assert_true(plan_stale_ns(1000000000L) > 0);
	assert_true(plan_stale_ns(2147483647L) == INT64_MAX);
}

/* From the offset, wrapping, free buckets only, at most want. */
static void
test_take(void **state)
{
	shard_set free = { 0 }, take;
	unsigned i;

	for (i = 0; i < 10; i += 2)
		set_put(free, i, 1);   /* 0 2 4 6 8 */
	assert_int_equal(plan_take(free, 10, 7, 3, take), 3);
	assert_true(set_has(take, 8) && set_has(take, 0) && set_has(take, 2));
	assert_int_equal(set_count(take), 3);
	assert_int_equal(plan_take(free, 10, 0, 9, take), 5);
	assert_int_equal(plan_take(free, 10, 3, 0, take), 0);
	assert_int_equal(set_count(take), 0);
	/* Past the first word of the bitmap. */
	memset(free, 0, sizeof free);
	set_put(free, 200, 1);
	assert_int_equal(plan_take(free, 256, 100, 5, take), 1);
	assert_true(set_has(take, 200));
}

static void
test_drop(void **state)
{
	shard_set held = { 0 }, drop;

	set_put(held, 1, 1);
	set_put(held, 5, 1);
	set_put(held, 70, 1);
	plan_drop(held, 128, 2, drop);
	assert_true(set_has(drop, 70) && set_has(drop, 5));
	assert_false(set_has(drop, 1));
	plan_drop(held, 128, 9, drop);
	assert_int_equal(set_count(drop), 3);
}

static void
test_names(void **state)
{
	unsigned i = 999;

	assert_int_equal(plan_name("g", "g-b-007", &i), 'b');
	assert_int_equal(i, 7);
	assert_int_equal(plan_name("g", "g-b-255", &i), 'b');
	assert_int_equal(plan_name("g", "g-b-256", &i), 0);
	assert_int_equal(plan_name("g", "g-b-07", &i), 0);
	assert_int_equal(plan_name("g", "g-b-0x7", &i), 0);
	assert_int_equal(plan_name("g", "g-m-00ff", &i), 'm');
	assert_int_equal(plan_name("g", "g-m-", &i), 0);
	assert_int_equal(plan_name("g", "g-x-001", &i), 0);
	assert_int_equal(plan_name("g", "g", &i), 0);
	assert_int_equal(plan_name("g", "g-", &i), 0);
	assert_int_equal(plan_name("g", "gg-b-001", &i), 0);
	assert_int_equal(plan_name("g-b", "g-b-001", &i), 0);
}

static char *
slurp(const char *path)
{
	static char buf[8192];
	FILE *fp = fopen(path, "r");
	size_t n;

	assert_non_null(fp);
	n = fread(buf, 1, sizeof buf - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	return buf;
}

/* The shard file: JSON, 0600, the held set as a merged selector; the
 * fence: one slot a bucket, every one 0 at the start. */
static void
test_files(void **state)
{
	char dir[] = "/tmp/shardplan.XXXXXX", sf[64], ff[64], *t;
	struct shard_opts so;
	struct shard_out o;
	shard_set held = { 0 };
	struct stat st;
	FILE *fp;

	assert_non_null(mkdtemp(dir));
	snprintf(sf, sizeof sf, "%s/shards.json", dir);
	snprintf(ff, sizeof ff, "%s/fence", dir);
	/* A fence left by an earlier run is not trusted. */
	fp = fopen(ff, "w");
	fputs("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", fp);
	fclose(fp);
	memset(&so, 0, sizeof so);
	so.nbuckets = 4;
	so.shard_file = sf;
	so.fence = ff;
	assert_int_equal(shard_out_open(&o, &so), RS_OK);
	assert_int_equal(rs_fence_get(o.fence, 0), 0);
	assert_int_equal(rs_fence_get(o.fence, 3), 0);
	assert_int_equal(stat(ff, &st), 0);
	assert_int_equal(st.st_size, RS_FENCE_HEADER + 32);
	assert_int_equal(st.st_mode & 0777, 0600);
	shard_out_fence(&o, 2, 12345);
	assert_int_equal(rs_fence_get(o.fence, 2), 12345);
	set_put(held, 0, 1);
	set_put(held, 1, 1);
	set_put(held, 3, 1);
	assert_int_equal(shard_out_file(&o, held, 7), RS_OK);
	t = slurp(sf);
	assert_string_equal(t, "{\"shards\":4,\"held\":[0,1,3],\"selector\":"
	    "\"shardRange(object.metadata.namespace, '0x0000000000000000', "
	    "'0x8000000000000000') || shardRange(object.metadata.namespace, "
	    "'0xc000000000000000', '0x10000000000000000')\",\"generation\":7}\n");
	assert_int_equal(stat(sf, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	memset(held, 0, sizeof held);
	assert_int_equal(shard_out_file(&o, held, 8), RS_OK);
	assert_string_equal(slurp(sf), "{\"shards\":4,\"held\":[],"
	    "\"selector\":\"\",\"generation\":8}\n");
	rs_fence_close(o.fence);
	unlink(sf);
	unlink(ff);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_take),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_drop),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
