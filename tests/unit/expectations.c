/* Unit tests of libcommon/expectations (the LMDB store): every operation
 * against upstream's semantics, expiry on an injected clock, the written
 * resource versions, a random walk against a model, the map size, reopening,
 * refused and damaged files, the reboot rule, and crash safety (a child
 * killed after each write of an operation, the parent finding the state
 * exactly as before or as after it; a writer stopped inside a transaction
 * blocks no reader).
 *
 * LMDB wants one environment per process: a second handle on the same file
 * is always opened in another process (fork), never beside the first. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <lmdb.h>

#include "clock.h"
#include "expectations.h"
#include "log.h"

static char dir[64];
static char path[128];
static char lockpath[160];
static int64_t fake_now;
static int path_seq;

static int64_t
fake_clock(void)
{
	return fake_now;
}

static const char *
boot_a(void)
{
	return "boot-a";
}

static const char *
boot_b(void)
{
	return "boot-b";
}

static void
new_path(void)
{
	snprintf(path, sizeof path, "%s/exp%d", dir, ++path_seq);
	snprintf(lockpath, sizeof lockpath, "%s-lock", path);
}

/* Removes the store at path, both files. */
static void
rm_store(void)
{
	unlink(path);
	unlink(lockpath);
}

static struct rs_exp *
open_map(size_t map)
{
	struct rs_exp_opts o = { .map_size = map };
	struct rs_exp *e;

	new_path();
	assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
	return e;
}

static struct rs_exp *
open_new(void)
{
	return open_map(0);
}

static struct rs_exp *
reopen(void)
{
	struct rs_exp *e;

	assert_int_equal(rs_exp_open(path, NULL, &e), RS_OK);
	return e;
}

static void
assert_consistent(struct rs_exp *e)
{
	char why[256];
	rs_code rc = rs_exp_check(e, why, sizeof why);

	if (rc != RS_OK)
		fail_msg("check: %s", why);
}

static void
assert_record(struct rs_exp *e, const char *key, int64_t add, int64_t del,
    size_t npods)
{
	struct rs_exp_record r;

	assert_int_equal(rs_exp_get(e, key, &r), RS_OK);
	assert_int_equal(r.add, add);
	assert_int_equal(r.del, del);
	assert_int_equal(r.npods, npods);
	rs_exp_record_free(&r);
}

static void
assert_no_record(struct rs_exp *e, const char *key)
{
	struct rs_exp_record r;

	assert_int_equal(rs_exp_get(e, key, &r), RS_ENOTFOUND);
}

static enum rs_exp_why
why_of(struct rs_exp *e, const char *key, int *ok)
{
	enum rs_exp_why why = RS_EXP_PENDING;

	assert_int_equal(rs_exp_satisfied(e, key, ok, &why), RS_OK);
	return why;
}

static int64_t
elapsed_ms(int64_t t0)
{
	return (rs_mono_ns() - t0) / 1000000;
}

/* stderr into a file while a call runs, to check its message. */
static char captured[8192];
static int saved_stderr = -1;

static void
capture_begin(void)
{
	char p[160];
	int fd;

	fflush(stderr);
	snprintf(p, sizeof p, "%s/stderr", dir);
	fd = open(p, O_CREAT | O_TRUNC | O_RDWR, 0600);
	assert_true(fd >= 0);
	saved_stderr = dup(2);
	assert_true(saved_stderr >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	close(fd);
}

static const char *
capture_end(void)
{
	char p[160];
	ssize_t n;
	int fd;

	fflush(stderr);
	assert_int_equal(dup2(saved_stderr, 2), 2);
	close(saved_stderr);
	saved_stderr = -1;
	snprintf(p, sizeof p, "%s/stderr", dir);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, captured, sizeof captured - 1);
	close(fd);
	captured[n > 0 ? n : 0] = '\0';
	return captured;
}

static void
assert_says(const char *text, const char *want)
{
	if (strstr(text, want) == NULL)
		fail_msg("wanted \"%s\" in: %s", want, text);
}

/* rs_exp_open(path) returns rc and says want on stderr. */
static void
assert_open_fails(const char *p, rs_code rc, const char *want)
{
	struct rs_exp *e = NULL;
	const char *text;
	rs_code got;

	capture_begin();
	got = rs_exp_open(p, NULL, &e);
	text = capture_end();
	if (got != rc)
		fail_msg("open %s: %s, want %s; said: %s", p, rs_strerror(got),
		    rs_strerror(rc), text);
	assert_null(e);
	assert_says(text, want);
}

static int
setup(void **state)
{
	fake_now = 1000000000000LL;
	rs_exp_set_clock(fake_clock);
	rs_exp_set_write_hook(NULL);
	rs_exp_set_boot_id(boot_a);
	return 0;
}

/* ---- semantics ---- */

static void
test_creations(void **state)
{
	struct rs_exp *e = open_new();
	int ok;

	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_NO_RECORD);
	assert_true(ok);
	assert_no_record(e, "ns/rs");
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs", 3), RS_OK);
	assert_record(e, "ns/rs", 3, 0, 0);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_PENDING);
	assert_false(ok);
	assert_int_equal(rs_exp_creation_observed(e, "ns/rs"), RS_OK);
	assert_int_equal(rs_exp_creation_observed(e, "ns/rs"), RS_OK);
	assert_record(e, "ns/rs", 1, 0, 0);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_PENDING);
	assert_int_equal(rs_exp_creation_observed(e, "ns/rs"), RS_OK);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_FULFILLED);
	assert_true(ok);
	/* Below zero is still fulfilled, as upstream (<= 0). */
	assert_int_equal(rs_exp_creation_observed(e, "ns/rs"), RS_OK);
	assert_record(e, "ns/rs", -1, 0, 0);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_FULFILLED);
	/* SetExpectations replaces. */
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs", 5), RS_OK);
	assert_record(e, "ns/rs", 5, 0, 0);
	assert_int_equal(rs_exp_lower_creations(e, "ns/rs", 4), RS_OK);
	assert_record(e, "ns/rs", 1, 0, 0);
	/* Observing a key without record is ignored, creates nothing. */
	assert_int_equal(rs_exp_creation_observed(e, "ns/other"), RS_OK);
	assert_int_equal(rs_exp_lower_creations(e, "ns/other", 2), RS_OK);
	assert_no_record(e, "ns/other");
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs", -1), RS_EUSAGE);
	assert_int_equal(rs_exp_lower_creations(e, "ns/rs", -1), RS_EUSAGE);
	assert_record(e, "ns/rs", 1, 0, 0);
	assert_consistent(e);
	rs_exp_close(e);
}

static void
test_deletions(void **state)
{
	const char *pods[] = { "ns/a", "ns/b", "ns/c", "ns/b" };
	const char *pods2[] = { "ns/c", "ns/d" };
	struct rs_exp *e = open_new();
	struct rs_exp_record r;
	int ok;

	/* A duplicate counts once (upstream builds a set). */
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 4), RS_OK);
	assert_int_equal(rs_exp_get(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.add, 0);
	assert_int_equal(r.del, 3);
	assert_int_equal(r.npods, 3);
	assert_string_equal(r.pods[0], "ns/a");
	assert_string_equal(r.pods[1], "ns/b");
	assert_string_equal(r.pods[2], "ns/c");
	rs_exp_record_free(&r);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_PENDING);
	/* Unknown pod: ignored. Known pod: counted once. */
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/zz"), RS_OK);
	assert_record(e, "ns/rs", 0, 3, 3);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/b"), RS_OK);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/b"), RS_OK);
	assert_record(e, "ns/rs", 0, 2, 2);
	/* A pod of another key's set does not count here. */
	assert_int_equal(rs_exp_deletion_observed(e, "ns/x", "ns/a"), RS_OK);
	assert_record(e, "ns/rs", 0, 2, 2);
	assert_no_record(e, "ns/x");
	/* The set is replaced, not merged. */
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods2, 2), RS_OK);
	assert_int_equal(rs_exp_get(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.del, 2);
	assert_int_equal(r.npods, 2);
	assert_string_equal(r.pods[0], "ns/c");
	assert_string_equal(r.pods[1], "ns/d");
	rs_exp_record_free(&r);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/a"), RS_OK);
	assert_record(e, "ns/rs", 0, 2, 2);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/c"), RS_OK);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/d"), RS_OK);
	assert_record(e, "ns/rs", 0, 0, 0);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_FULFILLED);
	/* An empty set: del 0, satisfied. */
	assert_int_equal(rs_exp_expect_deletions(e, "ns/e", NULL, 0), RS_OK);
	assert_record(e, "ns/e", 0, 0, 0);
	assert_int_equal(why_of(e, "ns/e", &ok), RS_EXP_FULFILLED);
	assert_consistent(e);
	rs_exp_close(e);
}

/* As upstream, ExpectCreations leaves the pod-key set alone: a late
 * deletion of one of its pods still lowers del (below zero, harmless). */
static void
test_creations_keep_set(void **state)
{
	const char *pods[] = { "ns/a", "ns/b" };
	struct rs_exp *e = open_new();
	int ok;

	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 2), RS_OK);
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs", 1), RS_OK);
	assert_record(e, "ns/rs", 1, 0, 2);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/a"), RS_OK);
	assert_record(e, "ns/rs", 1, -1, 1);
	assert_int_equal(rs_exp_creation_observed(e, "ns/rs"), RS_OK);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_FULFILLED);
	assert_consistent(e);
	rs_exp_close(e);
}

static void
test_delete(void **state)
{
	const char *pods[] = { "ns/a", "ns/b", "ns/c", "ns/d" };
	struct rs_exp_write w = { .resource = "pods", .rv = "5" };
	struct rs_exp_written wr;
	struct rs_exp *e = open_new();
	struct rs_exp_stats st;
	int ok;

	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 4), RS_OK);
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u1", &w, 1), RS_OK);
	assert_int_equal(rs_exp_delete(e, "ns/rs"), RS_OK);
	assert_no_record(e, "ns/rs");
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_NO_RECORD);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.keys, 0);
	assert_int_equal(st.pods, 0);
	/* The written versions stay: rs_exp_clear_written drops them. */
	assert_int_equal(st.written, 1);
	assert_int_equal(rs_exp_written(e, "ns/rs", &wr), RS_OK);
	assert_string_equal(wr.w[0].rv, "5");
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs2", pods, 4), RS_OK);
	/* No record is not an error. */
	assert_int_equal(rs_exp_delete(e, "ns/none"), RS_OK);
	/* A pod of a deleted record is no longer awaited. */
	assert_int_equal(rs_exp_delete(e, "ns/rs2"), RS_OK);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs2", "ns/a"), RS_OK);
	assert_no_record(e, "ns/rs2");
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.pods, 0);
	assert_consistent(e);
	rs_exp_close(e);
}

static void
test_expiry(void **state)
{
	struct rs_exp *e = open_new();
	struct rs_exp_record r;
	int ok;

	assert_int_equal(rs_exp_expect_creations(e, "ns/rs", 1), RS_OK);
	fake_now += RS_EXP_TIMEOUT_NS;
	/* Exactly five minutes is not yet expired: upstream uses ">". */
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_PENDING);
	assert_false(ok);
	fake_now += 1;
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_EXPIRED);
	assert_true(ok);
	assert_int_equal(rs_exp_get(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.why, RS_EXP_EXPIRED);
	assert_int_equal(r.age_ns, RS_EXP_TIMEOUT_NS + 1);
	rs_exp_record_free(&r);
	/* Lowering does not refresh the timestamp; setting does. */
	assert_int_equal(rs_exp_lower_creations(e, "ns/rs", 0), RS_OK);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_EXPIRED);
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs", 1), RS_OK);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_PENDING);
	/* Fulfilled wins over expired. */
	assert_int_equal(rs_exp_creation_observed(e, "ns/rs"), RS_OK);
	fake_now += 2 * RS_EXP_TIMEOUT_NS;
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_FULFILLED);
	rs_exp_close(e);
}

static void
test_keys(void **state)
{
	char big[RS_EXP_KEY_MAX + 2];
	const char *pods[1] = { big };
	const char *empty[1] = { "" };
	struct rs_exp_write w = { .resource = "pods", .rv = "1" };
	struct rs_exp_written wr;
	struct rs_exp *e = open_new();
	int ok;

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_int_equal(rs_exp_expect_creations(e, big, 1), RS_ETOOBIG);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 1),
	    RS_ETOOBIG);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", big), RS_ETOOBIG);
	assert_int_equal(rs_exp_satisfied(e, big, &ok, NULL), RS_ETOOBIG);
	assert_true(ok);
	assert_int_equal(rs_exp_wrote(e, big, "u", &w, 1), RS_ETOOBIG);
	assert_int_equal(rs_exp_expect_creations(e, "", 1), RS_EUSAGE);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", empty, 1),
	    RS_EUSAGE);
	assert_int_equal(rs_exp_satisfied(e, NULL, &ok, NULL), RS_EUSAGE);
	assert_int_equal(rs_exp_delete(e, ""), RS_EUSAGE);
	assert_int_equal(rs_exp_written(e, "", &wr), RS_EUSAGE);
	assert_int_equal(rs_exp_clear_written(e, "", NULL), RS_EUSAGE);
	/* A refused set left nothing behind. */
	assert_no_record(e, "ns/rs");
	big[RS_EXP_KEY_MAX] = '\0';
	assert_int_equal(rs_exp_expect_creations(e, big, 1), RS_OK);
	assert_int_equal(rs_exp_expect_deletions(e, big, pods, 1), RS_OK);
	assert_record(e, big, 0, 1, 1);
	assert_int_equal(rs_exp_wrote(e, big, "u", &w, 1), RS_OK);
	assert_consistent(e);
	rs_exp_close(e);
}

/* ---- written resource versions ---- */

static struct rs_exp_write
wv(const char *group, const char *resource, const char *rv)
{
	struct rs_exp_write w;

	memset(&w, 0, sizeof w);
	snprintf(w.group, sizeof w.group, "%s", group);
	snprintf(w.resource, sizeof w.resource, "%s", resource);
	snprintf(w.rv, sizeof w.rv, "%s", rv);
	return w;
}

/* The rv recorded for (group, resource), or NULL. */
static const char *
rv_of(const struct rs_exp_written *r, const char *group, const char *res)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->w[i].group, group) == 0 &&
		    strcmp(r->w[i].resource, res) == 0)
			return r->w[i].rv;
	return NULL;
}

static void
wrote1(struct rs_exp *e, const char *key, const char *uid, const char *group,
    const char *res, const char *rv)
{
	struct rs_exp_write w = wv(group, res, rv);

	assert_int_equal(rs_exp_wrote(e, key, uid, &w, 1), RS_OK);
}

static void
test_written_newest(void **state)
{
	struct rs_exp_write two[2];
	struct rs_exp_written r;
	struct rs_exp *e = open_new();
	struct rs_exp_stats st;

	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_ENOTFOUND);
	wrote1(e, "ns/rs", "u1", "", "pods", "9");
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(r.uid, "u1");
	assert_int_equal(r.n, 1);
	assert_string_equal(rv_of(&r, "", "pods"), "9");
	/* "10" is newer than "9": numbers, length first. */
	wrote1(e, "ns/rs", "u1", "", "pods", "10");
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(rv_of(&r, "", "pods"), "10");
	/* An older one, or the same, changes nothing. */
	wrote1(e, "ns/rs", "u1", "", "pods", "9");
	wrote1(e, "ns/rs", "u1", "", "pods", "10");
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.n, 1);
	assert_string_equal(rv_of(&r, "", "pods"), "10");
	/* Same length: digit by digit. */
	wrote1(e, "ns/rs", "u1", "", "pods", "19");
	wrote1(e, "ns/rs", "u1", "", "pods", "11");
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(rv_of(&r, "", "pods"), "19");
	/* Per (group, resource): one call may write several. */
	two[0] = wv("apps", "replicasets", "7");
	two[1] = wv("other", "pods", "3");
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u1", two, 2), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.n, 3);
	assert_string_equal(rv_of(&r, "", "pods"), "19");
	assert_string_equal(rv_of(&r, "apps", "replicasets"), "7");
	assert_string_equal(rv_of(&r, "other", "pods"), "3");
	/* Keys are independent. */
	assert_int_equal(rs_exp_written(e, "ns/other", &r), RS_ENOTFOUND);
	/* No expectation record is made by writing versions. */
	assert_no_record(e, "ns/rs");
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.keys, 0);
	assert_int_equal(st.written, 1);
	/* They last across a reopen. */
	rs_exp_close(e);
	e = reopen();
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.n, 3);
	assert_string_equal(rv_of(&r, "", "pods"), "19");
	assert_consistent(e);
	rs_exp_close(e);
}

static void
test_written_uid_and_clear(void **state)
{
	struct rs_exp_written r;
	struct rs_exp *e = open_new();

	wrote1(e, "ns/rs", "u1", "", "pods", "50");
	wrote1(e, "ns/rs", "u1", "apps", "replicasets", "51");
	/* Another owner with the same name: its record replaces the old
	 * one, however old its versions. */
	wrote1(e, "ns/rs", "u2", "", "pods", "3");
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(r.uid, "u2");
	assert_int_equal(r.n, 1);
	assert_string_equal(rv_of(&r, "", "pods"), "3");
	assert_null(rv_of(&r, "apps", "replicasets"));
	/* Clear with another uid: kept. */
	assert_int_equal(rs_exp_clear_written(e, "ns/rs", "u1"), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	/* With its uid: dropped. */
	assert_int_equal(rs_exp_clear_written(e, "ns/rs", "u2"), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_ENOTFOUND);
	/* Without record: nothing to do, not an error. */
	assert_int_equal(rs_exp_clear_written(e, "ns/rs", "u2"), RS_OK);
	/* Empty or NULL uid: whatever the owner. */
	wrote1(e, "ns/rs", "u3", "", "pods", "60");
	assert_int_equal(rs_exp_clear_written(e, "ns/rs", ""), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_ENOTFOUND);
	wrote1(e, "ns/rs", "u4", "", "pods", "61");
	assert_int_equal(rs_exp_clear_written(e, "ns/rs", NULL), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_ENOTFOUND);
	/* Clearing leaves the expectations alone, and the reverse. */
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs", 2), RS_OK);
	wrote1(e, "ns/rs", "u5", "", "pods", "62");
	assert_int_equal(rs_exp_clear_written(e, "ns/rs", NULL), RS_OK);
	assert_record(e, "ns/rs", 2, 0, 0);
	wrote1(e, "ns/rs", "u5", "", "pods", "63");
	assert_int_equal(rs_exp_delete(e, "ns/rs"), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	/* rs_exp_reset drops both. */
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs", 2), RS_OK);
	assert_int_equal(rs_exp_reset(e), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_ENOTFOUND);
	assert_no_record(e, "ns/rs");
	assert_consistent(e);
	rs_exp_close(e);
}

/* Upstream: a version that does not compare (CompareResourceVersion
 * fails) is replaced by the new one, whichever it is. */
static void
test_written_malformed(void **state)
{
	struct rs_exp_written r;
	struct rs_exp *e = open_new();

	wrote1(e, "ns/rs", "u1", "", "pods", "abc");
	wrote1(e, "ns/rs", "u1", "", "pods", "5");
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(rv_of(&r, "", "pods"), "5");
	/* A malformed new one replaces a good one too. */
	wrote1(e, "ns/rs", "u1", "", "pods", "xyz");
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(rv_of(&r, "", "pods"), "xyz");
	wrote1(e, "ns/rs", "u1", "", "pods", "100");
	/* A leading zero is not a well-formed version. */
	wrote1(e, "ns/rs", "u1", "", "pods", "0999");
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(rv_of(&r, "", "pods"), "0999");
	wrote1(e, "ns/rs", "u1", "", "pods", "-1");
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(rv_of(&r, "", "pods"), "-1");
	wrote1(e, "ns/rs", "u1", "", "pods", "2");
	wrote1(e, "ns/rs", "u1", "", "pods", "1");
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(rv_of(&r, "", "pods"), "2");
	assert_int_equal(r.n, 1);
	assert_consistent(e);
	rs_exp_close(e);
}

static void
test_written_limits(void **state)
{
	struct rs_exp_write five[5], bad;
	struct rs_exp_written r;
	struct rs_exp *e = open_new();
	char uid[RS_EXP_UID_MAX + 2];
	int i;

	for (i = 0; i < 5; i++) {
		char res[16];

		snprintf(res, sizeof res, "res%d", i);
		five[i] = wv("", res, "7");
	}
	/* More resources than one record holds: RS_EFULL, nothing done. */
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u1", five, 5), RS_EFULL);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_ENOTFOUND);
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u1", five,
	    RS_EXP_WRITES_MAX), RS_OK);
	wrote1(e, "ns/rs", "u1", "", "res0", "8");
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u1", five + 4, 1),
	    RS_EFULL);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.n, RS_EXP_WRITES_MAX);
	assert_string_equal(rv_of(&r, "", "res0"), "8");
	assert_null(rv_of(&r, "", "res4"));
	/* A failed call changed nothing, even what it could have. */
	five[0] = wv("", "res0", "9");
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u1", five, 5), RS_EFULL);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(rv_of(&r, "", "res0"), "8");
	/* A new owner starts from none: five fit no better, four do. */
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u2", five + 1, 4), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(r.uid, "u2");
	assert_null(rv_of(&r, "", "res0"));
	/* Malformed calls. */
	assert_int_equal(rs_exp_wrote(e, "ns/rs", NULL, five, 1), RS_EUSAGE);
	memset(uid, 'u', sizeof uid - 1);
	uid[sizeof uid - 1] = '\0';
	assert_int_equal(rs_exp_wrote(e, "ns/rs", uid, five, 1), RS_EUSAGE);
	uid[RS_EXP_UID_MAX] = '\0';
	bad = wv("", "", "1");
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u2", &bad, 1), RS_EUSAGE);
	bad = wv("", "pods", "");
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u2", &bad, 1), RS_EUSAGE);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(r.uid, "u2");
	/* The longest uid fits. */
	assert_int_equal(rs_exp_wrote(e, "ns/rs", uid, five, 1), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/rs", &r), RS_OK);
	assert_string_equal(r.uid, uid);
	assert_consistent(e);
	rs_exp_close(e);
}

/* ---- a random walk against a model ---- */

#define MK 6            /* keys ns/k0.. */
#define MP 10           /* pods ns/p0..ns/p9: sorted as numbered */
#define MR 5            /* resources, one more than a record holds */

struct mrec {
	int exists;
	int64_t add, del, ts;
	unsigned set;
};

struct mwr {
	int has;
	struct rs_exp_written w;
};

static const char *const mres[MR][2] = {
	{ "", "pods" }, { "apps", "replicasets" },
	{ "", "replicationcontrollers" }, { "apps", "deployments" },
	{ "batch", "jobs" },
};
static const char *const mrv[] = { "1", "2", "9", "10", "11", "99", "100",
    "abc", "07" };

/* The model's own comparison: -2 when either is not a version. */
static int
m_cmp(const char *a, const char *b)
{
	const char *s[2] = { a, b };
	unsigned long long v[2];
	int i;

	for (i = 0; i < 2; i++) {
		char *end;

		if (s[i][0] < '1' || s[i][0] > '9')
			return -2;
		v[i] = strtoull(s[i], &end, 10);
		if (*end != '\0')
			return -2;
	}
	return v[0] < v[1] ? -1 : v[0] > v[1];
}

static int
m_wrote(struct mwr *m, const char *uid, const struct rs_exp_write *w,
    size_t n)
{
	struct rs_exp_written r;
	size_t i, j;

	if (m->has && strcmp(m->w.uid, uid) == 0) {
		r = m->w;
	} else {
		memset(&r, 0, sizeof r);
		snprintf(r.uid, sizeof r.uid, "%s", uid);
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < r.n; j++)
			if (strcmp(r.w[j].group, w[i].group) == 0 &&
			    strcmp(r.w[j].resource, w[i].resource) == 0)
				break;
		if (j == r.n) {
			if (r.n == RS_EXP_WRITES_MAX)
				return RS_EFULL;
			r.w[r.n++] = w[i];
		} else if (m_cmp(r.w[j].rv, w[i].rv) < 0 ||
		    m_cmp(r.w[j].rv, w[i].rv) == -2) {
			r.w[j] = w[i];
		}
	}
	m->has = 1;
	m->w = r;
	return RS_OK;
}

static void
m_compare(struct rs_exp *e, const struct mrec *m, const struct mwr *mw,
    int k, unsigned long step)
{
	struct rs_exp_written w;
	struct rs_exp_record r;
	char key[16];
	size_t i;
	int p;
	rs_code rc;

	snprintf(key, sizeof key, "ns/k%d", k);
	rc = rs_exp_get(e, key, &r);
	if (!m[k].exists) {
		if (rc != RS_ENOTFOUND)
			fail_msg("step %lu: %s: a record, want none", step, key);
	} else {
		if (rc != RS_OK)
			fail_msg("step %lu: %s: %s", step, key, rs_strerror(rc));
		if (r.add != m[k].add || r.del != m[k].del ||
		    r.timestamp_ns != m[k].ts)
			fail_msg("step %lu: %s: add %lld del %lld ts %lld, want "
			    "%lld %lld %lld", step, key, (long long)r.add,
			    (long long)r.del, (long long)r.timestamp_ns,
			    (long long)m[k].add, (long long)m[k].del,
			    (long long)m[k].ts);
		for (i = 0, p = 0; p < MP; p++) {
			char pod[16];

			if (!(m[k].set & (1u << p)))
				continue;
			snprintf(pod, sizeof pod, "ns/p%d", p);
			if (i >= r.npods || strcmp(r.pods[i], pod) != 0)
				fail_msg("step %lu: %s: pod %zu is not %s", step,
				    key, i, pod);
			i++;
		}
		assert_int_equal(r.npods, i);
		rs_exp_record_free(&r);
	}
	rc = rs_exp_written(e, key, &w);
	if (!mw[k].has) {
		assert_int_equal(rc, RS_ENOTFOUND);
		return;
	}
	assert_int_equal(rc, RS_OK);
	assert_string_equal(w.uid, mw[k].w.uid);
	assert_int_equal(w.n, mw[k].w.n);
	for (i = 0; i < w.n; i++) {
		assert_string_equal(w.w[i].group, mw[k].w.w[i].group);
		assert_string_equal(w.w[i].resource, mw[k].w.w[i].resource);
		assert_string_equal(w.w[i].rv, mw[k].w.w[i].rv);
	}
}

static void
m_walk(unsigned seed, unsigned long steps)
{
	struct mrec m[MK];
	struct mwr mw[MK];
	struct rs_exp *e = open_new();
	unsigned long step;

	memset(m, 0, sizeof m);
	memset(mw, 0, sizeof mw);
	srandom(seed);
	for (step = 0; step < steps; step++) {
		int k = (int)(random() % MK), op = (int)(random() % 13), i;
		int64_t n = random() % 4;
		char key[16], pod[16];
		const char *pv[6];
		char pb[6][16];
		enum rs_exp_why why, want;
		struct rs_exp_write w[2];
		const char *uid;
		int ok;

		snprintf(key, sizeof key, "ns/k%d", k);
		switch (op) {
		case 0:
			assert_int_equal(rs_exp_expect_creations(e, key, n),
			    RS_OK);
			m[k] = (struct mrec){ 1, n, 0, fake_now, m[k].set };
			break;
		case 1:
			m[k] = (struct mrec){ 1, 0, 0, fake_now, 0 };
			n = random() % 6;
			for (i = 0; i < (int)n; i++) {
				int p = (int)(random() % MP);

				snprintf(pb[i], sizeof pb[i], "ns/p%d", p);
				pv[i] = pb[i];
				m[k].set |= 1u << p;
			}
			assert_int_equal(rs_exp_expect_deletions(e, key, pv,
			    (size_t)i), RS_OK);
			m[k].del = __builtin_popcount(m[k].set);
			break;
		case 2:
			assert_int_equal(rs_exp_creation_observed(e, key),
			    RS_OK);
			if (m[k].exists)
				m[k].add--;
			break;
		case 3:
			assert_int_equal(rs_exp_lower_creations(e, key, n),
			    RS_OK);
			if (m[k].exists)
				m[k].add -= n;
			break;
		case 4:
			i = (int)(random() % MP);
			snprintf(pod, sizeof pod, "ns/p%d", i);
			assert_int_equal(rs_exp_deletion_observed(e, key, pod),
			    RS_OK);
			if (m[k].set & (1u << i)) {
				m[k].set &= ~(1u << i);
				assert_true(m[k].exists);
				m[k].del--;
			}
			break;
		case 5:
			if (random() % 3)
				break;  /* rarer: records should build up */
			assert_int_equal(rs_exp_delete(e, key), RS_OK);
			m[k].exists = 0;
			m[k].set = 0;
			break;
		case 6:
			why = (enum rs_exp_why)-1;
			assert_int_equal(rs_exp_satisfied(e, key, &ok, &why),
			    RS_OK);
			if (!m[k].exists)
				want = RS_EXP_NO_RECORD;
			else if (m[k].add <= 0 && m[k].del <= 0)
				want = RS_EXP_FULFILLED;
			else if (fake_now - m[k].ts > RS_EXP_TIMEOUT_NS)
				want = RS_EXP_EXPIRED;
			else
				want = RS_EXP_PENDING;
			if (why != want || ok != (want != RS_EXP_PENDING))
				fail_msg("step %lu: %s: %s, want %s", step, key,
				    rs_exp_why_name(why), rs_exp_why_name(want));
			break;
		case 7:
			fake_now += (int64_t)(random() % 200) * 1000000000LL;
			break;
		case 8:
			uid = random() % 4 ? "u1" : "u2";
			n = 1 + random() % 2;
			for (i = 0; i < n; i++) {
				int res = (int)(random() % MR);

				w[i] = wv(mres[res][0], mres[res][1],
				    mrv[random() % (sizeof mrv / sizeof mrv[0])]);
			}
			assert_int_equal(rs_exp_wrote(e, key, uid, w, (size_t)n),
			    m_wrote(&mw[k], uid, w, (size_t)n));
			break;
		case 9:
			i = (int)(random() % 4);
			uid = i == 0 ? NULL : i == 1 ? "" : i == 2 ? "u1" : "u2";
			assert_int_equal(rs_exp_clear_written(e, key, uid),
			    RS_OK);
			if (mw[k].has && (uid == NULL || uid[0] == '\0' ||
			    strcmp(uid, mw[k].w.uid) == 0))
				mw[k].has = 0;
			break;
		case 10:
		case 11:
			m_compare(e, m, mw, k, step);
			break;
		case 12:
			if (random() % 10 == 0) {
				rs_exp_close(e);
				e = reopen();
			}
			break;
		}
		if (step % 200 == 199) {
			struct rs_exp_cursor c = { .started = 0 };
			struct rs_exp_record r;
			int seen = 0;

			for (i = 0; i < MK; i++) {
				m_compare(e, m, mw, i, step);
				seen += m[i].exists;
			}
			while (rs_exp_next(e, &c, &r) == RS_OK) {
				assert_true(m[atoi(r.key + 4)].exists);
				seen--;
				rs_exp_record_free(&r);
			}
			assert_int_equal(seen, 0);
			assert_consistent(e);
		}
	}
	rs_exp_close(e);
	rm_store();
}

static void
test_fuzz_model(void **state)
{
	m_walk(1, 4000);
	m_walk(2, 4000);
	m_walk(3, 4000);
}

/* ---- map size ---- */

/* Every record, timestamps included, and the written versions of a few
 * keys, as one string. */
static char *
snapshot(struct rs_exp *e)
{
	static const char *const wkeys[] = { "ns/rs", "ns/new", "ns/c1",
	    "ns/c2", "ns/w" };
	struct rs_exp_cursor c = { .started = 0 };
	struct rs_exp_written w;
	struct rs_exp_record r;
	size_t i, len = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &len);
	rs_code rc;

	assert_non_null(f);
	while ((rc = rs_exp_next(e, &c, &r)) == RS_OK) {
		fprintf(f, "%s %lld %lld %lld [", r.key, (long long)r.add,
		    (long long)r.del, (long long)r.timestamp_ns);
		for (i = 0; i < r.npods; i++)
			fprintf(f, " %s", r.pods[i]);
		fprintf(f, " ]\n");
		rs_exp_record_free(&r);
	}
	assert_int_equal(rc, RS_EEOF);
	for (i = 0; i < sizeof wkeys / sizeof wkeys[0]; i++) {
		size_t j;

		if (rs_exp_written(e, wkeys[i], &w) != RS_OK)
			continue;
		fprintf(f, "written %s %s", wkeys[i], w.uid);
		for (j = 0; j < w.n; j++)
			fprintf(f, " %s.%s=%s", w.w[j].resource, w.w[j].group,
			    w.w[j].rv);
		fprintf(f, "\n");
	}
	fclose(f);
	return s;
}

/* A map filled up: RS_EFULL and a message, nothing changed, reads still
 * answered, the file consistent; reset, or a bigger map at the next open,
 * makes room again. */
static void
test_full(void **state)
{
	static char pb[3000][24];
	const char *pv[3000];
	struct rs_exp_opts big = { .map_size = 4 * RS_EXP_MAP_MIN };
	struct rs_exp_stats st, st2;
	struct rs_exp_record r;
	struct rs_exp *e = open_map(RS_EXP_MAP_MIN);
	struct rs_exp_write w = { .resource = "pods", .rv = "1" };
	struct rs_exp_written wr;
	const char *text;
	char key[32], *before, *after;
	int i, n, ok;
	rs_code rc;

	for (i = 0; i < 3000; i++) {
		snprintf(pb[i], sizeof pb[i], "ns/pod-%04d", i);
		pv[i] = pb[i];
	}
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.map_size, RS_EXP_MAP_MIN);
	/* A set larger than the map: refused whole. */
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs0", 4), RS_OK);
	capture_begin();
	rc = rs_exp_expect_deletions(e, "ns/rs0", pv, 3000);
	text = capture_end();
	assert_int_equal(rc, RS_EFULL);
	assert_says(text, "capacity exhausted");
	assert_record(e, "ns/rs0", 4, 0, 0);
	assert_consistent(e);
	/* Keys until the map is full. */
	for (n = 1; n < 100000; n++) {
		snprintf(key, sizeof key, "ns/rs%d", n);
		before = snapshot(e);
		assert_int_equal(rs_exp_stats(e, &st), RS_OK);
		capture_begin();
		rc = rs_exp_expect_creations(e, key, n);
		text = capture_end();
		if (rc != RS_OK)
			break;
		free(before);
	}
	assert_int_equal(rc, RS_EFULL);
	assert_says(text, "capacity exhausted");
	assert_true(n > 20);
	/* Nothing changed: no transaction committed, every record as it
	 * was. */
	assert_no_record(e, key);
	assert_int_equal(rs_exp_stats(e, &st2), RS_OK);
	assert_int_equal(st2.txnid, st.txnid);
	assert_int_equal(st2.keys, (uint64_t)n);
	assert_true(st2.map_used <= st2.map_size);
	after = snapshot(e);
	assert_string_equal(after, before);
	free(after);
	/* Reads go on. */
	assert_int_equal(why_of(e, "ns/rs1", &ok), RS_EXP_PENDING);
	assert_record(e, "ns/rs7", 7, 0, 0);
	assert_int_equal(rs_exp_written(e, "ns/rs1", &wr), RS_ENOTFOUND);
	assert_consistent(e);
	/* Other writes that need a page fail the same way. */
	rc = rs_exp_wrote(e, "ns/rs1", "u1", &w, 1);
	assert_true(rc == RS_OK || rc == RS_EFULL);
	/* Writes that lower or remove never fail for a full map (it grows
	 * by an eighth when they need it), or a full store could not drain. */
	capture_begin();
	for (i = 1; i <= 10; i++) {
		snprintf(key, sizeof key, "ns/rs%d", i);
		assert_int_equal(rs_exp_creation_observed(e, key), RS_OK);
		assert_int_equal(rs_exp_lower_creations(e, key, 1), RS_OK);
	}
	assert_int_equal(rs_exp_delete(e, "ns/rs2"), RS_OK);
	(void)capture_end();
	assert_record(e, "ns/rs7", 5, 0, 0);
	assert_no_record(e, "ns/rs2");
	assert_consistent(e);
	rs_exp_close(e);
	/* The file keeps everything it held. */
	e = reopen();
	assert_int_equal(rs_exp_stats(e, &st2), RS_OK);
	assert_int_equal(st2.keys, (uint64_t)n - 1);
	assert_int_equal(st2.map_size, RS_EXP_MAP_MIN + RS_EXP_MAP_MIN);
	after = snapshot(e);
	rs_exp_close(e);
	/* A bigger map at the next open makes room. */
	assert_int_equal(rs_exp_open(path, &big, &e), RS_OK);
	assert_int_equal(rs_exp_stats(e, &st2), RS_OK);
	assert_int_equal(st2.map_size, 4 * RS_EXP_MAP_MIN);
	free(before);
	before = snapshot(e);
	assert_string_equal(before, after);
	assert_int_equal(rs_exp_expect_creations(e, key, 1), RS_OK);
	assert_int_equal(rs_exp_delete(e, "ns/rs1"), RS_OK);
	assert_consistent(e);
	rs_exp_close(e);
	free(after);
	/* Reset empties a full map whatever its size. */
	e = open_map(RS_EXP_MAP_MIN);
	capture_begin();
	for (n = 0; n < 100000; n++) {
		snprintf(key, sizeof key, "ns/rs%d", n);
		if ((rc = rs_exp_expect_deletions(e, key, pv + n, 2)) != RS_OK)
			break;
	}
	assert_says(capture_end(), "capacity exhausted");
	assert_int_equal(rc, RS_EFULL);
	assert_int_equal(rs_exp_reset(e), RS_OK);
	assert_int_equal(rs_exp_stats(e, &st2), RS_OK);
	assert_int_equal(st2.keys, 0);
	assert_int_equal(st2.pods, 0);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pv, 100), RS_OK);
	assert_int_equal(rs_exp_get(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.npods, 100);
	rs_exp_record_free(&r);
	assert_consistent(e);
	rs_exp_close(e);
	free(before);
}

static void
test_map_size(void **state)
{
	struct rs_exp_opts o = { .map_size = 1 << 20 };
	struct rs_exp_stats st;
	struct rs_exp *e;

	new_path();
	assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.map_size, 1 << 20);
	assert_int_equal(st.page_size, 4096);
	assert_true(st.map_used > 0 && st.map_used < st.map_size);
	assert_int_equal(st.keys, 0);
	assert_true(st.readers_max > 0);
	assert_int_equal(rs_exp_expect_creations(e, "ns/a", 1), RS_OK);
	rs_exp_close(e);
	/* An existing file keeps its own map size when opened with 0 (NULL
	 * options or map_size 0). */
	e = reopen();
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.map_size, 1 << 20);
	rs_exp_close(e);
	o.map_size = 0;
	assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.map_size, 1 << 20);
	assert_record(e, "ns/a", 1, 0, 0);
	rs_exp_close(e);
	/* Defaults. */
	new_path();
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_OK);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.map_size, RS_EXP_MAP_DEFAULT);
	rs_exp_close(e);
	/* Below the minimum: the minimum. */
	new_path();
	o.map_size = 1000;
	assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.map_size, RS_EXP_MAP_MIN);
	rs_exp_close(e);
}

/* ---- the file ---- */

static void
test_reopen(void **state)
{
	const char *pods[] = { "ns/a", "ns/b" };
	struct rs_exp *e = open_new();
	struct rs_exp_record r;
	pid_t pid;
	int status;

	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 2), RS_OK);
	assert_int_equal(rs_exp_expect_creations(e, "ns/c", 4), RS_OK);
	/* Another process's handle sees the first one's writes at once,
	 * and the first sees its writes. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rs_exp *e2;
		struct rs_exp_record r2;

		if (rs_exp_open(path, NULL, &e2) != RS_OK ||
		    rs_exp_get(e2, "ns/rs", &r2) != RS_OK || r2.del != 2 ||
		    r2.npods != 2 ||
		    rs_exp_deletion_observed(e2, "ns/rs", "ns/a") != RS_OK)
			_exit(1);
		rs_exp_close(e2);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_record(e, "ns/rs", 0, 1, 1);
	rs_exp_close(e);
	e = reopen();
	assert_int_equal(rs_exp_get(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.del, 1);
	assert_int_equal(r.npods, 1);
	assert_string_equal(r.pods[0], "ns/b");
	assert_int_equal(r.timestamp_ns, fake_now);
	rs_exp_record_free(&r);
	assert_record(e, "ns/c", 4, 0, 0);
	assert_consistent(e);
	rs_exp_close(e);
}

/* flock on the file belongs to the tools (rs-sync waits on it for an
 * earlier rs-apply): opening and using the file must not need it. */
static void
test_flock_left_to_tools(void **state)
{
	struct rs_exp *e = open_new();
	pid_t pid;
	int fd, status;

	rs_exp_close(e);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	e = reopen();
	assert_int_equal(rs_exp_expect_creations(e, "ns/a", 1), RS_OK);
	/* Nor in another process while the handle is open. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rs_exp *e2;

		alarm(10);
		_exit(rs_exp_open(path, NULL, &e2) == RS_OK &&
		    rs_exp_creation_observed(e2, "ns/a") == RS_OK ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_record(e, "ns/a", 0, 0, 0);
	/* And the open handle does not block flock either. */
	assert_int_equal(flock(fd, LOCK_UN), 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	close(fd);
	rs_exp_close(e);
}

static void
test_mode(void **state)
{
	struct rs_exp_opts nc = { .nocreate = 1 };
	struct rs_exp *e = open_new();
	struct stat st;
	char link[192], target[192];
	int fd;

	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(lockpath, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	rs_exp_close(e);
	assert_int_equal(chmod(path, 0640), 0);
	assert_open_fails(path, RS_EREFUSED, "mode 0640");
	assert_int_equal(chmod(path, 0604), 0);
	assert_open_fails(path, RS_EREFUSED, "mode 0604");
	assert_int_equal(chmod(path, 0600), 0);
	/* The lock file is checked the same way. */
	assert_int_equal(chmod(lockpath, 0660), 0);
	assert_open_fails(path, RS_EREFUSED, "mode 0660");
	assert_int_equal(chmod(lockpath, 0600), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_open_fails(path, RS_EREFUSED, "owned by uid 65534");
		assert_int_equal(chown(path, 0, 0), 0);
		assert_int_equal(chown(lockpath, 65534, 65534), 0);
		assert_open_fails(path, RS_EREFUSED, "owned by uid 65534");
		assert_int_equal(chown(lockpath, 0, 0), 0);
	}
	e = reopen();
	rs_exp_close(e);
	snprintf(link, sizeof link, "%s.link", path);
	assert_int_equal(symlink(path, link), 0);
	assert_open_fails(link, RS_EREFUSED, "symbolic link");
	/* A symlink for the lock file. */
	snprintf(target, sizeof target, "%s.target", path);
	assert_int_equal(rename(lockpath, target), 0);
	assert_int_equal(symlink(target, lockpath), 0);
	assert_open_fails(path, RS_EREFUSED, "symbolic link");
	assert_int_equal(unlink(lockpath), 0);
	assert_int_equal(rename(target, lockpath), 0);
	/* Not a regular file. */
	assert_open_fails(dir, RS_EIO, "unable to open");
	new_path();
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_open_fails(path, RS_EREFUSED, "not a regular file");
	/* nocreate: a missing file is not found, and not made. */
	new_path();
	assert_int_equal(rs_exp_open(path, &nc, &e), RS_ENOTFOUND);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(lockpath, F_OK), -1);
	/* The modes are 0600 whatever the umask. */
	umask(0277);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_OK);
	rs_exp_close(e);
	umask(022);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(lockpath, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* An empty file (a creator killed early) is initialised. */
	new_path();
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_OK);
	assert_int_equal(rs_exp_expect_creations(e, "ns/a", 1), RS_OK);
	assert_consistent(e);
	rs_exp_close(e);
	/* And so is a file whose lock file is gone. */
	assert_int_equal(unlink(lockpath), 0);
	e = reopen();
	assert_record(e, "ns/a", 1, 0, 0);
	rs_exp_close(e);
}

static void
write_at(off_t off, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

static void
read_at(off_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

static void
make_file(void)
{
	const char *pods[] = { "ns/a", "ns/b" };
	struct rs_exp_write w = { .resource = "pods", .rv = "42" };
	struct rs_exp *e = open_new();

	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 2), RS_OK);
	assert_int_equal(rs_exp_expect_creations(e, "ns/c", 3), RS_OK);
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u1", &w, 1), RS_OK);
	rs_exp_close(e);
}

/* LMDB's meta pages are pages 0 and 1: a 16-byte page header, then the
 * meta, magic 0xBEEFC0DE and version 1 first. */
#define META_MAGIC 16
#define META_VERSION 20

static void
test_bad_header(void **state)
{
	struct rs_exp *e;
	struct stat st;
	uint32_t v;
	char junk[4096];
	int fd;
	size_t i;

	make_file();
	read_at(META_MAGIC, &v, 4);
	assert_int_equal(v, 0xBEEFC0DEu);
	read_at(4096 + META_MAGIC, &v, 4);
	assert_int_equal(v, 0xBEEFC0DEu);
	/* The magic of the first meta page. */
	v = 0x12345678;
	write_at(META_MAGIC, &v, 4);
	assert_open_fails(path, RS_EPARSE, "not an expectations file");
	/* The version of the second. */
	make_file();
	read_at(4096 + META_VERSION, &v, 4);
	assert_int_equal(v, 1);
	v = 2;
	write_at(4096 + META_VERSION, &v, 4);
	assert_open_fails(path, RS_EPARSE, "not an expectations file");
	/* Our databases in a file made by someone else's LMDB program. */
	{
		MDB_env *env;
		MDB_txn *t;
		MDB_dbi dbi;
		MDB_val k = { 3, "key" }, d = { 5, "value" };

		new_path();
		assert_int_equal(mdb_env_create(&env), 0);
		assert_int_equal(mdb_env_set_maxdbs(env, 4), 0);
		assert_int_equal(mdb_env_open(env, path, MDB_NOSUBDIR, 0600),
		    0);
		assert_int_equal(mdb_txn_begin(env, NULL, 0, &t), 0);
		assert_int_equal(mdb_dbi_open(t, "expect", MDB_CREATE, &dbi),
		    0);
		assert_int_equal(mdb_put(t, dbi, &k, &d, 0), 0);
		assert_int_equal(mdb_txn_commit(t), 0);
		mdb_env_close(env);
		capture_begin();
		e = reopen();
		assert_int_equal(rs_exp_get(e, "key", &(struct
		    rs_exp_record){ 0 }), RS_EPARSE);
		assert_says(capture_end(), "the record of key fails its check");
		assert_int_equal(rs_exp_check(e, NULL, 0), RS_EPARSE);
		assert_int_equal(rs_exp_reset(e), RS_OK);
		assert_consistent(e);
		rs_exp_close(e);
	}

	/* Cut into the pages in use: said at open. */
	make_file();
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, 12288), 0);
	assert_open_fails(path, RS_EPARSE, "truncated");
	/* However often it is opened again: no crash, never RS_OK. */
	capture_begin();
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EPARSE);
	capture_end();
	make_file();
	assert_int_equal(truncate(path, 5000), 0);
	assert_open_fails(path, RS_EPARSE, "truncated");
	make_file();
	assert_int_equal(truncate(path, 100), 0);
	assert_open_fails(path, RS_EPARSE, "not an expectations file");
	/* Longer than its map: LMDB's file is as long as the map anyway. */
	make_file();
	assert_int_equal(truncate(path, st.st_size + 4096), 0);
	e = reopen();
	assert_record(e, "ns/rs", 0, 2, 2);
	assert_consistent(e);
	rs_exp_close(e);

	/* Random bytes, small and large. */
	srandom(7);
	for (i = 0; i < sizeof junk; i++)
		junk[i] = (char)random();
	new_path();
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	for (i = 0; i < 256; i++)
		assert_int_equal(write(fd, junk, sizeof junk), sizeof junk);
	close(fd);
	assert_open_fails(path, RS_EPARSE, "not an expectations file");
	assert_int_equal(truncate(path, 4000), 0);
	assert_open_fails(path, RS_EPARSE, "not an expectations file");
	/* Refusing it changed nothing: it is not made an LMDB file. */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 4000);
}

/* Offsets in the file of find's every occurrence in its first len bytes. */
static size_t
find_all(const char *find, size_t flen, off_t *offs, size_t max)
{
	struct stat st;
	size_t n = 0, len;
	char *buf;
	int fd = open(path, O_RDONLY);
	const char *p, *end;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	len = st.st_size > (1 << 20) ? 1 << 20 : (size_t)st.st_size;
	buf = malloc(len);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, len, 0), (ssize_t)len);
	close(fd);
	for (p = buf, end = buf + len; n < max && (p = memmem(p, (size_t)(end
	    - p), find, flen)) != NULL; p++)
		offs[n++] = p - buf;
	free(buf);
	return n;
}

/* A record's value changed behind the library's back (found by its magic,
 * "RSEX", stored little-endian: every copy, as LMDB's freed pages keep old
 * ones): open says so, operations fail cleanly with RS_EPARSE, check says
 * why, reset repairs. */
static void
test_bad_body(void **state)
{
	struct rs_exp_write w = { .resource = "pods", .rv = "1" };
	struct rs_exp_written wr;
	struct rs_exp_cursor c = { .started = 0 };
	struct rs_exp_record r;
	struct rs_exp_stats st;
	struct rs_exp *e;
	const char *text;
	off_t offs[64];
	char why[256];
	size_t n, i;
	int64_t bad = 12345;
	int ok;

	make_file();
	n = find_all("XESR", 4, offs, 64);
	assert_true(n >= 2);
	/* add, 8 bytes on: changed, the checksum no longer matches */
	for (i = 0; i < n; i++)
		write_at(offs[i] + 8, &bad, sizeof bad);
	capture_begin();
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_OK);
	text = capture_end();
	assert_says(text, " is damaged: the record of ns/");
	assert_says(text, "fails its check (rs_exp_reset or remove it)");
	capture_begin();
	assert_int_equal(rs_exp_get(e, "ns/rs", &r), RS_EPARSE);
	text = capture_end();
	assert_says(text, "is damaged");
	assert_says(text, "rs_exp_reset or remove it");
	/* Every operation, even on a key whose record is sound. */
	capture_begin();
	assert_int_equal(rs_exp_get(e, "ns/none", &r), RS_EPARSE);
	assert_int_equal(rs_exp_expect_creations(e, "ns/x", 1), RS_EPARSE);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/x", NULL, 0),
	    RS_EPARSE);
	assert_int_equal(rs_exp_creation_observed(e, "ns/c"), RS_EPARSE);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/a"),
	    RS_EPARSE);
	assert_int_equal(rs_exp_delete(e, "ns/rs"), RS_EPARSE);
	/* Upstream syncs when its store fails: ok is 1. */
	ok = 0;
	assert_int_equal(rs_exp_satisfied(e, "ns/rs", &ok, NULL), RS_EPARSE);
	assert_true(ok);
	assert_int_equal(rs_exp_next(e, &c, &r), RS_EPARSE);
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u1", &w, 1), RS_EPARSE);
	assert_int_equal(rs_exp_written(e, "ns/rs", &wr), RS_EPARSE);
	assert_int_equal(rs_exp_clear_written(e, "ns/rs", NULL), RS_EPARSE);
	assert_int_equal(rs_exp_check(e, why, sizeof why), RS_EPARSE);
	assert_says(why, "fails its check");
	rs_exp_close(e);
	/* The file was not changed by any of that. */
	e = reopen();
	capture_end();
	assert_int_equal(rs_exp_check(e, why, sizeof why), RS_EPARSE);
	assert_int_equal(rs_exp_reset(e), RS_OK);
	assert_consistent(e);
	assert_no_record(e, "ns/rs");
	assert_int_equal(rs_exp_written(e, "ns/rs", &wr), RS_ENOTFOUND);
	assert_int_equal(rs_exp_expect_creations(e, "ns/x", 1), RS_OK);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.keys, 1);
	assert_consistent(e);
	rs_exp_close(e);
	/* Repaired for the next opener too. */
	e = reopen();
	assert_consistent(e);
	assert_record(e, "ns/x", 1, 0, 0);
	rs_exp_close(e);

	/* A written record ("RSWR": "RWSR" in the file). */
	make_file();
	n = find_all("RWSR", 4, offs, 64);
	assert_true(n >= 1);
	for (i = 0; i < n; i++)
		write_at(offs[i] + 20, "x", 1);
	capture_begin();
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_OK);
	text = capture_end();
	assert_says(text, "the written record of ns/rs fails its check");
	capture_begin();
	assert_int_equal(rs_exp_written(e, "ns/rs", &wr), RS_EPARSE);
	assert_int_equal(rs_exp_get(e, "ns/c", &r), RS_EPARSE);
	capture_end();
	assert_int_equal(rs_exp_reset(e), RS_OK);
	assert_consistent(e);
	rs_exp_close(e);
}

/* A written record of the earlier fixed format (856 bytes), left in a file
 * across an upgrade: absent to every reader, not damage, and replaced by
 * the next write. */
static void
test_legacy_written(void **state)
{
	struct rs_exp *e;
	struct rs_exp_written wr;
	struct rs_exp_write w = { .resource = "pods", .rv = "7" };
	unsigned char old[856] = { 0x52, 0x57, 0x53, 0x52 };   /* "RSWR" */
	MDB_env *env;
	MDB_txn *t;
	MDB_dbi dbi;
	MDB_val k = { 6, "ns/old" }, d = { sizeof old, old };

	(void)state;
	e = reopen();
	rs_exp_close(e);
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 4), 0);
	assert_int_equal(mdb_env_open(env, path, MDB_NOSUBDIR | MDB_WRITEMAP,
	    0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &t), 0);
	assert_int_equal(mdb_dbi_open(t, "written", 0, &dbi), 0);
	assert_int_equal(mdb_put(t, dbi, &k, &d, 0), 0);
	assert_int_equal(mdb_txn_commit(t), 0);
	mdb_env_close(env);
	capture_begin();
	e = reopen();
	assert_string_equal(capture_end(), "");
	assert_int_equal(rs_exp_check(e, NULL, 0), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/old", &wr), RS_ENOTFOUND);
	assert_int_equal(rs_exp_wrote(e, "ns/old", "u1", &w, 1), RS_OK);
	assert_int_equal(rs_exp_written(e, "ns/old", &wr), RS_OK);
	assert_int_equal(wr.n, 1);
	assert_string_equal(wr.w[0].rv, "7");
	assert_consistent(e);
	rs_exp_close(e);
}

/* The live values of db, with their offsets in the file, as LMDB itself
 * finds them (old copies in freed pages are not live). A leaf page's
 * header starts with its page number. */
static size_t
live_values(const char *db, off_t *offs, size_t *lens, size_t max)
{
	MDB_env *env;
	MDB_txn *t;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, d;
	size_t n = 0;
	int err;

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 4), 0);
	assert_int_equal(mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY |
	    MDB_NOLOCK, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &t), 0);
	assert_int_equal(mdb_dbi_open(t, db, 0, &dbi), 0);
	assert_int_equal(mdb_cursor_open(t, dbi, &c), 0);
	for (err = mdb_cursor_get(c, &k, &d, MDB_FIRST); err == 0 && n < max;
	    err = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		uintptr_t page = (uintptr_t)d.mv_data & ~(uintptr_t)4095;
		uint64_t pgno;

		memcpy(&pgno, (void *)page, sizeof pgno);
		offs[n] = (off_t)(pgno * 4096 + ((uintptr_t)d.mv_data - page));
		lens[n++] = d.mv_size;
	}
	mdb_cursor_close(c);
	mdb_txn_abort(t);
	mdb_env_close(env);
	return n;
}

/* Random damage to the values (ours to check; LMDB's own pages are not,
 * see the doc): never a crash, every answer one of the documented codes,
 * damage to a live value always found, damage to an old copy harmless,
 * and reset always repairs. */
static void
test_fuzz(void **state)
{
	const char *pods[] = { "ns/a", "ns/b", "ns/c", "ns/d" };
	struct rs_exp_opts o = { .map_size = 256 << 10 };
	struct rs_exp_write w = { .resource = "pods", .rv = "3" };
	struct rs_exp_written wr;
	struct rs_exp_record r;
	struct rs_exp_cursor c;
	struct rs_exp *e;
	off_t offs[16], stale[64];
	size_t lens[16], nl, ns;
	uint8_t junk[16], old[16];
	int round, i, ok, live, found = 0, damaged_rounds = 0;
	rs_code rc;

	srandom(11);
	for (round = 0; round < 200; round++) {
		new_path();
		assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
		for (i = 0; i < 6; i++) {
			char key[16];

			snprintf(key, sizeof key, "ns/k%d", i);
			assert_int_equal(rs_exp_expect_deletions(e, key,
			    pods + i % 3, 1 + i % 2), RS_OK);
			if (i % 2)
				assert_int_equal(rs_exp_wrote(e, key, "u", &w,
				    1), RS_OK);
			assert_int_equal(rs_exp_creation_observed(e, key),
			    RS_OK);
		}
		rs_exp_close(e);
		/* a live value, or (one round in four) only old copies */
		live = round % 4 != 3;
		if (live) {
			const char *db = random() % 3 ? "expect" : "written";
			size_t j, off, len;

			nl = live_values(db, offs, lens, 16);
			assert_true(nl >= 3);
			j = (size_t)random() % nl;
			off = (size_t)random() % lens[j];
			len = 1 + (size_t)random() % 8;
			if (off + len > lens[j])
				len = lens[j] - off;
			read_at(offs[j] + (off_t)off, old, len);
			for (i = 0; i < (int)len; i++)
				junk[i] = (uint8_t)random();
			if (memcmp(junk, old, len) == 0)
				junk[0] ^= 1;
			write_at(offs[j] + (off_t)off, junk, len);
			damaged_rounds++;
		} else {
			size_t j, k;

			/* every copy of the magic that is not a live
			 * value's */
			nl = live_values("expect", offs, lens, 16);
			ns = find_all("XESR", 4, stale, 64);
			for (j = 0; j < ns; j++) {
				for (k = 0; k < nl && offs[k] != stale[j]; k++)
					;
				if (k == nl)
					write_at(stale[j] + 8, "garbage!", 8);
			}
		}
		capture_begin();
		rc = rs_exp_open(path, &o, &e);
		capture_end();
		assert_int_equal(rc, RS_OK);
		if (rs_exp_check(e, NULL, 0) != RS_OK) {
			assert_true(live);
			found++;
		} else {
			assert_false(live);
		}
		capture_begin();
		for (i = 0; i < 6; i++) {
			char key[16];

			snprintf(key, sizeof key, "ns/k%d", i);
			rc = rs_exp_deletion_observed(e, key, pods[i % 4]);
			assert_int_equal(rc, live ? RS_EPARSE : RS_OK);
			rc = rs_exp_satisfied(e, key, &ok, NULL);
			assert_int_equal(rc, live ? RS_EPARSE : RS_OK);
			if (live)
				assert_true(ok);
			rc = rs_exp_expect_deletions(e, key, pods, 4);
			assert_int_equal(rc, live ? RS_EPARSE : RS_OK);
			rc = rs_exp_get(e, key, &r);
			assert_true(rc == RS_OK || rc == RS_EPARSE);
			if (rc == RS_OK)
				rs_exp_record_free(&r);
			rc = rs_exp_written(e, key, &wr);
			assert_true(rc == RS_OK || rc == RS_EPARSE ||
			    rc == RS_ENOTFOUND);
			rc = rs_exp_delete(e, key);
			assert_int_equal(rc, live ? RS_EPARSE : RS_OK);
		}
		memset(&c, 0, sizeof c);
		while ((rc = rs_exp_next(e, &c, &r)) == RS_OK)
			rs_exp_record_free(&r);
		assert_true(rc == RS_EEOF || rc == RS_EPARSE);
		capture_end();
		assert_int_equal(rs_exp_reset(e), RS_OK);
		assert_consistent(e);
		assert_int_equal(rs_exp_expect_deletions(e, "ns/k0", pods, 4),
		    RS_OK);
		assert_record(e, "ns/k0", 0, 4, 4);
		rs_exp_close(e);
		rm_store();
	}
	/* Every damaged live value was found. */
	assert_int_equal(found, damaged_rounds);
	assert_true(damaged_rounds > 100);
}

/* The first open in a new boot drops every record (its monotonic
 * timestamps belong to the earlier boot); once. */
static void
test_reboot(void **state)
{
	struct rs_exp_written wr;
	struct rs_exp_stats st;
	struct rs_exp *e;

	make_file();
	e = reopen();
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.keys, 2);
	assert_int_equal(st.written, 1);
	rs_exp_close(e);
	rs_exp_set_boot_id(boot_b);
	e = reopen();
	assert_no_record(e, "ns/rs");
	assert_no_record(e, "ns/c");
	assert_int_equal(rs_exp_written(e, "ns/rs", &wr), RS_ENOTFOUND);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.keys, 0);
	assert_int_equal(st.pods, 0);
	assert_int_equal(st.written, 0);
	assert_consistent(e);
	assert_int_equal(rs_exp_expect_creations(e, "ns/new", 1), RS_OK);
	rs_exp_close(e);
	/* Once: the boot id is now the current one. */
	e = reopen();
	assert_record(e, "ns/new", 1, 0, 0);
	assert_consistent(e);
	rs_exp_close(e);
}

static const char *
boot_none(void)
{
	return "";
}

static void
test_reboot_unknown(void **state)
{
	struct rs_exp *e;

	make_file();
	rs_exp_set_boot_id(boot_none);
	e = reopen();
	assert_record(e, "ns/rs", 0, 2, 2);
	rs_exp_close(e);
	/* and the recorded one stays: back in boot-a, nothing dropped */
	rs_exp_set_boot_id(boot_a);
	e = reopen();
	assert_record(e, "ns/rs", 0, 2, 2);
	rs_exp_close(e);
}

/* ---- iteration and format ---- */

static void
test_next_and_json(void **state)
{
	const char *pods[] = { "ns/b\"q", "ns/a" };
	struct rs_exp *e = open_new();
	struct rs_exp_record r;
	struct rs_exp_cursor c = { .started = 0 };
	int seen = 0, i;
	char key[16], *line, prev[RS_EXP_KEY_MAX + 1] = "";

	for (i = 0; i < 20; i++) {
		snprintf(key, sizeof key, "ns/k%02d", i);
		assert_int_equal(rs_exp_expect_creations(e, key, i), RS_OK);
	}
	for (i = 0; i < 20; i += 2) {
		snprintf(key, sizeof key, "ns/k%02d", i);
		assert_int_equal(rs_exp_delete(e, key), RS_OK);
	}
	while (rs_exp_next(e, &c, &r) == RS_OK) {
		assert_int_equal(r.add % 2, 1);
		assert_int_equal(atoi(r.key + 4), r.add);
		/* in key order */
		assert_true(strcmp(prev, r.key) < 0);
		snprintf(prev, sizeof prev, "%s", r.key);
		seen++;
		/* a record added behind the cursor is not seen, one
		 * ahead of it is */
		if (seen == 3) {
			assert_int_equal(rs_exp_expect_creations(e, "ns/k00",
			    1), RS_OK);
			assert_int_equal(rs_exp_expect_creations(e, "ns/k21",
			    21), RS_OK);
		}
		rs_exp_record_free(&r);
	}
	assert_int_equal(seen, 11);
	assert_int_equal(rs_exp_next(e, &c, &r), RS_EEOF);
	assert_int_equal(rs_exp_next(e, &c, &r), RS_EEOF);

	assert_int_equal(rs_exp_expect_deletions(e, "ns/d", pods, 2), RS_OK);
	fake_now += 1500000000;
	assert_int_equal(rs_exp_get(e, "ns/d", &r), RS_OK);
	assert_int_equal(rs_exp_record_json(&r, &line), RS_OK);
	rs_exp_record_free(&r);
	assert_non_null(strstr(line, "{\"key\":\"ns/d\",\"add\":0,\"del\":2,"
	    "\"timestamp\":\""));
	assert_non_null(strstr(line, "\"age\":1.5,\"deleting\":[\"ns/a\","
	    "\"ns/b\\\"q\"],\"satisfied\":false,\"reason\":\"pending\"}"));
	free(line);
	rs_exp_close(e);
}

/* ---- concurrency ---- */

struct worker {
	struct rs_exp *e;
	int n;
	int first;
};

static void *
observer(void *arg)
{
	struct worker *w = arg;
	char pod[32];
	int i;

	for (i = 0; i < w->n; i++) {
		assert_int_equal(rs_exp_creation_observed(w->e, "ns/t"), RS_OK);
		snprintf(pod, sizeof pod, "ns/p%d", w->first + i % 300);
		assert_int_equal(rs_exp_deletion_observed(w->e, "ns/d", pod),
		    RS_OK);
	}
	return NULL;
}

/* Versions recorded from several threads: the newest stays. */
static void *
writer(void *arg)
{
	struct worker *w = arg;
	struct rs_exp_write wr;
	int i;

	for (i = 0; i < w->n; i++) {
		wr = wv("", "pods", "");
		snprintf(wr.rv, sizeof wr.rv, "%d", w->first + 4 * i);
		assert_int_equal(rs_exp_wrote(w->e, "ns/w", "u1", &wr, 1),
		    RS_OK);
	}
	return NULL;
}

static void
test_threads(void **state)
{
	struct rs_exp *e = open_new();
	struct rs_exp_written wr;
	struct worker w[4];
	pthread_t t[4];
	char *pods[400], buf[400][16];
	int i;

	for (i = 0; i < 400; i++) {
		snprintf(buf[i], sizeof buf[i], "ns/p%d", i);
		pods[i] = buf[i];
	}
	assert_int_equal(rs_exp_expect_creations(e, "ns/t", 100000), RS_OK);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/d",
	    (const char *const *)pods, 400), RS_OK);
	/* Threads share one handle; their pod ranges overlap. */
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ .e = e, .n = 5000, .first = i * 30 };
		assert_int_equal(pthread_create(&t[i], NULL, observer, &w[i]),
		    0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	/* 20000 creations; pods 0..389 observed, each once. */
	assert_record(e, "ns/t", 80000, 0, 0);
	assert_record(e, "ns/d", 0, 10, 10);
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ .e = e, .n = 2000, .first = 1 + i };
		assert_int_equal(pthread_create(&t[i], NULL, writer, &w[i]),
		    0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(rs_exp_written(e, "ns/w", &wr), RS_OK);
	assert_string_equal(wr.w[0].rv, "8000");
	assert_consistent(e);
	rs_exp_close(e);
}

/* ---- crash safety ---- */

static uint64_t kill_at, writes;

/* Kills the process at its kill_at-th write, whatever the transaction. */
static void
kill_hook(uint64_t n)
{
	if (++writes == kill_at)
		raise(SIGKILL);
}

typedef rs_code (*op_fn)(struct rs_exp *);

static rs_code
op_replace_set(struct rs_exp *e)
{
	const char *pods[] = { "ns/q1", "ns/p2", "ns/q3", "ns/q4", "ns/q5",
	    "ns/q6" };

	return rs_exp_expect_deletions(e, "ns/rs", pods, 6);
}

static rs_code
op_new_key_set(struct rs_exp *e)
{
	const char *pods[] = { "ns/n1", "ns/n2", "ns/n3" };

	return rs_exp_expect_deletions(e, "ns/new", pods, 3);
}

static rs_code
op_observe(struct rs_exp *e)
{
	return rs_exp_deletion_observed(e, "ns/rs", "ns/p3");
}

static rs_code
op_delete(struct rs_exp *e)
{
	return rs_exp_delete(e, "ns/rs");
}

static rs_code
op_create(struct rs_exp *e)
{
	return rs_exp_expect_creations(e, "ns/c2", 9);
}

static rs_code
op_wrote(struct rs_exp *e)
{
	struct rs_exp_write w[2] = { wv("", "pods", "12"),
	    wv("apps", "replicasets", "13") };

	return rs_exp_wrote(e, "ns/rs", "u1", w, 2);
}

static rs_code
op_clear_written(struct rs_exp *e)
{
	return rs_exp_clear_written(e, "ns/rs", "u1");
}

static rs_code
op_reset(struct rs_exp *e)
{
	return rs_exp_reset(e);
}

/* Nothing: the op is the open itself, in another boot. */
static rs_code
op_none(struct rs_exp *e)
{
	return RS_OK;
}

static void
crash_base(void)
{
	const char *pods[] = { "ns/p1", "ns/p2", "ns/p3", "ns/p4", "ns/p5" };
	struct rs_exp_write w = wv("", "pods", "11");
	struct rs_exp *e;

	rm_store();
	e = reopen();
	assert_int_equal(rs_exp_expect_creations(e, "ns/c1", 2), RS_OK);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 5), RS_OK);
	assert_int_equal(rs_exp_delete(e, "ns/c1"), RS_OK);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/p1"), RS_OK);
	assert_int_equal(rs_exp_wrote(e, "ns/rs", "u1", &w, 1), RS_OK);
	rs_exp_close(e);
}

/* The state after op on the base state (boot: the boot it runs in). */
static char *
state_after(op_fn op, const char *(*boot)(void))
{
	struct rs_exp *e;
	char *s;

	crash_base();
	if (op) {
		rs_exp_set_boot_id(boot);
		e = reopen();
		assert_int_equal(op(e), RS_OK);
		rs_exp_close(e);
		rs_exp_set_boot_id(boot_a);
	}
	e = reopen();
	s = snapshot(e);
	rs_exp_close(e);
	return s;
}

/* Kills a child at write k of op, for k = 1, 2, ... until the op
 * completes. After every kill the parent must find the state exactly as
 * before the op, consistent; once the op completed, exactly as after it.
 * Returns how many writes the op makes. boot: the boot the child runs in
 * (boot_b: the op is the open's reboot rule). */
static uint64_t
crash_op(op_fn op, const char *(*boot)(void))
{
	struct rs_exp *e;
	char *before, *after, *now;
	uint64_t k;
	int status;
	pid_t pid;

	after = state_after(op, boot);
	before = state_after(NULL, boot_a);
	assert_string_not_equal(before, after);
	for (k = 1;; k++) {
		crash_base();
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			kill_at = k;
			writes = 0;
			rs_exp_set_boot_id(boot);
			rs_exp_set_write_hook(kill_hook);
			e = reopen();
			_exit(op(e) == RS_OK ? 0 : 1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		e = reopen();
		now = snapshot(e);
		assert_consistent(e);
		rs_exp_close(e);
		if (WIFEXITED(status)) {
			assert_int_equal(WEXITSTATUS(status), 0);
			assert_string_equal(now, after);
			free(now);
			break;
		}
		assert_true(WIFSIGNALED(status));
		assert_int_equal(WTERMSIG(status), SIGKILL);
		if (strcmp(now, before) != 0)
			fail_msg("after a kill at write %llu:\n%sbefore:\n%s",
			    (unsigned long long)k, now, before);
		free(now);
	}
	rm_store();
	free(before);
	free(after);
	return k - 1;
}

static void
test_crash(void **state)
{
	new_path();
	/* Each op is cut after each of its writes; the counts are what the
	 * ops write, and show that every step was exercised. Replacing a
	 * set: the old set dropped, 6 pods, the record. */
	assert_int_equal(crash_op(op_replace_set, boot_a), 8);
	assert_int_equal(crash_op(op_new_key_set, boot_a), 4);
	assert_int_equal(crash_op(op_observe, boot_a), 2);
	assert_int_equal(crash_op(op_delete, boot_a), 2);
	assert_int_equal(crash_op(op_create, boot_a), 1);
	assert_int_equal(crash_op(op_wrote, boot_a), 1);
	assert_int_equal(crash_op(op_clear_written, boot_a), 1);
	/* reset: three databases dropped */
	assert_int_equal(crash_op(op_reset, boot_a), 3);
	/* the reboot rule at open: three dropped, the boot id written (the
	 * parent, in boot-a again, then drops what the child left: nothing
	 * if it completed) */
	assert_int_equal(crash_op(op_none, boot_b), 4);
}

static void
stop_hook(uint64_t n)
{
	if (n == 3)
		raise(SIGSTOP);
}

/* A writer stopped inside a transaction (SIGSTOP, a debugger): readers
 * never wait for it and see the state before; another writer waits; once
 * the stopped one is killed, the waiting writer takes the lock over, and
 * nothing of the killed transaction is left. */
static void
test_stopped_writer(void **state)
{
	struct rs_exp *e;
	struct rs_exp_record r;
	enum rs_exp_why why;
	char *before, *now;
	pid_t pid, w;
	int64_t t0;
	int status, ok;

	new_path();
	crash_base();
	e = reopen();
	before = snapshot(e);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rs_exp *c;

		alarm(60);
		if (rs_exp_open(path, NULL, &c) != RS_OK)
			_exit(2);
		rs_exp_set_write_hook(stop_hook);
		_exit(op_replace_set(c) == RS_OK ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));
	/* Readers: at once, the state before. */
	alarm(20);
	t0 = rs_mono_ns();
	assert_int_equal(rs_exp_satisfied(e, "ns/rs", &ok, &why), RS_OK);
	assert_false(ok);
	assert_int_equal(why, RS_EXP_PENDING);
	assert_int_equal(rs_exp_get(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.del, 4);
	assert_int_equal(r.npods, 4);
	assert_string_equal(r.pods[0], "ns/p2");
	rs_exp_record_free(&r);
	now = snapshot(e);
	assert_string_equal(now, before);
	free(now);
	assert_consistent(e);
	assert_true(elapsed_ms(t0) < 1000);
	/* A writer waits. */
	w = fork();
	assert_true(w >= 0);
	if (w == 0) {
		struct rs_exp *c;

		alarm(30);
		if (rs_exp_open(path, NULL, &c) != RS_OK)
			_exit(2);
		_exit(rs_exp_expect_creations(c, "ns/w", 1) == RS_OK ? 0 : 1);
	}
	usleep(300000);
	assert_int_equal(waitpid(w, &status, WNOHANG), 0);
	/* Killed: the waiting writer goes on. */
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(waitpid(w, &status, 0), w);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	alarm(0);
	/* Nothing of the killed transaction. */
	assert_int_equal(rs_exp_get(e, "ns/rs", &r), RS_OK);
	assert_int_equal(r.del, 4);
	assert_int_equal(r.npods, 4);
	assert_string_equal(r.pods[0], "ns/p2");
	assert_string_equal(r.pods[3], "ns/p5");
	rs_exp_record_free(&r);
	assert_record(e, "ns/w", 1, 0, 0);
	assert_int_equal(rs_exp_expect_creations(e, "ns/x", 2), RS_OK);
	assert_int_equal(op_replace_set(e), RS_OK);
	assert_record(e, "ns/rs", 0, 6, 6);
	assert_consistent(e);
	rs_exp_close(e);
	free(before);
	rm_store();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_creations, setup),
		cmocka_unit_test_setup(test_deletions, setup),
		cmocka_unit_test_setup(test_creations_keep_set, setup),
		cmocka_unit_test_setup(test_delete, setup),
		cmocka_unit_test_setup(test_expiry, setup),
		cmocka_unit_test_setup(test_keys, setup),
		cmocka_unit_test_setup(test_written_newest, setup),
		cmocka_unit_test_setup(test_written_uid_and_clear, setup),
		cmocka_unit_test_setup(test_written_malformed, setup),
		cmocka_unit_test_setup(test_written_limits, setup),
		cmocka_unit_test_setup(test_fuzz_model, setup),
		cmocka_unit_test_setup(test_full, setup),
		cmocka_unit_test_setup(test_map_size, setup),
		cmocka_unit_test_setup(test_reopen, setup),
		cmocka_unit_test_setup(test_mode, setup),
		cmocka_unit_test_setup(test_flock_left_to_tools, setup),
		cmocka_unit_test_setup(test_bad_header, setup),
		cmocka_unit_test_setup(test_bad_body, setup),
		cmocka_unit_test_setup(test_fuzz, setup),
		cmocka_unit_test_setup(test_legacy_written, setup),
		cmocka_unit_test_setup(test_reboot, setup),
		cmocka_unit_test_setup(test_reboot_unknown, setup),
		cmocka_unit_test_setup(test_next_and_json, setup),
		cmocka_unit_test_setup(test_threads, setup),
		cmocka_unit_test_setup(test_crash, setup),
		cmocka_unit_test_setup(test_stopped_writer, setup),
	};
	char cmd[96];
	int rc;

	rs_log_init("expectations-test");
	snprintf(dir, sizeof dir, "%s/rs-exp-unit.XXXXXX",
	    access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		rc = rc ? rc : 1;
	return rc;
}
