/* shard.h: the shard key (doc/sharding.md).
 *
 * An object belongs to the shard of its namespace's hash: FNV-1a 64 of the
 * namespace's bytes, no seed, as apimachinery's sharding.HashField and so
 * the API server's ShardedListAndWatch filter. The hash space is cut into
 * nbuckets buckets (1 to RS_SHARD_BUCKETS_MAX): bucket i covers
 * [floor(i * 2^64 / nbuckets), floor((i+1) * 2^64 / nbuckets)), the last
 * one up to 2^64.
 *
 * A set of buckets goes to the server as a shard selector, neighbours
 * merged into one range:
 *   shardRange(object.metadata.namespace, '0x0000000000000000', '0x2000000000000000') || ...
 * in the form apiserver's sharding.Parse takes: each bound 0x and exactly
 * 16 lowercase hex digits, the top written '0x10000000000000000'; the
 * start inclusive, the end exclusive. */
#ifndef RS_SHARD_H
#define RS_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "code.h"

#define RS_SHARD_BUCKETS_MAX 256
/* The field every selector here is on. */
#define RS_SHARD_FIELD "object.metadata.namespace"

uint64_t rs_shard_hash(const char *s, size_t n);
/* The bucket (0 to nbuckets-1) that holds hash. */
unsigned rs_shard_bucket(uint64_t hash, unsigned nbuckets);
/* The first hash of bucket i; i == nbuckets is the top, which does not
 * fit: 0 is returned for it, and callers write the top bound apart. */
uint64_t rs_shard_bucket_start(unsigned i, unsigned nbuckets);

/* held: a bitmap of nbuckets bits (bit i of held[i / 64]). The selector
 * of those buckets into *out (malloc'd, to free). RS_EUSAGE for no bucket
 * held (no selector selects nothing: the caller must not list at all) or
 * nbuckets out of range. */
rs_code rs_shard_selector(const uint64_t *held, unsigned nbuckets,
    char **out);

/* A selector's ranges, each [lo, last] with last inclusive (the top,
 * 2^64 exclusive, is last 0xffffffffffffffff). */
struct rs_shard_range {
	uint64_t lo, last;
};
struct rs_shard_ranges {
	struct rs_shard_range *r;
	size_t n;
};

/* A selector as the server's parser takes it: shardRange() terms joined
 * by ||, with blanks, parentheses and either quote, its bounds checked as
 * the server checks them (0x, 16 lowercase hex digits or the top, start
 * below end); the field must be object.metadata.namespace, the only key a
 * client here can check. RS_EPARSE with a reason in why (when not NULL);
 * on RS_OK, free out with rs_shard_ranges_free. */
rs_code rs_shard_parse_why(const char *sel, struct rs_shard_ranges *out,
    char *why, size_t whylen);
rs_code rs_shard_parse(const char *sel, struct rs_shard_ranges *out);
void rs_shard_ranges_free(struct rs_shard_ranges *r);

/* Whether the ranges together cover every hash, 0 to 2^64 - 1, whatever
 * their order and overlaps: such a selector selects every namespace, and
 * a server that filters by it spends its CPU for nothing. */
int rs_shard_ranges_whole(const struct rs_shard_ranges *r);

/* Whether the namespace ns[0..n) hashes into one of the ranges. */
int rs_shard_match(const struct rs_shard_ranges *r, const char *ns,
    size_t n);
int rs_shard_match_hash(const struct rs_shard_ranges *r, uint64_t hash);

#endif
