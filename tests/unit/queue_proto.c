/* Unit tests of the queue protocol's request parser (bin/rs-queue/proto.c)
 * and of the key rule shared by clients and server
 * (libcommon/queue_client.c: rs_queue_key_check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-queue/proto.c"

static struct rsq_req r;

static const char *
parse(const char *text)
{
	static char line[8192];

	snprintf(line, sizeof line, "%s", text);
	return rsq_parse(line, strlen(line), &r);
}

static void
test_verbs(void **state)
{
	assert_null(parse("ADD ns/a"));
	assert_int_equal(r.verb, RSQ_ADD);
	assert_int_equal(r.keylen, 4);
	assert_memory_equal(r.key, "ns/a", 4);
	assert_null(parse("done ns/a"));
	assert_int_equal(r.verb, RSQ_DONE);
	assert_null(parse("Forget ns/a"));
	assert_int_equal(r.verb, RSQ_FORGET);
	assert_null(parse("RETRY ns/a"));
	assert_int_equal(r.verb, RSQ_RETRY);
	assert_null(parse("LEN"));
	assert_int_equal(r.verb, RSQ_LEN);
	assert_null(parse("STATS"));
	assert_int_equal(r.verb, RSQ_STATS);
	assert_null(parse("SHUTDOWN"));
	assert_int_equal(r.verb, RSQ_SHUTDOWN);
	assert_null(parse("GET"));
	assert_int_equal(r.verb, RSQ_GET);
	assert_int_equal(r.hold, 0);
	assert_null(parse("GET hold"));
	assert_int_equal(r.hold, 1);
}

static void
test_spacing(void **state)
{
	assert_null(parse("  ADD\t ns/a  \r"));
	assert_int_equal(r.keylen, 4);
	assert_null(parse("LEN\r"));
	assert_string_equal(parse(""), "empty request");
	assert_string_equal(parse(" \t\r"), "empty request");
}

static void
test_after(void **state)
{
	assert_null(parse("AFTER 0.25 ns/a"));
	assert_int_equal(r.verb, RSQ_AFTER);
	assert_int_equal(r.delay_ns, 250000000);
	assert_int_equal(r.keylen, 4);
	assert_null(parse("AFTER 3 ns/a"));
	assert_int_equal(r.delay_ns, 3000000000LL);
	assert_null(parse("AFTER 0.000000001 ns/a"));
	assert_int_equal(r.delay_ns, 1);
	assert_null(parse("AFTER -2 ns/a"));
	assert_int_equal(r.delay_ns, 0);
	assert_string_equal(parse("AFTER abc ns/a"), "bad delay");
	assert_string_equal(parse("AFTER 1s ns/a"), "bad delay");
	assert_string_equal(parse("AFTER nan ns/a"), "bad delay");
	assert_string_equal(parse("AFTER inf ns/a"), "bad delay");
	assert_string_equal(parse("AFTER 2e9 ns/a"), "delay over 1e9 seconds");
	assert_string_equal(parse("AFTER ns/a"), "seconds and key expected");
}

static void
test_malformed(void **state)
{
	assert_string_equal(parse("FROB ns/a"), "unknown request");
	assert_string_equal(parse("ADDX ns/a"), "unknown request");
	assert_string_equal(parse("ADD"), "one key expected");
	assert_string_equal(parse("ADD ns/a ns/b"), "one key expected");
	assert_string_equal(parse("LEN 3"), "no argument expected");
	assert_string_equal(parse("GET now"), "GET takes no argument but HOLD");
	assert_string_equal(parse("a b c d e"), "too many words");
	assert_string_equal(parse("ADD nokey"), "key is not namespace/name");
	assert_string_equal(parse("ADD Ns/a"),
	    "key has a character outside [a-z0-9.-]");
}

static void
test_key_bounds(void **state)
{
	char key[400];

	memset(key, 'n', 63);
	key[63] = '/';
	memset(key + 64, 'x', 253);
	key[317] = '\0';
	assert_null(rs_queue_key_check(key, 317));
	assert_int_equal(RS_QUEUE_KEY_MAX, 317);
	assert_null(rs_queue_key_check(key, 316));
	memset(key, 'n', 64);
	key[64] = '/';
	memcpy(key + 65, "a", 2);
	assert_string_equal(rs_queue_key_check(key, 66),
	    "namespace is not 1 to 63 bytes");
	memset(key, 'n', 63);
	key[63] = '/';
	memset(key + 64, 'x', 254);
	assert_string_equal(rs_queue_key_check(key, 318), "key too long");
	memcpy(key, "n/", 2);
	memset(key + 2, 'x', 254);
	assert_string_equal(rs_queue_key_check(key, 256),
	    "name is not 1 to 253 bytes");
	assert_string_equal(rs_queue_key_check("/a", 2),
	    "namespace is not 1 to 63 bytes");
	assert_string_equal(rs_queue_key_check("ns/", 3),
	    "name is not 1 to 253 bytes");
	assert_null(rs_queue_key_check("kube-system/rs.v1-abc", 21));
	assert_non_null(rs_queue_key_check("ns.x/a", 6));
	assert_non_null(rs_queue_key_check("ns/a/b", 6));
	assert_non_null(rs_queue_key_check("ns/a b", 6));
	assert_non_null(rs_queue_key_check("ns/a\0b", 6));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verbs),
		cmocka_unit_test(test_spacing),
		cmocka_unit_test(test_after),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_key_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
