/* TEMPORARY until libcommon/shard.c (branch shardwatch32) is merged: the
 * two functions of its interface (doc/sharding.md) rs-lease needs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code.h"
#include "shardsel_tmp.h"

uint64_t
rs_shard_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void
bound(unsigned i, unsigned nb, char *buf)
{
	unsigned __int128 v = ((unsigned __int128)i << 64) / nb;

	if (i >= nb)
		snprintf(buf, 24, "0x10000000000000000");
	else
		snprintf(buf, 24, "0x%016llx", (unsigned long long)v);
}

rs_code
rs_shard_selector(const uint64_t *held, unsigned nbuckets, char **out)
{
	size_t cap = 64 + (size_t)nbuckets * 96, len = 0;
	char *s = malloc(cap), lo[24], hi[24];
	unsigned i, j;

	if (s == NULL)
		return RS_ENOMEM;
	s[0] = '\0';
	for (i = 0; i < nbuckets; i = j) {
		if (!((held[i / 64] >> (i % 64)) & 1)) {
			j = i + 1;
			continue;
		}
		for (j = i; j < nbuckets && ((held[j / 64] >> (j % 64)) & 1); j++)
			;
		bound(i, nbuckets, lo);
		bound(j, nbuckets, hi);
		len += snprintf(s + len, cap - len,
		    "%sshardRange(object.metadata.namespace, '%s', '%s')",
		    len ? " || " : "", lo, hi);
	}
	*out = s;
	return RS_OK;
}
