/* shard.c: the shard families, from the shard file rs-lease --shards
 * writes for its prog (doc/sharding.md): the buckets this instance holds
 * and how many times that set changed. No file, no families: the instance
 * is not sharded (or rs-lease has not joined its group yet). The keys
 * dropped and gained come from rs-sync's stats file (rs_shard_keys_*). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "prom.h"
#include "rsm.h"

static cJSON *
load(const char *path)
{
	cJSON *o;
	rs_code rc = rs_json_load(path, &o);

	if (rc == RS_ENOTFOUND)
		return NULL;
	if (rc != RS_OK) {
		rs_info(1, "%s: not a shard file: no shard figures", path);
		return NULL;
	}
	return o;
}

void
rsm_shard(FILE *f, const char *path)
{
	cJSON *o = load(path);
	const cJSON *held, *v;
	struct rs_prom_label l = { "bucket", NULL };
	long long nb, gen;
	char idx[16];

	if (o == NULL)
		return;
	nb = rs_json_int(o, 0, "shards", (char *)NULL);
	gen = rs_json_int(o, 0, "generation", (char *)NULL);
	held = rs_json_get(o, "held", (char *)NULL);
	if (nb < 1 || gen < 1 || !cJSON_IsArray(held)) {
		rs_info(1, "%s: not a shard file: no shard figures", path);
		cJSON_Delete(o);
		return;
	}
	rs_prom_head(f, "rs_shard_buckets", "gauge",
	    "Buckets of the shard group (rs-lease --shards).");
	rs_prom_sample(f, "rs_shard_buckets", NULL, NULL, 0, (double)nb);
	rs_prom_head(f, "rs_shard_buckets_held", "gauge",
	    "Buckets this instance holds, its pipeline running on them.");
	rs_prom_sample(f, "rs_shard_buckets_held", NULL, NULL, 0,
	    cJSON_GetArraySize(held));
	rs_prom_head(f, "rs_shard_bucket_held", "gauge",
	    "1 for each bucket this instance holds, by index.");
	cJSON_ArrayForEach(v, held) {
		if (!cJSON_IsNumber(v))
			continue;
		snprintf(idx, sizeof idx, "%d", v->valueint);
		l.value = idx;
		rs_prom_sample(f, "rs_shard_bucket_held", NULL, &l, 1, 1);
	}
	rs_prom_head(f, "rs_shard_rebalances_total", "counter",
	    "Times the held set changed since rs-lease started, from the "
	    "empty set it starts with.");
	rs_prom_sample(f, "rs_shard_rebalances_total", NULL, NULL, 0,
	    (double)(gen - 1));
	cJSON_Delete(o);
}
