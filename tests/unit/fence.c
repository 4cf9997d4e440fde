/* The fence file: its exact layout (doc/sharding.md, fence.h), as a
 * writer in another language would have to produce it, and what a reader
 * makes of it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "clock.h"
#include "fence.h"

static char dir[64], path[128];

static int
setup(void **state)
{
	snprintf(dir, sizeof dir, "/tmp/rs-fence-unit-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/fence", dir);
	return 0;
}

static int
teardown(void **state)
{
	char p[160];

	unlink(path);
	snprintf(p, sizeof p, "%s/link", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}

static void
read_file(unsigned char *buf, size_t len, size_t *got)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len);
	assert_true(n >= 0);
	*got = (size_t)n;
	close(fd);
}

static void
layout(void **state)
{
	struct rs_fence *w;
	unsigned char buf[4096];
	char boot[48];
	struct stat st;
	uint32_t b;
	int64_t v;
	size_t n;

	assert_int_equal(rs_fence_create(path, 32, &w), RS_OK);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 64 + 8 * 32);
	rs_fence_set(w, 0, 0x0102030405060708LL);
	rs_fence_set(w, 31, -1);
	rs_fence_set(w, 32, 77);        /* no such slot: nothing written */
	read_file(buf, sizeof buf, &n);
	assert_int_equal(n, 64 + 8 * 32);
	assert_memory_equal(buf, "rsfence1", 8);
	memcpy(&b, buf + 8, 4);
	assert_int_equal(b, 32);
	memcpy(&b, buf + 12, 4);
	assert_int_equal(b, 0);
	rs_boot_id(boot, sizeof boot);
	assert_int_equal(strlen(boot), 36);
	assert_memory_equal(buf + 16, boot, 48);
	memcpy(&v, buf + 64, 8);
	assert_true(v == 0x0102030405060708LL);
	memcpy(&v, buf + 64 + 8, 8);
	assert_true(v == 0);
	memcpy(&v, buf + 64 + 8 * 31, 8);
	assert_true(v == -1);
	rs_fence_close(w);
}

/* What the writer sets, a reader of the same file sees at once. */
static void
reader_follows(void **state)
{
	struct rs_fence *w, *r;
	int64_t now = rs_mono_ns();

	assert_int_equal(rs_fence_create(path, 4, &w), RS_OK);
	assert_int_equal(rs_fence_open(path, 4, &r), RS_OK);
	assert_int_equal(rs_fence_buckets(r), 4);
	for (unsigned i = 0; i < 4; i++)
		assert_false(rs_fence_live(r, i, now));
	rs_fence_set(w, 2, now + 10000000000LL);
	assert_true(rs_fence_get(r, 2) == now + 10000000000LL);
	assert_true(rs_fence_live(r, 2, now));
	assert_false(rs_fence_live(r, 2, now + 10000000000LL));
	assert_false(rs_fence_live(r, 1, now));
	rs_fence_set(w, 2, 0);
	assert_false(rs_fence_live(r, 2, now));
	rs_fence_close(r);
	rs_fence_close(w);
}

/* A writer that starts holds nothing: what an earlier one left is 0. */
static void
create_zeroes(void **state)
{
	struct rs_fence *w, *r;

	assert_int_equal(rs_fence_create(path, 4, &w), RS_OK);
	rs_fence_set(w, 1, rs_mono_ns() + 60000000000LL);
	rs_fence_close(w);
	assert_int_equal(rs_fence_create(path, 4, &w), RS_OK);
	assert_int_equal(rs_fence_open(path, 4, &r), RS_OK);
	assert_true(rs_fence_get(r, 1) == 0);
	rs_fence_close(r);
	rs_fence_close(w);
}

static void
refused(void **state)
{
	struct rs_fence *w, *r = (struct rs_fence *)1;
	char link[160];
	int fd;

	unlink(path);
	assert_int_equal(rs_fence_open(path, 4, &r), RS_ENOTFOUND);
	assert_null(r);
	assert_int_equal(rs_fence_create(path, 0, &w), RS_EUSAGE);
	assert_int_equal(rs_fence_create(path, 257, &w), RS_EUSAGE);
	/* another B */
	assert_int_equal(rs_fence_create(path, 4, &w), RS_OK);
	assert_int_equal(rs_fence_open(path, 8, &r), RS_ECONFIG);
	rs_fence_close(w);
	/* the size of 4 slots, not a fence file */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 64 + 32), 0);
	close(fd);
	assert_int_equal(rs_fence_open(path, 4, &r), RS_ECONFIG);
	/* a symbolic link is no fence file of ours */
	snprintf(link, sizeof link, "%s/link", dir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(rs_fence_create(link, 4, &w), RS_EREFUSED);
}

/* Slots of another boot's clock mean nothing here: all passed. */
static void
other_boot(void **state)
{
	struct rs_fence *w, *r;
	int fd;

	assert_int_equal(rs_fence_create(path, 2, &w), RS_OK);
	rs_fence_set(w, 0, INT64_MAX);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "x", 1, 16), 1);
	close(fd);
	assert_int_equal(rs_fence_open(path, 2, &r), RS_OK);
	assert_true(rs_fence_get(r, 0) == 0);
	assert_false(rs_fence_live(r, 0, rs_mono_ns()));
	rs_fence_close(r);
	rs_fence_close(w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(layout, setup, teardown),
		cmocka_unit_test_setup_teardown(reader_follows, setup, teardown),
		cmocka_unit_test_setup_teardown(create_zeroes, setup, teardown),
		cmocka_unit_test_setup_teardown(refused, setup, teardown),
		cmocka_unit_test_setup_teardown(other_boot, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
