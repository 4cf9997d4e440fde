/* The shard key against upstream. Hashes are Go's hash/fnv New64a, as
 * apimachinery's sharding.HashField uses it; bucket bounds are
 * floor(i * 2^64 / B) by math/big; selectors are what a Go program built
 * from those bounds, each accepted by apiserver v0.36.3's sharding.Parse
 * (which gave the accepted and refused inputs below, run in /tmp). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "shard.h"

static const struct { const char *s; uint64_t h; } hashes[] = {
	{ "", 0xcbf29ce484222325ULL },
	{ "a", 0xaf63dc4c8601ec8cULL },
	{ "default", 0xebada5168620c5feULL },
	{ "kube-system", 0xdf65c7bc1d82b35eULL },
	{ "ns-1", 0x4a82b7ba48e25cc0ULL },
	{ "ns-17", 0x7e7b2889d8a3f7b5ULL },
	{ "foobar", 0x85944171f73967e8ULL },
	{ "rs-controller", 0xca3b89f63ba08c59ULL },
};

static void
hash_vectors(void **state)
{
	for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++)
		assert_true(rs_shard_hash(hashes[i].s, strlen(hashes[i].s)) ==
		    hashes[i].h);
}

static const struct { unsigned b, i; uint64_t start; } starts[] = {
	{ 3, 1, 0x5555555555555555ULL },
	{ 3, 2, 0xaaaaaaaaaaaaaaaaULL },
	{ 7, 1, 0x2492492492492492ULL },
	{ 7, 2, 0x4924924924924924ULL },
	{ 7, 6, 0xdb6db6db6db6db6dULL },
	{ 32, 1, 0x0800000000000000ULL },
	{ 32, 31, 0xf800000000000000ULL },
	{ 256, 1, 0x0100000000000000ULL },
	{ 256, 255, 0xff00000000000000ULL },
};

static void
bucket_starts(void **state)
{
	for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
		assert_true(rs_shard_bucket_start(starts[i].i, starts[i].b) ==
		    starts[i].start);
}

/* Every bound of every B: its first hash is in it, the one before in the
 * bucket before; 0 and the top in the first and last. */
static void
bucket_bounds(void **state)
{
	for (unsigned b = 1; b <= RS_SHARD_BUCKETS_MAX; b++) {
		assert_int_equal(rs_shard_bucket(0, b), 0);
		assert_int_equal(rs_shard_bucket(UINT64_MAX, b), b - 1);
		for (unsigned i = 1; i < b; i++) {
			uint64_t s = rs_shard_bucket_start(i, b);

			assert_int_equal(rs_shard_bucket(s, b), i);
			assert_int_equal(rs_shard_bucket(s - 1, b), i - 1);
		}
	}
	/* B = 32: the top five bits */
	for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++)
		assert_int_equal(rs_shard_bucket(hashes[i].h, 32),
		    hashes[i].h >> 59);
}

static char *
sel_of(unsigned b, const unsigned *held, size_t n)
{
	uint64_t bits[RS_SHARD_BUCKETS_MAX / 64] = { 0 };
	char *s = NULL;

	for (size_t i = 0; i < n; i++)
		bits[held[i] / 64] |= 1ULL << (held[i] % 64);
	assert_int_equal(rs_shard_selector(bits, b, &s), RS_OK);
	return s;
}

#define R(a, b) "shardRange(object.metadata.namespace, '" a "', '" b "')"
#define TOP "0x10000000000000000"

static void
selector_strings(void **state)
{
	static const unsigned h32[] = { 0, 1, 2, 3 }, h3[] = { 1 },
	    h7[] = { 0, 2, 3, 6 }, h1[] = { 0 }, h256[] = { 255 };
	char *s;

	s = sel_of(32, h32, 4);
	assert_string_equal(s, R("0x0000000000000000", "0x2000000000000000"));
	free(s);
	s = sel_of(3, h3, 1);
	assert_string_equal(s, R("0x5555555555555555", "0xaaaaaaaaaaaaaaaa"));
	free(s);
	s = sel_of(7, h7, 4);
	assert_string_equal(s, R("0x0000000000000000", "0x2492492492492492")
	    " || " R("0x4924924924924924", "0x9249249249249249")
	    " || " R("0xdb6db6db6db6db6d", TOP));
	free(s);
	s = sel_of(1, h1, 1);
	assert_string_equal(s, R("0x0000000000000000", TOP));
	free(s);
	s = sel_of(256, h256, 1);
	assert_string_equal(s, R("0xff00000000000000", TOP));
	free(s);
}

static void
selector_refused(void **state)
{
	uint64_t none[4] = { 0 }, all[4] = { ~0ULL, ~0ULL, ~0ULL, ~0ULL };
	char *s = (char *)1;

	assert_int_equal(rs_shard_selector(none, 32, &s), RS_EUSAGE);
	assert_null(s);
	assert_int_equal(rs_shard_selector(all, 0, &s), RS_EUSAGE);
	assert_int_equal(rs_shard_selector(all, 257, &s), RS_EUSAGE);
}

/* The worst case, every other bucket of 256: 128 terms, which the
 * server's parser took (Parse gave 128 requirements), and the buffer's
 * bound holds. The length is Go's strings.Join of them. */
static void
selector_longest(void **state)
{
	unsigned held[128];
	struct rs_shard_ranges r;
	char *s;

	for (unsigned i = 0; i < 128; i++)
		held[i] = 2 * i;
	s = sel_of(256, held, 128);
	assert_int_equal(strlen(s), 10876);
	assert_int_equal(rs_shard_parse(s, &r), RS_OK);
	assert_int_equal(r.n, 128);
	for (unsigned i = 0; i < 128; i++) {
		assert_true(r.r[i].lo == rs_shard_bucket_start(2 * i, 256));
		assert_true(r.r[i].last ==
		    rs_shard_bucket_start(2 * i + 1, 256) - 1);
	}
	rs_shard_ranges_free(&r);
	free(s);
}

/* Each selector of every set of buckets of small B matches exactly the
 * hashes of those buckets: bounds and their neighbours; only the set of
 * all of them is whole. */
static void
selector_round_trip(void **state)
{
	for (unsigned b = 1; b <= 6; b++)
		for (uint64_t set = 1; set < (1ULL << b); set++) {
			struct rs_shard_ranges r;
			char *s = NULL;

			assert_int_equal(rs_shard_selector(&set, b, &s), RS_OK);
			assert_int_equal(rs_shard_parse(s, &r), RS_OK);
			for (unsigned i = 0; i < b; i++) {
				uint64_t lo = rs_shard_bucket_start(i, b);
				uint64_t hi = i + 1 < b ?
				    rs_shard_bucket_start(i + 1, b) - 1 :
				    UINT64_MAX;
				int in = (set >> i) & 1;

				assert_int_equal(rs_shard_match_hash(&r, lo), in);
				assert_int_equal(rs_shard_match_hash(&r, hi), in);
				assert_int_equal(rs_shard_match_hash(&r,
				    lo + (hi - lo) / 2), in);
			}
			assert_int_equal(rs_shard_ranges_whole(&r),
			    set == (1ULL << b) - 1);
			rs_shard_ranges_free(&r);
			free(s);
		}
}

/* What apiserver's sharding.Parse accepts and refuses (its answer in the
 * comment); uid is refused here, on purpose: a client here checks the
 * namespace only. */
static const char *const accepted[] = {
	R("0x0000000000000000", TOP),
	"shardRange(object.metadata.namespace,'0x0000000000000000','0x8000000000000000')",
	"  shardRange( object.metadata.namespace , \"0x0000000000000000\" , \"0x8000000000000000\" )  ",
	"(" R("0x0000000000000000", "0x4000000000000000") ") || "
	    R("0x8000000000000000", "0xc000000000000000"),
	R("0x0000000000000000", "0x4000000000000000") " || (" R("0x8000000000000000",
	    "0xc000000000000000") " || " R("0xe000000000000000", TOP) ")",
};

static const char *const refused[] = {
	/* must be a 0x-prefixed 16-digit hex value */
	R("0x0", "0x8000000000000000"),
	/* invalid hex character "X" */
	R("0x0000000000000000", "0x8000000000000000X"),
	/* invalid hex character "A" */
	R("0x000000000000000A", "0x8000000000000000"),
	/* must have '0x' prefix */
	R("0000000000000000", "0x8000000000000000"),
	/* start must be less than end */
	R("0x8000000000000000", "0x8000000000000000"),
	R("0x9000000000000000", "0x8000000000000000"),
	R(TOP, TOP),
	/* 17-digit hex value must be '0x10000000000000000' */
	R("0x0000000000000000", "0x20000000000000000"),
	R("0x0000000000000000", "0x00000000000000000"),
	/* unsupported field path */
	"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
	/* requires exactly 3 arguments */
	"shardRange(object.metadata.namespace, '0x0000000000000000')",
	"shardRange(object.metadata.namespace, '0x0000000000000000', "
	    "'0x8000000000000000', '0x9000000000000000')",
	/* unsupported function "_&&_" */
	R("0x0000000000000000", "0x8000000000000000") " && "
	    R("0x0000000000000000", "0x8000000000000000"),
	/* CEL parse error */
	R("0x0000000000000000", "0x8000000000000000") " ||",
	R("0x0000000000000000", "0x8000000000000000") " x",
	/* unsupported function "foo" */
	"foo(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
	/* must be a string literal, got int64 */
	"shardRange(object.metadata.namespace, 0x0000000000000000, '0x8000000000000000')",
	/* empty shard selector is not allowed */
	"",
	"   ",
	/* accepted by the server, refused here: not the namespace */
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
};

static void
parse_accepted(void **state)
{
	struct rs_shard_ranges r;

	for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
		assert_int_equal(rs_shard_parse(accepted[i], &r), RS_OK);
		assert_true(r.n >= 1);
		rs_shard_ranges_free(&r);
	}
	assert_int_equal(rs_shard_parse(accepted[4], &r), RS_OK);
	assert_int_equal(r.n, 3);
	assert_true(r.r[2].lo == 0xe000000000000000ULL &&
	    r.r[2].last == UINT64_MAX);
	assert_true(r.r[1].last == 0xbfffffffffffffffULL);
	rs_shard_ranges_free(&r);
}

static void
parse_refused(void **state)
{
	struct rs_shard_ranges r;
	char why[256];

	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		why[0] = '\0';
		if (rs_shard_parse_why(refused[i], &r, why, sizeof why) !=
		    RS_EPARSE)
			fail_msg("accepted: %s", refused[i]);
		assert_true(why[0] != '\0');
		assert_null(r.r);
	}
}

/* The namespaces of the hash vectors against a half: the server's
 * HexLess on "0x" + HashField says which half each is in. */
static void
match_namespaces(void **state)
{
	struct rs_shard_ranges lo, hi;

	assert_int_equal(rs_shard_parse(R("0x0000000000000000",
	    "0x8000000000000000"), &lo), RS_OK);
	assert_int_equal(rs_shard_parse(R("0x8000000000000000", TOP), &hi),
	    RS_OK);
	for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++) {
		const char *s = hashes[i].s;
		int low = hashes[i].h < 0x8000000000000000ULL;

		assert_int_equal(rs_shard_match(&lo, s, strlen(s)), low);
		assert_int_equal(rs_shard_match(&hi, s, strlen(s)), !low);
	}
	/* ns-1 (0x4a82...) and ns-17 (0x7e7b...) low, default high */
	assert_true(rs_shard_match(&lo, "ns-1", 4));
	assert_false(rs_shard_match(&lo, "default", 7));
	rs_shard_ranges_free(&lo);
	rs_shard_ranges_free(&hi);
}

/* Whole or not, as the ranges fall: in any order, overlapping, nested;
 * a hole of one hash, at 0, at the top or between two, is not whole. */
static const struct { const char *sel; int whole; } wholes[] = {
	{ R("0x0000000000000000", TOP), 1 },
	{ R("0x0000000000000000", "0x8000000000000000") " || "
	    R("0x8000000000000000", TOP), 1 },
	{ R("0x8000000000000000", TOP) " || "
	    R("0x0000000000000000", "0x8000000000000000"), 1 },
	{ R("0xc000000000000000", TOP) " || " R("0x4000000000000000",
	    "0xd000000000000000") " || " R("0x0000000000000000",
	    "0x5000000000000000"), 1 },
	{ R("0x1000000000000000", "0x2000000000000000") " || "
	    R("0x0000000000000000", TOP), 1 },
	{ R("0x0000000000000000", "0x8000000000000000") " || "
	    R("0x0000000000000000", "0x8000000000000000") " || "
	    R("0x7fffffffffffffff", TOP), 1 },
	{ R("0x0000000000000001", TOP), 0 },
	{ R("0x0000000000000000", "0xffffffffffffffff"), 0 },
	{ R("0x0000000000000000", "0x8000000000000000") " || "
	    R("0x8000000000000001", TOP), 0 },
	{ R("0x8000000000000001", TOP) " || "
	    R("0x0000000000000000", "0x8000000000000000"), 0 },
	{ R("0x0000000000000000", "0x4000000000000000") " || "
	    R("0x8000000000000000", TOP), 0 },
};

static void
ranges_whole(void **state)
{
	struct rs_shard_ranges none = { NULL, 0 };

	for (size_t i = 0; i < sizeof wholes / sizeof wholes[0]; i++) {
		struct rs_shard_ranges r;

		assert_int_equal(rs_shard_parse(wholes[i].sel, &r), RS_OK);
		if (rs_shard_ranges_whole(&r) != wholes[i].whole)
			fail_msg("%s: whole %d", wholes[i].sel, !wholes[i].whole);
		rs_shard_ranges_free(&r);
	}
	assert_false(rs_shard_ranges_whole(&none));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hash_vectors),
		cmocka_unit_test(bucket_starts),
		cmocka_unit_test(bucket_bounds),
		cmocka_unit_test(selector_strings),
		cmocka_unit_test(selector_refused),
		cmocka_unit_test(selector_longest),
		cmocka_unit_test(selector_round_trip),
		cmocka_unit_test(parse_accepted),
		cmocka_unit_test(parse_refused),
		cmocka_unit_test(match_namespaces),
		cmocka_unit_test(ranges_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
