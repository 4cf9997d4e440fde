/* fence.c: --fence FILE --shards B (doc/sharding.md). Before every write
 * it sends, rs-apply reads the fence slot of the bucket of the write's
 * namespace: a write whose slot has passed (the instance may no longer
 * hold that bucket's Lease) is not sent and fails as a write does. A key
 * whose round met one sends nothing more that round: its bucket's count
 * of refusals moved since the round began. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "clock.h"
#include "fence.h"
#include "log.h"
#include "shard.h"

static struct rs_fence *fence;
static const char *fence_path;
static unsigned nbuckets;
static unsigned long refusals[RS_SHARD_BUCKETS_MAX];

void
fence_init(const char *path, unsigned b)
{
	rs_code rc;

	if (path == NULL)
		return;
	if ((rc = rs_fence_open(path, b, &fence)) == RS_ECONFIG)
		rs_fatal(100, "unable to use the fence file %s: not a fence "
		    "file of %u buckets (--shards)", path, b);
	if (rc == RS_ENOTFOUND)
		rs_fatal(111, "unable to open the fence file %s: it does not "
		    "exist (yet)", path);
	if (rc != RS_OK)
		rs_fatal(111, "unable to open the fence file %s: %s", path,
		    rs_strerror(rc));
	fence_path = path;
	nbuckets = b;
	rs_info(1, "fenced by %s: %u buckets", path, b);
}

int
fence_on(void)
{
	return fence != NULL;
}

/* The namespace of a key ("ns/name") or of a path
 * ("/api/v1/namespaces/ns/..."): its bucket. */
static unsigned
bucket_of(const char *ns, size_t n)
{
	return rs_shard_bucket(rs_shard_hash(ns, n), nbuckets);
}

static unsigned
key_bucket(const char *key)
{
	const char *slash = strchr(key, '/');

	return bucket_of(key, slash ? (size_t)(slash - key) : 0);
}

static unsigned
path_bucket(const char *path)
{
	const char *ns = strstr(path, "/namespaces/"), *end;

	if (ns == NULL)
		return bucket_of("", 0);
	ns += strlen("/namespaces/");
	end = ns + strcspn(ns, "/?");
	return bucket_of(ns, (size_t)(end - ns));
}

/* Whether bucket b may be written now; a refusal is counted, and said. */
static int
allows(unsigned b, char *why, size_t len)
{
	if (rs_fence_live(fence, b, rs_mono_ns()))
		return 1;
	refusals[b]++;
	snprintf(why, len, "not sent: the Lease of bucket %u is not held "
	    "(its fence slot in %s has passed)", b, fence_path);
	return 0;
}

/* At -v 5 a write let through is said, with its time to spare: the log's
 * times then show that nothing left after a slot passed, which the times
 * of the answers cannot (tests/shell/sharding.sh). */
int
fence_gate(void *arg, const char *method, const char *path, char *why,
    size_t len)
{
	unsigned b;

	(void)arg;
	if (fence == NULL || strcmp(method, "GET") == 0)
		return 1;
	b = path_bucket(path);
	if (!allows(b, why, len))
		return 0;
	if (RS_V(5))
		rs_info(5, "fence: %s %s: bucket %u held, %.1f ms to spare",
		    method, path, b,
		    (rs_fence_get(fence, b) - rs_mono_ns()) / 1e6);
	return 1;
}

void
fence_round_begin(struct key *k)
{
	if (fence != NULL)
		k->fence_mark = refusals[key_bucket(k->name)];
}

int
fence_key_stopped(struct key *k)
{
	char why[512];
	unsigned b;

	if (fence == NULL)
		return 0;
	if (k->fenced)
		return 1;
	b = key_bucket(k->name);
	if (refusals[b] == k->fence_mark && allows(b, why, sizeof why))
		return 0;
	k->fenced = 1;
	rs_info(2, "%s: bucket %u's Lease is not held (fence): nothing more "
	    "is sent this round", k->name, b);
	return 1;
}
