/* Unit tests of rs-queue's reply ordering (bin/rs-queue/reply.c): replies
 * behind a waiting GET are held until it is answered, several waiting GETs
 * release their replies one stretch at a time, a closing client drops what
 * waits, and sending goes through a real socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../bin/rs-queue/reply.c"

static struct rsq_replies r;

static int
clear(void **state)
{
	rsq_replies_free(&r);
	return 0;
}

static void
put(const char *text)
{
	rsq_reply(&r, text, strlen(text), NULL, 0);
}

/* What is ready to write, as a string. */
static const char *
ready(void)
{
	static char buf[4096];
	size_t n = rsq_reply_ready(&r);

	memcpy(buf, r.out.p + r.out.off, n);
	buf[n] = '\0';
	return buf;
}

static void
test_no_wait(void **state)
{
	put("OK");
	rsq_reply(&r, "ERR not processing: ", 20, "ns/a", 4);
	assert_string_equal(ready(), "OK\nERR not processing: ns/a\n");
	assert_int_equal(rsq_reply_pending(&r), rsq_reply_ready(&r));
}

static void
test_held_behind_get(void **state)
{
	put("OK");
	rsq_reply_wait(&r);              /* GET 1 */
	put("LEN 0");
	rsq_reply_wait(&r);              /* GET 2 */
	put("OK");
	put("LEN 1");
	assert_string_equal(ready(), "OK\n");
	assert_int_equal(r.waiting, 2);
	rsq_reply_answer(&r, "KEY ", "ns/a", 4);
	assert_string_equal(ready(), "OK\nKEY ns/a\nLEN 0\n");
	assert_int_equal(r.waiting, 1);
	put("OK");                       /* still behind GET 2 */
	assert_string_equal(ready(), "OK\nKEY ns/a\nLEN 0\n");
	rsq_reply_answer(&r, "SHUTDOWN", NULL, 0);
	assert_string_equal(ready(),
	    "OK\nKEY ns/a\nLEN 0\nSHUTDOWN\nOK\nLEN 1\nOK\n");
	assert_int_equal(r.waiting, 0);
	assert_int_equal(rsq_reply_pending(&r), rsq_reply_ready(&r));
	put("LEN 2");
	assert_string_equal(ready() + strlen(ready()) - 6, "LEN 2\n");
}

static void
test_back_to_back_gets(void **state)
{
	rsq_reply_wait(&r);
	rsq_reply_wait(&r);
	rsq_reply_wait(&r);
	put("OK");
	rsq_reply_answer(&r, "KEY ", "ns/a", 4);
	rsq_reply_answer(&r, "KEY ", "ns/b", 4);
	assert_string_equal(ready(), "KEY ns/a\nKEY ns/b\n");
	rsq_reply_answer(&r, "KEY ", "ns/c", 4);
	assert_string_equal(ready(), "KEY ns/a\nKEY ns/b\nKEY ns/c\nOK\n");
}

static void
test_drop_waiting(void **state)
{
	put("OK");
	rsq_reply_wait(&r);
	put("LEN 0");
	rsq_reply_wait(&r);
	rsq_reply_drop_waiting(&r);
	assert_int_equal(r.waiting, 0);
	assert_string_equal(ready(), "OK\n");
	assert_int_equal(rsq_reply_pending(&r), 3);
}

static void
test_send(void **state)
{
	char buf[64];
	int sv[2];
	ssize_t n;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	put("OK");
	rsq_reply_wait(&r);
	put("LEN 0");
	assert_int_equal(rsq_reply_send(&r, sv[0]), 0);
	assert_int_equal(rsq_reply_ready(&r), 0);
	rsq_reply_answer(&r, "KEY ", "ns/a", 4);
	assert_int_equal(rsq_reply_send(&r, sv[0]), 0);
	n = read(sv[1], buf, sizeof buf - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "OK\nKEY ns/a\nLEN 0\n");
	/* a full socket: the rest stays for later */
	while (rsq_reply_send(&r, sv[0]) == 0)
		put("STATS xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	assert_true(rsq_reply_ready(&r) > 0);
	close(sv[1]);
	assert_int_equal(rsq_reply_send(&r, sv[0]), -1);
	close(sv[0]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_no_wait, clear),
		cmocka_unit_test_teardown(test_held_behind_get, clear),
		cmocka_unit_test_teardown(test_back_to_back_gets, clear),
		cmocka_unit_test_teardown(test_drop_waiting, clear),
		cmocka_unit_test_teardown(test_send, clear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
