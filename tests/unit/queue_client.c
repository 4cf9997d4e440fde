/* Unit tests of libcommon/queue_client against a scripted server thread:
 * connection errors, replies matched to pipelined requests in order, ERR
 * replies counted, GET answered by a key or by SHUTDOWN, queries, a lost
 * server, and a long pipeline written while its replies come back (the
 * client must read as it writes, or both sides block). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "queue_client.h"

static char dir[64], path[128];
static int lfd = -1;
static pthread_t thr;
static unsigned long served;

/* The responder: one reply per line, by rule. GET answers come from the
 * GET script; "DONE ns/bad" is refused; "ADD ns/close" closes. */
static const char *get_script[8];

static const char *
respond(const char *line, int *g, int *stop)
{
	if (strcmp(line, "ADD ns/close") == 0) {
		*stop = 1;
		return NULL;
	}
	if (strncmp(line, "GET", 3) == 0)
		return get_script[*g] ? get_script[(*g)++] : "SHUTDOWN";
	if (strcmp(line, "DONE ns/bad") == 0)
		return "ERR not processing: ns/bad";
	if (strcmp(line, "LEN") == 0)
		return "LEN 3";
	return "OK";
}

/* Reads what comes, answers every complete line, then writes all the
 * answers with blocking writes, as a batching server does. */
static void *
serve(void *arg)
{
	static char in[1 << 16], out[1 << 20];
	size_t have = 0, olen;
	int fd = accept(lfd, NULL, NULL), g = 0, stop = 0;
	ssize_t n;

	if (fd < 0)
		return NULL;
	while (!stop && (n = read(fd, in + have, sizeof in - have)) > 0) {
		char *p = in, *nl;

		have += n;
		olen = 0;
		while (!stop && (nl = memchr(p, '\n', in + have - p)) != NULL) {
			const char *r;

			*nl = '\0';
			served++;
			if ((r = respond(p, &g, &stop)) != NULL)
				olen += sprintf(out + olen, "%s\n", r);
			p = nl + 1;
		}
		have = in + have - p;
		memmove(in, p, have);
		if (write(fd, out, olen) != (ssize_t)olen)
			break;
	}
	close(fd);
	return NULL;
}

static int
setup(void **state)
{
	struct sockaddr_un sa;

	snprintf(dir, sizeof dir, "/tmp/rs-qc.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/q.sock", dir);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(lfd, 4) < 0)
		return -1;
	memset(get_script, 0, sizeof get_script);
	served = 0;
	return pthread_create(&thr, NULL, serve, NULL) == 0 ? 0 : -1;
}

static int
teardown(void **state)
{
	pthread_join(thr, NULL);
	close(lfd);
	unlink(path);
	rmdir(dir);
	return 0;
}

static void
test_no_server(void **state)
{
	struct rs_queue *q;

	assert_int_equal(rs_queue_open("/nonexistent/q.sock", &q), RS_EAGAIN);
	assert_int_equal(errno, ENOENT);
	assert_null(q);
}

static void
test_pipelined_replies(void **state)
{
	struct rs_queue *q;
	const char *key;

	get_script[0] = "KEY ns/x";
	get_script[1] = "KEY ns/y";
	assert_int_equal(rs_queue_open(path, &q), RS_OK);
	assert_int_equal(rs_queue_add(q, "ns/a"), RS_OK);
	assert_int_equal(rs_queue_done(q, "ns/bad"), RS_OK);
	assert_int_equal(rs_queue_request_get(q, 0), RS_OK);
	assert_int_equal(rs_queue_request_get(q, 1), RS_OK);
	assert_int_equal(rs_queue_after(q, 0.5, "ns/c"), RS_OK);
	assert_int_equal(rs_queue_retry(q, "ns/c"), RS_OK);
	assert_int_equal(rs_queue_forget(q, "ns/c"), RS_OK);
	/* nothing is sent for a malformed key */
	assert_int_equal(rs_queue_add(q, "Bad Key"), RS_EPARSE);
	assert_int_equal(rs_queue_gets_pending(q), 2);
	assert_int_equal(rs_queue_next_key(q, &key), RS_EAGAIN);
	assert_int_equal(rs_queue_sync(q), RS_OK);
	assert_int_equal(rs_queue_errors(q), 1);
	assert_int_equal(rs_queue_gets_pending(q), 0);
	assert_int_equal(rs_queue_next_key(q, &key), RS_OK);
	assert_string_equal(key, "ns/x");
	assert_int_equal(rs_queue_next_key(q, &key), RS_OK);
	assert_string_equal(key, "ns/y");
	assert_int_equal(rs_queue_next_key(q, &key), RS_EAGAIN);
	assert_int_equal(served, 7);
	rs_queue_close(q);
}

static void
test_get_and_shutdown(void **state)
{
	struct rs_queue *q;
	const char *key;
	char *reply;

	get_script[0] = "KEY ns/one";
	assert_int_equal(rs_queue_open(path, &q), RS_OK);
	assert_int_equal(rs_queue_get(q, 0, &key), RS_OK);
	assert_string_equal(key, "ns/one");
	assert_int_equal(rs_queue_query(q, "LEN", &reply), RS_OK);
	assert_string_equal(reply, "LEN 3");
	free(reply);
	assert_int_equal(rs_queue_get(q, 0, &key), RS_EEOF);
	assert_int_equal(rs_queue_next_key(q, &key), RS_EEOF);
	rs_queue_close(q);
}

static void
test_server_lost(void **state)
{
	struct rs_queue *q;
	const char *key;

	assert_int_equal(rs_queue_open(path, &q), RS_OK);
	assert_int_equal(rs_queue_add(q, "ns/close"), RS_OK);
	assert_int_equal(rs_queue_get(q, 0, &key), RS_EIO);
	assert_int_equal(rs_queue_add(q, "ns/a"), RS_EIO);
	rs_queue_close(q);
}

static void
test_long_pipeline(void **state)
{
	struct rs_queue *q;
	char key[32];
	int i;

	assert_int_equal(rs_queue_open(path, &q), RS_OK);
	for (i = 0; i < 300000; i++) {
		snprintf(key, sizeof key, "ns/k%d", i);
		assert_int_equal(rs_queue_add(q, key), RS_OK);
	}
	assert_int_equal(rs_queue_flush(q), RS_OK);
	assert_int_equal(rs_queue_sync(q), RS_OK);
	assert_int_equal(served, 300000);
	assert_int_equal(rs_queue_errors(q), 0);
	rs_queue_close(q);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_server),
		cmocka_unit_test_setup_teardown(test_pipelined_replies, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_get_and_shutdown, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_server_lost, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_long_pipeline, setup,
		    teardown),
	};

	alarm(120);     /* a deadlocked pipeline fails instead of hanging */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
