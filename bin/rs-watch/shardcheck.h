/* shardcheck.h: rs-watch's part of sharding (doc/sharding.md): the client-side
 * check of --shard-selector, and saying once whether the server filters.
 *
 * The server filters only with the ShardedListAndWatch gate; without it the
 * shardSelector parameter is ignored and everything comes. Every object is
 * checked here either way, and one out of the shard is dropped as if it had
 * never been there (never printed, so never DELETED by a relist). A LIST
 * answer of a server that filtered echoes the selector in
 * metadata.shardInfo; a streaming list says nothing (its closing bookmark
 * carries only k8s.io/initial-events-end, apiserver v0.36.3), so after one
 * a LIST of one item asks, once. A selector of every namespace is neither
 * sent nor checked (main.c says so), every object would pass; nobody is
 * asked. */
#ifndef RS_WATCH_SHARDCHECK_H
#define RS_WATCH_SHARDCHECK_H

#include "event.h"

struct reflector;

/* Whether t, whose identity was read, is in the shard (always without
 * --shard-selector); one that is not is counted in the list in progress. */
int shard_keep(struct reflector *r, const struct objtext *t);
/* A list answer did (1) or did not (0) carry metadata.shardInfo. */
void shard_echo(struct reflector *r, int echoed);
/* The list is complete: says, once for the process, who filters; after a
 * streaming list, by asking for one item. Nothing when no selector is
 * sent. */
void shard_tell(struct reflector *r);

#endif
