/* shardcheck.c: the client-side shard check and the one line that says who
 * filters (shardcheck.h). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "log.h"
#include "reflector.h"
#include "shardcheck.h"

/* Said once for the process: the gate is the server's, not a resource's. */
static atomic_int told;

int
shard_keep(struct reflector *r, const struct objtext *t)
{
	char ns[256];

	if (r->o->shard == NULL)
		return 1;
	/* a cluster-scoped object has no namespace: the server hashes "" */
	ns[0] = '\0';
	if (t->ns.off != t->ns.end && rs_jscan_unescape(t->buf, t->ns, ns,
	    sizeof ns, NULL) != RS_OK)
		ns[0] = '\0';
	if (rs_shard_match(r->o->shard, ns, strlen(ns)))
		return 1;
	r->ls.dropped++;
	return 0;
}

void
shard_echo(struct reflector *r, int echoed)
{
	if (r->ls.echo == 0)
		r->ls.echo = echoed ? 1 : -1;
}

/* A LIST of one item, with the selector: does its answer echo it? */
static void
probe(struct reflector *r)
{
	struct rs_kresp resp;
	struct rs_jspan doc, v;
	char *url;

	if ((url = reflector_url(r, "limit=1&resourceVersion=0")) == NULL)
		return;
	memset(&resp, 0, sizeof resp);
	rs_info(4, "GET %s", url);
	if (rs_kube_do(r->o->kube, "GET", url, NULL, NULL, 0, &resp) ==
	    RS_OK && resp.body != NULL &&
	    rs_jscan_doc(resp.body, resp.len, &doc, NULL) == RS_OK)
		shard_echo(r, rs_jscan_get(resp.body, doc, &v, "metadata",
		    "shardInfo", "selector", NULL) == RS_OK);
	else
		rs_info(1, "unable to ask whether the server filters %s by "
		    "the shard selector: %s", r->res.plural,
		    resp.status.message[0] ? resp.status.message : "no answer");
	rs_kresp_free(&resp);
	free(url);
}

void
shard_tell(struct reflector *r)
{
	/* none sent (a selector of every namespace): nothing to ask */
	if (r->o->shard_q == NULL || atomic_load(&told))
		return;
	if (r->ls.echo == 0)
		probe(r);
	if (r->ls.echo == 0 || atomic_exchange(&told, 1))
		return;
	if (r->ls.echo > 0)
		rs_info(1, "the server filters by the shard selector (it echoed "
		    "it in the shardInfo of a %s list)", r->res.plural);
	else
		rs_info(1, "the server does not filter by the shard selector "
		    "(no shardInfo in a %s list: ShardedListAndWatch off?): "
		    "objects out of the shard are dropped here", r->res.plural);
}
