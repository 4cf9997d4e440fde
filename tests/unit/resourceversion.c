/* resourceVersions ordered as apimachinery's CompareResourceVersion does:
 * well-formed ones (decimal, no sign, no leading zero, any length) by
 * value; anything else is an error, whichever side it is on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "resourceversion.h"

/* The order of a and b, which must be comparable. */
static int
order(const char *a, const char *b)
{
	int cmp = 42;

	assert_int_equal(rs_rv_compare(a, b, &cmp), RS_OK);
	assert_true(cmp == -1 || cmp == 0 || cmp == 1);
	return cmp;
}

static void
ordered_by_value(void **state)
{
	assert_int_equal(order("1", "1"), 0);
	assert_int_equal(order("9", "10"), -1);
	assert_int_equal(order("10", "9"), 1);
	assert_int_equal(order("123", "124"), -1);
	assert_int_equal(order("124", "123"), 1);
	assert_int_equal(order("99999", "100000"), -1);
	assert_int_equal(order("5000", "5000"), 0);
	/* past 64 bits: no conversion, no overflow */
	assert_int_equal(order("18446744073709551615", "18446744073709551616"), -1);
	assert_int_equal(order("100000000000000000000000000000000000000001",
	    "99999999999999999999999999999999999999999"), 1);
	assert_int_equal(order("100000000000000000000000000000000000000001",
	    "100000000000000000000000000000000000000001"), 0);
}

/* Not well-formed on either side: RS_EPARSE, and the result untouched. */
static void
refused(void **state)
{
	static const char *bad[] = {
		"", "0", "00", "01", "007", "-1", "+1", " 1", "1 ", "1\n",
		"1.0", "1e3", "0x1f", "abc", "12a", "1_000",
		"\xd9\xa1",             /* ARABIC-INDIC DIGIT ONE */
		"\xef\xbc\x91",         /* FULLWIDTH DIGIT ONE */
	};
	size_t i;
	int cmp;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cmp = 42;
		assert_false(rs_rv_well_formed(bad[i]));
		assert_int_equal(rs_rv_compare(bad[i], "5", &cmp), RS_EPARSE);
		assert_int_equal(rs_rv_compare("5", bad[i], &cmp), RS_EPARSE);
		assert_int_equal(rs_rv_compare(bad[i], bad[i], &cmp), RS_EPARSE);
		assert_int_equal(cmp, 42);
	}
	assert_false(rs_rv_well_formed(NULL));
	assert_int_equal(rs_rv_compare(NULL, "5", &cmp), RS_EPARSE);
	assert_int_equal(rs_rv_compare("5", NULL, &cmp), RS_EPARSE);
	assert_true(rs_rv_well_formed("1"));
	assert_true(rs_rv_well_formed("10"));
	assert_true(rs_rv_well_formed("9876543210"));
}

/* xorshift64: a fixed sequence, so that a failure can be replayed. */
static uint64_t
next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Against the integers' own order, over random values of every length;
 * a value is made smaller or equal half of the time, so that equal
 * lengths and equal values come up often. */
static void
agrees_with_integers(void **state)
{
	uint64_t s = 0x9e3779b97f4a7c15ull, a, b;
	char sa[32], sb[32];
	int i, want;

	for (i = 0; i < 100000; i++) {
		a = next(&s) >> (next(&s) % 64);
		b = i % 2 ? a - (next(&s) % 3) : next(&s) >> (next(&s) % 64);
		if (a == 0 || b == 0)
			continue;
		snprintf(sa, sizeof sa, "%llu", (unsigned long long)a);
		snprintf(sb, sizeof sb, "%llu", (unsigned long long)b);
		want = (a > b) - (a < b);
		assert_int_equal(order(sa, sb), want);
		assert_int_equal(order(sb, sa), -want);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ordered_by_value),
		cmocka_unit_test(refused),
		cmocka_unit_test(agrees_with_integers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
