/* fence-tool: writes a fence file (libcommon/fence.h) as rs-lease would,
 * for tests:
 *   fence-tool FILE B create            every slot 0 (nothing held)
 *   fence-tool FILE B set I MS          slot I: now + MS milliseconds of
 *                                       CLOCK_MONOTONIC (MS < 0: passed)
 *   fence-tool FILE B all MS            every slot so
 *   fence-tool FILE B get I             prints slot I minus now, in ms
 * set and all take the file as it is (rs_fence_create zeroes it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fence.h"
#include "log.h"

static void
usage(void)
{
	fputs("usage: fence-tool FILE B create|set I MS|all MS|get I\n",
	    stderr);
	exit(100);
}

/* The writer's map of an existing file: a reader's would not do, and
 * rs_fence_create would zero the slots set before. */
static struct rs_fence *
writable(const char *path, unsigned b)
{
	struct rs_fence *r, *w;
	int64_t *keep = calloc(b, sizeof *keep);
	rs_code rc;

	if (keep == NULL)
		exit(111);
	if ((rc = rs_fence_open(path, b, &r)) == RS_OK) {
		for (unsigned i = 0; i < b; i++)
			keep[i] = rs_fence_get(r, i);
		rs_fence_close(r);
	}
	if (rs_fence_create(path, b, &w) != RS_OK)
		rs_fatal(111, "unable to create %s", path);
	for (unsigned i = 0; i < b; i++)
		rs_fence_set(w, i, keep[i]);
	free(keep);
	return w;
}

int
main(int argc, char **argv)
{
	struct rs_fence *f = NULL;
	unsigned b;
	int64_t now = rs_mono_ns();

	rs_log_init(argv[0]);
	if (argc < 4)
		usage();
	b = (unsigned)atoi(argv[2]);
	if (strcmp(argv[3], "create") == 0 && argc == 4) {
		if (rs_fence_create(argv[1], b, &f) != RS_OK)
			rs_fatal(111, "unable to create %s", argv[1]);
	} else if (strcmp(argv[3], "set") == 0 && argc == 6) {
		f = writable(argv[1], b);
		rs_fence_set(f, (unsigned)atoi(argv[4]),
		    now + atoll(argv[5]) * 1000000LL);
	} else if (strcmp(argv[3], "all") == 0 && argc == 5) {
		f = writable(argv[1], b);
		for (unsigned i = 0; i < b; i++)
			rs_fence_set(f, i, now + atoll(argv[4]) * 1000000LL);
	} else if (strcmp(argv[3], "get") == 0 && argc == 5) {
		if (rs_fence_open(argv[1], b, &f) != RS_OK)
			rs_fatal(111, "unable to open %s", argv[1]);
		printf("%lld\n", (long long)((rs_fence_get(f,
		    (unsigned)atoi(argv[4])) - now) / 1000000LL));
	} else {
		usage();
	}
	rs_fence_close(f);
	return 0;
}
