/* shardkeys.c: in shard mode (rs-lease --shards sets RS_SHARD_FILE), the
 * controllers' keys this instance dropped and gained when its held set
 * changed (doc/sharding.md). A change restarts the pipeline, so no one
 * process sees both sides: each run keeps, in $RS_STATE_DIR/shardkeys.json,
 * the buckets it held and how many keys of its cache fell in each, and the
 * next run, once synced, compares: the keys of buckets no longer held were
 * dropped, those of buckets newly held (all of them at an instance's
 * first start) were gained. The totals live in the file, so that they
 * outlast the restarts they count. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "shard.h"
#include "stagestats.h"
#include "statedir.h"
#include "sync.h"


struct counts {
	unsigned nb;                   /* 0: none */
	unsigned char held[RS_SHARD_BUCKETS_MAX];
	unsigned long keys[RS_SHARD_BUCKETS_MAX];
	unsigned long dropped, gained;
};

static struct {
	int on;                        /* RS_SHARD_FILE read */
	int compared;                  /* the first synced run done */
	struct counts cur, written;
	char *path;
} sk;

static cJSON *
read_json(const char *path)
{
	cJSON *o;

	return rs_json_load(path, &o) == RS_OK ? o : NULL;
}

/* The "held" array of o into c->held; 0 when it is not one of buckets
 * below c->nb. */
static int
held_of(const cJSON *o, struct counts *c)
{
	const cJSON *h = rs_json_get(o, "held", (char *)NULL), *v;

	if (!cJSON_IsArray(h))
		return 0;
	cJSON_ArrayForEach(v, h) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
		    v->valuedouble >= c->nb)
			return 0;
		c->held[(unsigned)v->valuedouble] = 1;
	}
	return 1;
}

/* The previous run's file, when it is of the same number of buckets. */
static int
load_previous(struct counts *p)
{
	cJSON *o = read_json(sk.path);
	const cJSON *k, *v;
	unsigned i = 0;
	int ok;

	memset(p, 0, sizeof *p);
	if (o == NULL)
		return 0;
	p->nb = (unsigned)rs_json_int(o, 0, "shards", (char *)NULL);
	k = rs_json_get(o, "keys", (char *)NULL);
	ok = p->nb == sk.cur.nb && held_of(o, p) && cJSON_IsArray(k) &&
	    cJSON_GetArraySize(k) == (int)p->nb;
	cJSON_ArrayForEach(v, k)
		if (ok && i < p->nb)
			p->keys[i++] = (unsigned long)rs_json_ll(v->valuedouble, 0);
	p->dropped = (unsigned long)rs_json_int(o, 0, "dropped", (char *)NULL);
	p->gained = (unsigned long)rs_json_int(o, 0, "gained", (char *)NULL);
	cJSON_Delete(o);
	if (!ok)
		rs_warn("%s is not of this shard group's %u buckets: counting "
		    "from none held", sk.path, sk.cur.nb);
	return ok;
}

void
shardkeys_open(void)
{
	const char *f = getenv("RS_SHARD_FILE");
	cJSON *o;

	if (f == NULL || *f == '\0')
		return;
	if ((o = read_json(f)) == NULL) {
		rs_warn("unable to read the shard file %s: no shard figures", f);
		return;
	}
	sk.cur.nb = (unsigned)rs_json_int(o, 0, "shards", (char *)NULL);
	if (sk.cur.nb == 0 || sk.cur.nb > RS_SHARD_BUCKETS_MAX ||
	    !held_of(o, &sk.cur) ||
	    (sk.path = rs_state_path("shardkeys.json")) == NULL) {
		rs_warn("the shard file %s is not one rs-lease wrote: no shard "
		    "figures", f);
		cJSON_Delete(o);
		return;
	}
	cJSON_Delete(o);
	sk.on = 1;
	rs_stagestats_declare("rs_shard_keys", RS_STAT_GAUGE,
	    "Keys of controllers in the held buckets, in rs-sync's cache.",
	    NULL, 0);
	rs_stagestats_declare("rs_shard_keys_dropped_total", RS_STAT_COUNTER,
	    "Keys of buckets this instance gave up or lost, as its pipeline "
	    "held them before the change.", NULL, 0);
	rs_stagestats_declare("rs_shard_keys_gained_total", RS_STAT_COUNTER,
	    "Keys of buckets this instance took, as its pipeline found them "
	    "once synced after the change.", NULL, 0);
}

static void
count_keys(const struct sync *s, struct counts *c)
{
	const char *key;
	void *v;
	size_t i = 0;

	memset(c->keys, 0, sizeof c->keys);
	while (rs_strmap_next(&s->cache.ctrls, &i, &key, &v)) {
		const struct ctrl *r = v;

		c->keys[rs_shard_bucket(rs_shard_hash(r->ns, strlen(r->ns)),
		    c->nb)]++;
	}
}

static int
save(const struct counts *c)
{
	char tmp[4096];
	unsigned i;
	FILE *f;
	int ok, first = 1;

	snprintf(tmp, sizeof tmp, "%s.tmp", sk.path);
	if ((f = fopen(tmp, "we")) == NULL)
		return 0;
	fchmod(fileno(f), 0600);
	fprintf(f, "{\"shards\":%u,\"held\":[", c->nb);
	for (i = 0; i < c->nb; i++)
		if (c->held[i]) {
			fprintf(f, "%s%u", first ? "" : ",", i);
			first = 0;
		}
	fprintf(f, "],\"keys\":[");
	for (i = 0; i < c->nb; i++)
		fprintf(f, "%s%lu", i ? "," : "", c->keys[i]);
	fprintf(f, "],\"dropped\":%lu,\"gained\":%lu}\n", c->dropped,
	    c->gained);
	ok = fflush(f) == 0 && !ferror(f);
	ok = fclose(f) == 0 && ok;
	return ok && rename(tmp, sk.path) == 0;
}

static int
same(const struct counts *a, const struct counts *b)
{
	return a->nb == b->nb && a->dropped == b->dropped &&
	    a->gained == b->gained &&
	    memcmp(a->held, b->held, sizeof a->held) == 0 &&
	    memcmp(a->keys, b->keys, sizeof a->keys) == 0;
}

/* Once synced: the first time, the comparison with the previous run; then
 * the file, when its figures changed; and the figures. */
void
shardkeys_publish(const struct sync *s)
{
	struct counts p;
	unsigned i;
	unsigned long total = 0;

	if (!sk.on || !s->synced_ctrls || !s->synced_pods)
		return;
	count_keys(s, &sk.cur);
	if (!sk.compared) {
		sk.compared = 1;
		load_previous(&p);
		sk.cur.dropped = p.dropped;
		sk.cur.gained = p.gained;
		for (i = 0; i < sk.cur.nb; i++) {
			if (p.held[i] && !sk.cur.held[i])
				sk.cur.dropped += p.keys[i];
			else if (!p.held[i] && sk.cur.held[i])
				sk.cur.gained += sk.cur.keys[i];
		}
		rs_info(1, "shard: %lu keys dropped, %lu gained in all",
		    sk.cur.dropped, sk.cur.gained);
	}
	if (!same(&sk.cur, &sk.written)) {
		if (save(&sk.cur))
			sk.written = sk.cur;
		else
			rs_warn("unable to write %s: %s", sk.path,
			    strerror(errno));
	}
	for (i = 0; i < sk.cur.nb; i++)
		total += sk.cur.keys[i];
	rs_stagestats_set("rs_shard_keys", NULL, (double)total);
	rs_stagestats_set("rs_shard_keys_dropped_total", NULL,
	    (double)sk.cur.dropped);
	rs_stagestats_set("rs_shard_keys_gained_total", NULL,
	    (double)sk.cur.gained);
}
