/* nsbucket: the bucket of each namespace name, as rs-lease --shards B and
 * the API server's shard selector place it (libcommon/shard.h), for
 * bench/shard/run: it picks names that spread over the buckets and, at a
 * failover, a namespace of each bucket the killed instance held.
 *
 *   nsbucket B < NAMES
 *
 * Reads one namespace name a line, prints "NAME BUCKET" a line. Exit 0,
 * 100 on usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard.h"

int
main(int argc, char **argv)
{
	char line[256];
	unsigned long b;
	char *end;
	size_t n;

	if (argc != 2) {
		fputs("usage: nsbucket B < NAMES\n", stderr);
		return 100;
	}
	b = strtoul(argv[1], &end, 10);
	if (*end != '\0' || b < 1 || b > RS_SHARD_BUCKETS_MAX) {
		fprintf(stderr, "nsbucket: fatal: B is 1 to %d, not %s\n",
		    RS_SHARD_BUCKETS_MAX, argv[1]);
		return 100;
	}
	while (fgets(line, sizeof line, stdin) != NULL) {
		n = strcspn(line, "\n");
		line[n] = '\0';
		printf("%s %u\n", line,
		    rs_shard_bucket(rs_shard_hash(line, n), (unsigned)b));
	}
	return 0;
}
