/* TEMPORARY: see shardsel_tmp.c */
#ifndef RS_SHARDSEL_TMP_H
#define RS_SHARDSEL_TMP_H
#include <stddef.h>
#include <stdint.h>
#include "code.h"
uint64_t rs_shard_hash(const char *s, size_t n);
rs_code rs_shard_selector(const uint64_t *held, unsigned nbuckets, char **out);
#endif
