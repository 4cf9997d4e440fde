#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "fence.h"
#include "log.h"
#include "shard.h"

#define BOOT_OFF 16
#define BOOT_LEN 48

struct rs_fence {
	unsigned char *map;
	size_t size;
	unsigned n;
	int other_boot;              /* a reader's file of another boot */
};

static size_t
fence_size(unsigned n)
{
	return RS_FENCE_HEADER + (size_t)n * 8;
}

static int64_t *
slot(const struct rs_fence *f, unsigned i)
{
	return (int64_t *)(void *)(f->map + RS_FENCE_HEADER) + i;
}

static rs_code
map_fd(int fd, size_t size, int prot, struct rs_fence **out)
{
	struct rs_fence *f = calloc(1, sizeof *f);
	void *m;

	if (f == NULL)
		return RS_ENOMEM;
	if ((m = mmap(NULL, size, prot, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		free(f);
		return RS_EIO;
	}
	f->map = m;
	f->size = size;
	*out = f;
	return RS_OK;
}

static void
write_header(struct rs_fence *f, unsigned n)
{
	uint32_t v[2] = { n, 0 };
	char boot[BOOT_LEN];

	rs_boot_id(boot, sizeof boot);
	memcpy(f->map + 8, v, sizeof v);
	memcpy(f->map + BOOT_OFF, boot, BOOT_LEN);
	for (unsigned i = 0; i < n; i++)
		__atomic_store_n(slot(f, i), 0, __ATOMIC_RELEASE);
	/* the magic last: a reader that sees it sees the rest */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(f->map, RS_FENCE_MAGIC, 8);
}

rs_code
rs_fence_create(const char *path, unsigned nbuckets, struct rs_fence **out)
{
	size_t size = fence_size(nbuckets);
	rs_code rc;
	int fd;

	*out = NULL;
	if (nbuckets < 1 || nbuckets > RS_SHARD_BUCKETS_MAX)
		return RS_EUSAGE;
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	    0600)) < 0) {
		rs_error("unable to open %s: %s", path, errno == ELOOP ?
		    "refusing a symbolic link" : strerror(errno));
		return errno == ELOOP ? RS_EREFUSED : RS_EIO;
	}
	/* an older file of another mode or size is made this one's */
	if (fchmod(fd, 0600) < 0 || ftruncate(fd, (off_t)size) < 0) {
		rs_error("unable to size %s: %s", path, strerror(errno));
		close(fd);
		return RS_EIO;
	}
	rc = map_fd(fd, size, PROT_READ | PROT_WRITE, out);
	close(fd);
	if (rc != RS_OK)
		return rc;
	(*out)->n = nbuckets;
	write_header(*out, nbuckets);
	return RS_OK;
}

static rs_code
check_header(struct rs_fence *f, unsigned nbuckets)
{
	uint32_t v[2];
	char boot[BOOT_LEN];

	if (memcmp(f->map, RS_FENCE_MAGIC, 8) != 0)
		return RS_ECONFIG;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	memcpy(v, f->map + 8, sizeof v);
	if (v[0] != nbuckets)
		return RS_ECONFIG;
	rs_boot_id(boot, sizeof boot);
	f->other_boot = memcmp(boot, f->map + BOOT_OFF, BOOT_LEN) != 0;
	f->n = nbuckets;
	return RS_OK;
}

rs_code
rs_fence_open(const char *path, unsigned nbuckets, struct rs_fence **out)
{
	size_t size = fence_size(nbuckets);
	struct stat st;
	rs_code rc;
	int fd;

	*out = NULL;
	if (nbuckets < 1 || nbuckets > RS_SHARD_BUCKETS_MAX)
		return RS_EUSAGE;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return errno == ENOENT ? RS_ENOTFOUND : RS_EIO;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return RS_EIO;
	}
	/* not the size of B slots: no fence file of this installation */
	if ((size_t)st.st_size != size) {
		close(fd);
		return RS_ECONFIG;
	}
	rc = map_fd(fd, size, PROT_READ, out);
	close(fd);
	if (rc != RS_OK)
		return rc;
	if ((rc = check_header(*out, nbuckets)) != RS_OK) {
		rs_fence_close(*out);
		*out = NULL;
	}
	return rc;
}

void
rs_fence_close(struct rs_fence *f)
{
	if (f == NULL)
		return;
	munmap(f->map, f->size);
	free(f);
}

unsigned
rs_fence_buckets(const struct rs_fence *f)
{
	return f->n;
}

void
rs_fence_set(struct rs_fence *f, unsigned i, int64_t deadline)
{
	if (i < f->n)
		__atomic_store_n(slot(f, i), deadline, __ATOMIC_RELEASE);
}

int64_t
rs_fence_get(const struct rs_fence *f, unsigned i)
{
	if (i >= f->n || f->other_boot)
		return 0;
	return __atomic_load_n(slot(f, i), __ATOMIC_ACQUIRE);
}

int
rs_fence_live(const struct rs_fence *f, unsigned i, int64_t now)
{
	return rs_fence_get(f, i) > now;
}
