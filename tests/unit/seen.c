/* Unit tests of rs-watch's record of what it printed (bin/rs-watch/seen.c):
 * a uid in the API server's form is kept packed and read back as the same
 * text; any other uid is kept as written; an update that changes a uid's
 * form, or keeps it, reads back what was put; a uid of 255 bytes is kept
 * and a longer one refused;
 * a sweep removes what the pass did not mark. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-watch/seen.c"

#define UID "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"

static const char *
uid_of(const struct seen *s, const char *key, char *buf)
{
	const struct seen_entry *e = seen_get(s, key);

	assert_non_null(e);
	return seen_uid(e, buf);
}

static void
packed_uid_reads_back(void **state)
{
	struct seen s;
	char buf[SEEN_UID_MAX];
	struct seen_entry *e;

	(void)state;
	seen_init(&s);
	assert_int_equal(seen_put(&s, "ns/a", "123", UID, 1), RS_OK);
	e = seen_get(&s, "ns/a");
	assert_true(e->uid_packed);
	assert_string_equal(seen_uid(e, buf), UID);
	assert_string_equal(seen_rv(e), "123");
	assert_string_equal(seen_key(e), "ns/a");
	seen_free(&s);
}

static void
other_uids_kept_as_written(void **state)
{
	static const char *const uids[] = {
		"0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0",   /* upper case */
		"0f1e2d3c4b5a69788796a5b4c3d2e1f0abcd",   /* 36, no dashes */
		"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f",    /* 35 */
		"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg",   /* not hex */
		"my-uid",
		"",
	};
	struct seen s;
	char buf[SEEN_UID_MAX], key[16];
	size_t i;

	(void)state;
	seen_init(&s);
	for (i = 0; i < sizeof uids / sizeof uids[0]; i++) {
		snprintf(key, sizeof key, "k%zu", i);
		assert_int_equal(seen_put(&s, key, "1", uids[i], 1), RS_OK);
		assert_false(seen_get(&s, key)->uid_packed);
	}
	for (i = 0; i < sizeof uids / sizeof uids[0]; i++) {
		snprintf(key, sizeof key, "k%zu", i);
		assert_string_equal(uid_of(&s, key, buf), uids[i]);
	}
	seen_free(&s);
}

static void
updates_read_back(void **state)
{
	struct seen s;
	char buf[SEEN_UID_MAX];
	struct seen_entry *e;

	(void)state;
	seen_init(&s);
	assert_int_equal(seen_put(&s, "ns/a", "100", UID, 1), RS_OK);
	/* same sizes: in place */
	e = seen_get(&s, "ns/a");
	assert_int_equal(seen_put(&s, "ns/a", "101", UID, 2), RS_OK);
	assert_ptr_equal(seen_get(&s, "ns/a"), e);
	assert_string_equal(seen_rv(e), "101");
	assert_int_equal(e->mark, 2);
	/* packed to text and back, and a longer resourceVersion */
	assert_int_equal(seen_put(&s, "ns/a", "102", "other", 3), RS_OK);
	assert_string_equal(uid_of(&s, "ns/a", buf), "other");
	assert_int_equal(seen_put(&s, "ns/a", "1030", UID, 4), RS_OK);
	assert_string_equal(uid_of(&s, "ns/a", buf), UID);
	assert_string_equal(seen_rv(seen_get(&s, "ns/a")), "1030");
	assert_int_equal(s.n, 1);
	seen_free(&s);
}

/* what event_objid accepts (255 bytes) is kept; one more is refused */
static void
long_uid_refused(void **state)
{
	struct seen s;
	char uid[SEEN_UID_MAX + 1], buf[SEEN_UID_MAX];

	(void)state;
	seen_init(&s);
	memset(uid, 'u', sizeof uid - 1);
	uid[sizeof uid - 1] = '\0';     /* 256 */
	assert_int_equal(seen_put(&s, "ns/a", "1", uid, 1), RS_ETOOBIG);
	uid[255] = '\0';
	assert_int_equal(seen_put(&s, "ns/a", "1", uid, 1), RS_OK);
	assert_string_equal(uid_of(&s, "ns/a", buf), uid);
	seen_free(&s);
}

static rs_code
count(void *arg, const struct seen_entry *e)
{
	char buf[SEEN_UID_MAX];

	assert_string_equal(seen_uid(e, buf), UID);
	(*(int *)arg)++;
	return RS_OK;
}

static void
sweep_removes_unmarked(void **state)
{
	struct seen s;
	char key[16];
	int i, swept = 0;

	(void)state;
	seen_init(&s);
	for (i = 0; i < 3000; i++) {      /* past a few growths */
		snprintf(key, sizeof key, "ns/p%d", i);
		assert_int_equal(seen_put(&s, key, "5", UID, i % 3 ? 7 : 6),
		    RS_OK);
	}
	assert_int_equal(seen_sweep(&s, 7, count, &swept), RS_OK);
	assert_int_equal(swept, 1000);
	assert_int_equal(s.n, 2000);
	assert_null(seen_get(&s, "ns/p0"));
	assert_non_null(seen_get(&s, "ns/p1"));
	seen_free(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(packed_uid_reads_back),
		cmocka_unit_test(other_uids_kept_as_written),
		cmocka_unit_test(updates_read_back),
		cmocka_unit_test(long_uid_refused),
		cmocka_unit_test(sweep_removes_unmarked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
