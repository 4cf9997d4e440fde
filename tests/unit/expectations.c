/* Unit tests of libcommon/expectations: every operation against upstream's
 * semantics, expiry on an injected clock, capacity, reopening, damaged
 * files, and crash recovery (a child killed after each logged write of an
 * operation, the parent finding the state exactly as before). */
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
#include <unistd.h>

#include <cmocka.h>

#include "expectations.h"
#include "log.h"

static char dir[64];
static char path[128];
static int64_t fake_now;
static int path_seq;

static int64_t
fake_clock(void)
{
	return fake_now;
}

static void
new_path(void)
{
	snprintf(path, sizeof path, "%s/exp%d", dir, ++path_seq);
}

static struct rs_exp *
open_new(uint32_t keys, uint32_t pods)
{
	struct rs_exp_opts o = { .keys = keys, .pods = pods };
	struct rs_exp *e;

	new_path();
	assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
	return e;
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

static enum rs_exp_why
why_of(struct rs_exp *e, const char *key, int *ok)
{
	enum rs_exp_why why = RS_EXP_PENDING;

	assert_int_equal(rs_exp_satisfied(e, key, ok, &why), RS_OK);
	return why;
}

static int
setup(void **state)
{
	fake_now = 1000000000000LL;
	rs_exp_set_clock(fake_clock);
	rs_exp_set_write_hook(NULL);
	return 0;
}

/* ---- semantics ---- */

static void
test_creations(void **state)
{
	struct rs_exp *e = open_new(64, 64);
	int ok;

	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_NO_RECORD);
	assert_true(ok);
	assert_int_equal(rs_exp_get(e, "ns/rs", &(struct rs_exp_record){ 0 }),
	    RS_ENOTFOUND);
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
	assert_int_equal(rs_exp_get(e, "ns/other",
	    &(struct rs_exp_record){ 0 }), RS_ENOTFOUND);
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs", -1), RS_EUSAGE);
	assert_int_equal(rs_exp_lower_creations(e, "ns/rs", -1), RS_EUSAGE);
	assert_consistent(e);
	rs_exp_close(e);
}

static void
test_deletions(void **state)
{
	const char *pods[] = { "ns/a", "ns/b", "ns/c", "ns/b" };
	const char *pods2[] = { "ns/c", "ns/d" };
	struct rs_exp *e = open_new(64, 64);
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
	assert_consistent(e);
	rs_exp_close(e);
}

/* As upstream, ExpectCreations leaves the pod-key set alone: a late
 * deletion of one of its pods still lowers del (below zero, harmless). */
static void
test_creations_keep_set(void **state)
{
	const char *pods[] = { "ns/a", "ns/b" };
	struct rs_exp *e = open_new(64, 64);
	int ok;

	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 2), RS_OK);
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs", 1), RS_OK);
	assert_record(e, "ns/rs", 1, 0, 2);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/a"), RS_OK);
	assert_record(e, "ns/rs", 1, -1, 1);
	assert_int_equal(rs_exp_creation_observed(e, "ns/rs"), RS_OK);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_FULFILLED);
	rs_exp_close(e);
}

static void
test_delete(void **state)
{
	const char *pods[] = { "ns/a", "ns/b", "ns/c", "ns/d" };
	struct rs_exp *e = open_new(4, 4);
	struct rs_exp_stats st;
	int ok;

	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 4), RS_OK);
	assert_int_equal(rs_exp_delete(e, "ns/rs"), RS_OK);
	assert_int_equal(rs_exp_get(e, "ns/rs", &(struct rs_exp_record){ 0 }),
	    RS_ENOTFOUND);
	assert_int_equal(why_of(e, "ns/rs", &ok), RS_EXP_NO_RECORD);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.keys, 0);
	assert_int_equal(st.pods, 0);
	/* The pod entries went back to the pool: all four fit again. */
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs2", pods, 4), RS_OK);
	assert_int_equal(rs_exp_delete(e, "ns/none"), RS_OK);
	/* A pod of a deleted record is no longer awaited. */
	assert_int_equal(rs_exp_delete(e, "ns/rs2"), RS_OK);
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs2", "ns/a"), RS_OK);
	assert_consistent(e);
	rs_exp_close(e);
}

static void
test_expiry(void **state)
{
	struct rs_exp *e = open_new(64, 64);
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
	struct rs_exp *e = open_new(8, 8);
	int ok;

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_int_equal(rs_exp_expect_creations(e, big, 1), RS_ETOOBIG);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 1),
	    RS_ETOOBIG);
	assert_int_equal(rs_exp_expect_creations(e, "", 1), RS_EUSAGE);
	assert_int_equal(rs_exp_satisfied(e, NULL, &ok, NULL), RS_EUSAGE);
	big[RS_EXP_KEY_MAX] = '\0';
	assert_int_equal(rs_exp_expect_creations(e, big, 1), RS_OK);
	assert_int_equal(rs_exp_expect_deletions(e, big, pods, 1), RS_OK);
	assert_record(e, big, 0, 1, 1);
	assert_consistent(e);
	rs_exp_close(e);
}

/* ---- capacity ---- */

static void
test_full(void **state)
{
	const char *pods[] = { "ns/p0", "ns/p1", "ns/p2", "ns/p3", "ns/p4",
	    "ns/p5", "ns/p6", "ns/p7", "ns/p8" };
	struct rs_exp *e = open_new(4, 8);
	char key[32];
	int i;

	for (i = 0; i < 4; i++) {
		snprintf(key, sizeof key, "ns/rs%d", i);
		assert_int_equal(rs_exp_expect_creations(e, key, i), RS_OK);
	}
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs4", 1), RS_EFULL);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs4", pods, 1),
	    RS_EFULL);
	/* An existing key can still be set. */
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs3", 7), RS_OK);
	assert_int_equal(rs_exp_delete(e, "ns/rs1"), RS_OK);
	assert_int_equal(rs_exp_expect_creations(e, "ns/rs4", 1), RS_OK);

	/* Pods: 9 do not fit in 8, and the failure changes nothing. */
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs0", pods, 3), RS_OK);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs0", pods, 9),
	    RS_EFULL);
	assert_record(e, "ns/rs0", 0, 3, 3);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs2", pods + 3, 6),
	    RS_EFULL);
	assert_record(e, "ns/rs2", 2, 0, 0);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs2", pods + 3, 5),
	    RS_OK);
	/* Replacing a set may reuse its own entries. */
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs0", pods + 6, 3),
	    RS_OK);
	assert_record(e, "ns/rs0", 0, 3, 3);
	assert_int_equal(rs_exp_delete(e, "ns/rs2"), RS_OK);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs3", pods, 5), RS_OK);
	assert_consistent(e);
	rs_exp_close(e);
}

static void
test_capacity_flags(void **state)
{
	struct rs_exp_opts o = { .keys = RS_EXP_CAP_MAX + 1, .pods = 8 };
	struct rs_exp_stats st;
	struct rs_exp *e;

	new_path();
	assert_int_equal(rs_exp_open(path, &o, &e), RS_EUSAGE);
	o.keys = 100;
	o.pods = 1000;
	assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.keys_cap, 100);
	assert_int_equal(st.pods_cap, 1000);
	rs_exp_close(e);
	/* An existing file keeps its own capacities. */
	o.keys = 5;
	assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.keys_cap, 100);
	rs_exp_close(e);
	/* Defaults. */
	new_path();
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_OK);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.keys_cap, RS_EXP_KEYS_DEFAULT);
	assert_int_equal(st.pods_cap, RS_EXP_PODS_DEFAULT);
	rs_exp_close(e);
}

/* ---- the file ---- */

static void
test_reopen(void **state)
{
	const char *pods[] = { "ns/a", "ns/b" };
	struct rs_exp *e = open_new(64, 64), *e2;
	struct rs_exp_record r;

	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 2), RS_OK);
	assert_int_equal(rs_exp_expect_creations(e, "ns/c", 4), RS_OK);
	/* A second handle sees the first one's writes at once. */
	e2 = reopen();
	assert_record(e2, "ns/rs", 0, 2, 2);
	assert_int_equal(rs_exp_deletion_observed(e2, "ns/rs", "ns/a"), RS_OK);
	assert_record(e, "ns/rs", 0, 1, 1);
	rs_exp_close(e);
	rs_exp_close(e2);
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
	struct rs_exp_opts o = { .lock_timeout_ms = 300 };
	struct rs_exp *e = open_new(8, 8), *e2;
	int fd;

	rs_exp_close(e);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
	assert_int_equal(rs_exp_expect_creations(e, "ns/a", 1), RS_OK);
	/* And an open in progress does not block flock either. */
	assert_int_equal(rs_exp_open(path, &o, &e2), RS_OK);
	rs_exp_close(e2);
	assert_int_equal(flock(fd, LOCK_UN), 0);
	assert_int_equal(flock(fd, LOCK_SH | LOCK_NB), 0);
	close(fd);
	rs_exp_close(e);
}

static void
test_mode(void **state)
{
	struct rs_exp_opts nc = { .nocreate = 1 };
	struct rs_exp *e = open_new(8, 8);
	struct stat st;
	char link[160];
	int fd;

	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	rs_exp_close(e);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EREFUSED);
	assert_int_equal(chmod(path, 0604), 0);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EREFUSED);
	assert_int_equal(chmod(path, 0600), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(rs_exp_open(path, NULL, &e), RS_EREFUSED);
		assert_int_equal(chown(path, 0, 0), 0);
	}
	snprintf(link, sizeof link, "%s.link", path);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(rs_exp_open(link, NULL, &e), RS_EREFUSED);
	assert_int_equal(rs_exp_open(dir, NULL, &e), RS_EIO);
	/* nocreate: a missing file is not found, and not made. */
	new_path();
	assert_int_equal(rs_exp_open(path, &nc, &e), RS_ENOTFOUND);
	assert_int_equal(access(path, F_OK), -1);
	/* The mode is 0600 whatever the umask. */
	umask(0277);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_OK);
	rs_exp_close(e);
	umask(022);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* An empty file (a creator killed early) is initialised. */
	new_path();
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_OK);
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
	struct rs_exp *e = open_new(64, 64);

	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 2), RS_OK);
	rs_exp_close(e);
}

static void
test_bad_header(void **state)
{
	struct rs_exp *e;
	uint32_t v;
	uint8_t b;
	struct stat st;
	char junk[4096];
	int fd;
	size_t i;

	make_file();
	write_at(0, "NOTEXPCT", 8);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EPARSE);

	make_file();
	read_at(8, &v, 4);
	assert_int_equal(v, 1);
	v = 2;
	write_at(8, &v, 4);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EPARSE);

	/* One flipped bit in a capacity: the checksum says so. */
	make_file();
	read_at(40, &b, 1);
	b ^= 1;
	write_at(40, &b, 1);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EPARSE);

	make_file();
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size / 2), 0);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EPARSE);
	assert_int_equal(truncate(path, 100), 0);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EPARSE);
	assert_int_equal(truncate(path, st.st_size + 4096), 0);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EPARSE);

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
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EPARSE);
	assert_int_equal(truncate(path, 4000), 0);
	assert_int_equal(rs_exp_open(path, NULL, &e), RS_EPARSE);
}

/* A damaged body: operations fail cleanly with RS_EPARSE, check says
 * why, reset repairs. */
static void
test_bad_body(void **state)
{
	struct rs_exp *e;
	char why[256];
	uint8_t ff[4096];
	int ok;

	make_file();
	memset(ff, 0xff, sizeof ff);
	/* The first page after the header holds the key buckets. */
	write_at(4096, ff, sizeof ff);
	e = reopen();
	assert_int_equal(rs_exp_get(e, "ns/rs", &(struct rs_exp_record){ 0 }),
	    RS_EPARSE);
	assert_int_equal(rs_exp_expect_creations(e, "ns/x", 1), RS_EPARSE);
	assert_int_equal(rs_exp_satisfied(e, "ns/rs", &ok, NULL), RS_EPARSE);
	assert_true(ok);
	assert_int_equal(rs_exp_check(e, why, sizeof why), RS_EPARSE);
	assert_true(strlen(why) > 0);
	assert_int_equal(rs_exp_reset(e), RS_OK);
	assert_consistent(e);
	assert_int_equal(rs_exp_get(e, "ns/rs", &(struct rs_exp_record){ 0 }),
	    RS_ENOTFOUND);
	assert_int_equal(rs_exp_expect_creations(e, "ns/x", 1), RS_OK);
	assert_consistent(e);
	rs_exp_close(e);
}

/* Random damage anywhere but in the mutex: never a crash, every answer
 * one of the documented codes, and reset always repairs. */
static void
test_fuzz(void **state)
{
	const char *pods[] = { "ns/a", "ns/b", "ns/c", "ns/d" };
	struct rs_exp_opts o = { .keys = 16, .pods = 16,
	    .lock_timeout_ms = 100 };
	struct rs_exp_record r;
	struct rs_exp *e;
	struct stat st;
	size_t cursor;
	uint8_t junk[64];
	int round, i, ok, detected = 0;
	rs_code rc;

	srandom(11);
	for (round = 0; round < 300; round++) {
		new_path();
		assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
		for (i = 0; i < 6; i++) {
			char key[16];

			snprintf(key, sizeof key, "ns/k%d", i);
			assert_int_equal(rs_exp_expect_deletions(e, key,
			    pods + i % 3, 1 + i % 2), RS_OK);
		}
		rs_exp_close(e);
		assert_int_equal(stat(path, &st), 0);
		for (i = 0; i < 8; i++) {
			/* Often the used part of the tables; never the
			 * mutex (bytes 192..231): see the doc. */
			off_t off = random() % (round % 2 ? 64 << 10 :
			    st.st_size);
			size_t j;

			if (off >= 64 && off < 256)
				off += 256;
			for (j = 0; j < sizeof junk; j++)
				junk[j] = (uint8_t)random();
			write_at(off, junk, (size_t)(random() % 16) + 1);
		}
		rc = rs_exp_open(path, &o, &e);
		if (rc == RS_EPARSE) {
			detected++;
			continue;
		}
		assert_int_equal(rc, RS_OK);
		for (i = 0; i < 6; i++) {
			char key[16];

			snprintf(key, sizeof key, "ns/k%d", i);
			rc = rs_exp_deletion_observed(e, key, pods[i % 4]);
			assert_true(rc == RS_OK || rc == RS_EPARSE);
			rc = rs_exp_satisfied(e, key, &ok, NULL);
			assert_true(rc == RS_OK || rc == RS_EPARSE);
			rc = rs_exp_expect_deletions(e, key, pods, 4);
			assert_true(rc == RS_OK || rc == RS_EPARSE ||
			    rc == RS_EFULL);
			rc = rs_exp_get(e, key, &r);
			assert_true(rc == RS_OK || rc == RS_EPARSE ||
			    rc == RS_ENOTFOUND);
			rs_exp_record_free(&r);
			rc = rs_exp_delete(e, key);
			assert_true(rc == RS_OK || rc == RS_EPARSE);
		}
		cursor = 0;
		while ((rc = rs_exp_next(e, &cursor, &r)) == RS_OK)
			rs_exp_record_free(&r);
		assert_true(rc == RS_EEOF || rc == RS_EPARSE);
		if (rs_exp_check(e, NULL, 0) != RS_OK)
			detected++;
		assert_int_equal(rs_exp_reset(e), RS_OK);
		assert_consistent(e);
		rs_exp_close(e);
	}
	/* Damage was found in a good share of the rounds. */
	assert_true(detected > 30);
}

/* The first reopen after a reboot drops every record (its monotonic
 * timestamps and its lock belong to the earlier boot). */
static void
test_reboot(void **state)
{
	struct rs_exp *e;
	struct rs_exp_stats st;
	char boot[64], page[4096], *p;
	int fd;
	ssize_t n;

	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY);
	if (fd < 0)
		skip();
	n = read(fd, boot, 36);
	close(fd);
	assert_int_equal(n, 36);
	boot[36] = '\0';
	make_file();
	read_at(0, page, sizeof page);
	p = memmem(page, sizeof page, boot, 36);
	assert_non_null(p);
	p[0] = p[0] == '0' ? '1' : '0';
	write_at(p - page, p, 1);
	e = reopen();
	assert_int_equal(rs_exp_get(e, "ns/rs", &(struct rs_exp_record){ 0 }),
	    RS_ENOTFOUND);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.resets, 1);
	assert_consistent(e);
	rs_exp_close(e);
	/* Once: the boot id is now the current one. */
	e = reopen();
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.resets, 1);
	rs_exp_close(e);
}

/* ---- iteration and format ---- */

static void
test_next_and_json(void **state)
{
	const char *pods[] = { "ns/b\"q", "ns/a" };
	struct rs_exp *e = open_new(64, 64);
	struct rs_exp_record r;
	size_t cursor = 0;
	int seen = 0, i;
	char key[16], *line;

	for (i = 0; i < 20; i++) {
		snprintf(key, sizeof key, "ns/k%02d", i);
		assert_int_equal(rs_exp_expect_creations(e, key, i), RS_OK);
	}
	for (i = 0; i < 20; i += 2) {
		snprintf(key, sizeof key, "ns/k%02d", i);
		assert_int_equal(rs_exp_delete(e, key), RS_OK);
	}
	while (rs_exp_next(e, &cursor, &r) == RS_OK) {
		assert_int_equal(r.add % 2, 1);
		assert_int_equal(atoi(r.key + 4), r.add);
		seen++;
		rs_exp_record_free(&r);
	}
	assert_int_equal(seen, 10);
	assert_int_equal(rs_exp_next(e, &cursor, &r), RS_EEOF);

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

static void
test_threads(void **state)
{
	struct rs_exp *e = open_new(64, 512);
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
	assert_consistent(e);
	rs_exp_close(e);
}

/* ---- crash recovery ---- */

static uint64_t kill_at, writes;

/* Kills the process at its kill_at-th logged write, whatever the
 * transaction. */
static void
kill_hook(uint64_t n)
{
	if (++writes == kill_at)
		raise(SIGKILL);
}

/* Every record, timestamps included, as one string. */
static char *
snapshot(struct rs_exp *e)
{
	struct rs_exp_record r;
	size_t cursor = 0, i, len = 0;
	char *s = NULL;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	while (rs_exp_next(e, &cursor, &r) == RS_OK) {
		fprintf(f, "%s %lld %lld %lld [", r.key, (long long)r.add,
		    (long long)r.del, (long long)r.timestamp_ns);
		for (i = 0; i < r.npods; i++)
			fprintf(f, " %s", r.pods[i]);
		fprintf(f, " ]\n");
		rs_exp_record_free(&r);
	}
	fclose(f);
	return s;
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

static void
crash_base(void)
{
	const char *pods[] = { "ns/p1", "ns/p2", "ns/p3", "ns/p4", "ns/p5" };
	struct rs_exp *e;

	e = open_new(8, 16);
	assert_int_equal(rs_exp_expect_creations(e, "ns/c1", 2), RS_OK);
	assert_int_equal(rs_exp_expect_deletions(e, "ns/rs", pods, 5), RS_OK);
	assert_int_equal(rs_exp_delete(e, "ns/c1"), RS_OK);   /* a free key */
	assert_int_equal(rs_exp_deletion_observed(e, "ns/rs", "ns/p1"), RS_OK);
	rs_exp_close(e);
}

static rs_code
op_clear_rs(struct rs_exp *e)
{
	return rs_exp_expect_deletions(e, "ns/rs", NULL, 0);
}

static rs_code
op_clear_new(struct rs_exp *e)
{
	return rs_exp_expect_deletions(e, "ns/new", NULL, 0);
}

/* The records after op on the base state. */
static char *
state_after(op_fn op)
{
	struct rs_exp *e;
	char *s;

	crash_base();
	e = reopen();
	if (op)
		assert_int_equal(op(e), RS_OK);
	s = snapshot(e);
	rs_exp_close(e);
	unlink(path);
	return s;
}

/* Kills a child at write k of op, for k = 1, 2, ... until the op
 * completes. After every kill the parent must find the state exactly as
 * before the op, or (replacing a set: two commits) as after its first
 * commit, mid; consistent, with one more rollback counted. Returns how
 * many writes the op makes. */
static uint64_t
crash_op(op_fn op, op_fn midop)
{
	struct rs_exp *e;
	struct rs_exp_stats st;
	char *before, *mid, *after, *now;
	uint64_t k;
	int status, seen_before = 0, seen_mid = 0;
	pid_t pid;

	mid = midop ? state_after(midop) : NULL;
	after = state_after(op);
	before = state_after(NULL);
	for (k = 1;; k++) {
		unlink(path);
		crash_base();
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			kill_at = k;
			writes = 0;
			rs_exp_set_write_hook(kill_hook);
			e = reopen();
			_exit(op(e) == RS_OK ? 0 : 1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		e = reopen();
		assert_int_equal(rs_exp_stats(e, &st), RS_OK);
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
		assert_int_equal(st.rollbacks, 1);
		assert_int_equal(st.recoveries, 1);
		if (strcmp(now, before) == 0) {
			/* Never back to before once mid was reached. */
			assert_int_equal(seen_mid, 0);
			seen_before++;
		} else if (mid && strcmp(now, mid) == 0) {
			seen_mid++;
		} else {
			fail_msg("after a kill at write %llu:\n%sbefore:\n%s",
			    (unsigned long long)k, now, before);
		}
		free(now);
	}
	unlink(path);
	assert_true(seen_before > 0);
	assert_true(mid == NULL || seen_mid > 0);
	free(before);
	free(mid);
	free(after);
	return k - 1;
}

static void
test_crash(void **state)
{
	/* Each op is cut after each of its writes; the counts are what the
	 * ops write, and show that every step was exercised. */
	assert_true(crash_op(op_replace_set, op_clear_rs) >= 4 * 5 + 6 * 10);
	assert_true(crash_op(op_new_key_set, op_clear_new) >= 7 + 3 * 10);
	assert_true(crash_op(op_observe, NULL) >= 9);
	assert_true(crash_op(op_delete, NULL) >= 4 * 5 + 5);
	assert_true(crash_op(op_create, NULL) >= 7 + 3);
}

static void
stop_hook(uint64_t n)
{
	if (n == 3)
		raise(SIGSTOP);
}

/* A holder stopped with the lock: others time out rather than hang; once
 * it is killed they take over and undo its half-done write. */
static void
test_lock_timeout(void **state)
{
	struct rs_exp_opts o = { .lock_timeout_ms = 200 };
	struct rs_exp *e;
	struct rs_exp_stats st;
	pid_t pid;
	int status, ok;

	crash_base();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		e = reopen();
		rs_exp_set_write_hook(stop_hook);
		_exit(op_replace_set(e) == RS_OK ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));
	assert_int_equal(rs_exp_open(path, &o, &e), RS_OK);
	assert_int_equal(rs_exp_satisfied(e, "ns/rs", &ok, NULL),
	    RS_ETIMEOUT);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_record(e, "ns/rs", 0, 4, 4);
	assert_int_equal(rs_exp_stats(e, &st), RS_OK);
	assert_int_equal(st.recoveries, 1);
	assert_int_equal(st.rollbacks, 1);
	assert_consistent(e);
	rs_exp_close(e);
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
		cmocka_unit_test_setup(test_full, setup),
		cmocka_unit_test_setup(test_capacity_flags, setup),
		cmocka_unit_test_setup(test_reopen, setup),
		cmocka_unit_test_setup(test_mode, setup),
		cmocka_unit_test_setup(test_flock_left_to_tools, setup),
		cmocka_unit_test_setup(test_bad_header, setup),
		cmocka_unit_test_setup(test_bad_body, setup),
		cmocka_unit_test_setup(test_fuzz, setup),
		cmocka_unit_test_setup(test_reboot, setup),
		cmocka_unit_test_setup(test_next_and_json, setup),
		cmocka_unit_test_setup(test_threads, setup),
		cmocka_unit_test_setup(test_crash, setup),
		cmocka_unit_test_setup(test_lock_timeout, setup),
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
