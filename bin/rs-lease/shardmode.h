/* shardmode.h: shard mode: buckets of namespaces held as Leases of a group
 * (doc/sharding.md). One round a retry period: LIST the group, renew what
 * is held and this instance's member Lease, count the live members, take
 * or give up buckets towards the fair share, restart prog on a change. */
#ifndef RS_LEASE_SHARDMODE_H
#define RS_LEASE_SHARDMODE_H

#include <signal.h>
#include <stdint.h>

#include "elect.h"
#include "kube.h"
#include "fence.h"
#include "lease.h"
#include "shard.h"

#define SHARD_MAX RS_SHARD_BUCKETS_MAX
#define SHARD_WORDS (SHARD_MAX / 64)
#define SHARD_LABEL "rs-controller.io/shard-group"
/* B of the instance that created a Lease: buckets of another B cover
 * other namespaces under the same names (doc/sharding.md, "Changing B") */
#define SHARD_B_LABEL "rs-controller.io/shard-buckets"
#define STALE_DURATIONS 10   /* a member Lease unchanged this many lease
                                durations is deleted */

struct shard_opts {
	struct elect_opts eo;     /* ns, name (the group), identity, timing */
	unsigned nbuckets;        /* 0: not in shard mode */
	const char *shard_file;   /* may be NULL */
	const char *fence;        /* may be NULL */
};

typedef uint64_t shard_set[SHARD_WORDS];

static inline int
set_has(const uint64_t *s, unsigned i)
{
	return (s[i / 64] >> (i % 64)) & 1;
}

static inline void
set_put(uint64_t *s, unsigned i, int on)
{
	if (on)
		s[i / 64] |= (uint64_t)1 << (i % 64);
	else
		s[i / 64] &= ~((uint64_t)1 << (i % 64));
}

unsigned set_count(const uint64_t *s);

/* plan.c: pure, no I/O. */
/* ceil(B / N): what each of n live members should hold. */
unsigned plan_share(unsigned nbuckets, unsigned nmembers);
/* Into *take, up to want buckets of *free, scanning from offset and
 * wrapping: members start at different places, so that they do not all
 * reach for the same bucket. Returns how many. */
unsigned plan_take(const uint64_t *free, unsigned nbuckets, unsigned offset,
    unsigned want, uint64_t *take);
/* Into *drop, the n highest buckets of *held. */
void plan_drop(const uint64_t *held, unsigned nbuckets, unsigned n,
    uint64_t *drop);
/* Parses "NAME-b-NNN" (a bucket: 'b', *idx) or "NAME-m-..." (a member:
 * 'm'); 0 for another name. */
int plan_name(const char *group, const char *name, unsigned *idx);
/* The B a Lease of the group was created for, from its label; 0 when the
 * label is absent or no number of buckets. */
unsigned plan_lease_b(const cJSON *lease);
/* How long a member Lease of lease duration duration_s (0 or less: 1 s)
 * may stay unchanged before it is deleted: STALE_DURATIONS of them, in
 * ns, capped at INT64_MAX (the server takes up to 2^31-1 s). */
int64_t plan_stale_ns(long duration_s);

/* shardout.c: what prog reads. */
struct shard_out {
	struct rs_fence *fence;   /* or NULL */
	unsigned nbuckets;
	const char *path;         /* the shard file, or NULL */
};
rs_code shard_out_open(struct shard_out *o, const struct shard_opts *so);
/* Slot i: until when (monotonic ns) prog may write for bucket i; 0 when
 * it may not. */
void shard_out_fence(struct shard_out *o, unsigned i, int64_t until);
/* Writes the shard file for the set held: F.tmp, then renamed. */
rs_code shard_out_file(const struct shard_out *o, const uint64_t *held,
    unsigned long generation);

/* shard.c */
int shard_run(struct rs_kube *k, const struct shard_opts *o, char **argv,
    int sigfd, const sigset_t *mask);
/* shardlist.c: prints the group's buckets and members; exit code. */
int shard_list(struct rs_kube *k, const struct shard_opts *o);

#endif
