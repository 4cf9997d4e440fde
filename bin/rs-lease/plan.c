/* plan.c: the arithmetic of shard mode, without I/O, so that it can be
 * tested alone. */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "shardmode.h"

unsigned
set_count(const uint64_t *s)
{
	unsigned n = 0, w;

	for (w = 0; w < SHARD_WORDS; w++)
		n += (unsigned)__builtin_popcountll(s[w]);
	return n;
}

unsigned
plan_share(unsigned nbuckets, unsigned nmembers)
{
	if (nmembers == 0)
		nmembers = 1;
	return (nbuckets + nmembers - 1) / nmembers;
}

unsigned
plan_take(const uint64_t *free, unsigned nbuckets, unsigned offset,
    unsigned want, uint64_t *take)
{
	unsigned got = 0, k, i;

	memset(take, 0, sizeof(shard_set));
	for (k = 0; k < nbuckets && got < want; k++) {
		i = (offset + k) % nbuckets;
		if (set_has(free, i)) {
			set_put(take, i, 1);
			got++;
		}
	}
	return got;
}

void
plan_drop(const uint64_t *held, unsigned nbuckets, unsigned n,
    uint64_t *drop)
{
	unsigned i;

	memset(drop, 0, sizeof(shard_set));
	for (i = nbuckets; i-- > 0 && n > 0;)
		if (set_has(held, i)) {
			set_put(drop, i, 1);
			n--;
		}
}

int
plan_name(const char *group, const char *name, unsigned *idx)
{
	size_t g = strlen(group);
	const char *p;
	char *end;
	unsigned long v;

	if (strncmp(name, group, g) != 0 || name[g] != '-' ||
	    (name[g + 1] != 'b' && name[g + 1] != 'm') || name[g + 2] != '-')
		return 0;
	p = name + g + 3;
	if (name[g + 1] == 'm')
		return *p ? 'm' : 0;
	if (strlen(p) != 3 || p[0] < '0' || p[0] > '9')
		return 0;
	v = strtoul(p, &end, 10);
	if (*end != '\0' || v >= SHARD_MAX)
		return 0;
	*idx = (unsigned)v;
	return 'b';
}

int64_t
plan_stale_ns(long duration_s)
{
	int64_t per = (int64_t)STALE_DURATIONS * 1000000000LL;

	if (duration_s <= 0)
		duration_s = 1;
	if (duration_s > INT64_MAX / per)
		return INT64_MAX;
	return per * duration_s;
}

unsigned
plan_lease_b(const cJSON *lease)
{
	const char *v = rs_json_str(lease, "metadata", "labels", SHARD_B_LABEL,
	    (char *)NULL);
	char *end;
	unsigned long b;

	if (v == NULL || *v < '1' || *v > '9')
		return 0;
	b = strtoul(v, &end, 10);
	return *end == '\0' && b <= SHARD_MAX ? (unsigned)b : 0;
}
