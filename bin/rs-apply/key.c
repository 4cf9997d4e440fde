/* key.c: the per-key state machine. A key's intents wait in a FIFO and run
 * one step at a time in the order rs-sync wrote them (claims, creates or
 * deletes, status, end), so that the status can carry the failure of the
 * writes before it; different keys run side by side. A key lives from its
 * first intent to the end that empties its FIFO. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "featuregate.h"
#include "jscan.h"
#include "json.h"
#include "log.h"

static struct rs_strmap keys;
static struct key *open_key;       /* its intents are being read */

void
keys_init(void)
{
	rs_strmap_init(&keys);
}

size_t
keys_alive(void)
{
	return keys.len;
}

int
keys_open(void)
{
	return open_key != NULL;
}

static struct key *
key_get(const char *name)
{
	struct key *k = rs_strmap_get(&keys, name);

	if (k != NULL)
		return k;
	if ((k = calloc(1, sizeof *k)) == NULL)
		goto oom;
	if ((k->name = strdup(name)) == NULL)
		goto oom;
	if (rs_strmap_put(&keys, k->name, k, NULL) != RS_OK)
		goto oom;
	return k;
oom:
	rs_fatal(111, "unable to track key %s: %s", name,
	    rs_strerror(RS_ENOMEM));
}

static void
key_free(struct key *k)
{
	rs_strmap_del(&keys, k->name);
	if (open_key == k)
		open_key = NULL;
	free(k->fail_message);
	free(k->check_err);
	free(k->name);
	free(k);
}

static void
key_push(struct key *k, struct intent *in)
{
	in->next = NULL;
	if (k->tail)
		k->tail->next = in;
	else
		k->head = in;
	k->tail = in;
}

static struct intent *
key_pop(struct key *k)
{
	struct intent *in = k->head;

	if (in != NULL) {
		k->head = in->next;
		if (k->head == NULL)
			k->tail = NULL;
		in->next = NULL;
	}
	return in;
}

struct intent *
key_take_claim(struct key *k)
{
	if (k->head == NULL ||
	    (k->head->op != OP_ADOPT && k->head->op != OP_RELEASE))
		return NULL;
	return key_pop(k);
}

void
key_fail(struct key *k, const char *reason, const char *message)
{
	k->failed = 1;
	if (k->fail_reason != NULL)
		return;
	k->fail_reason = reason;
	free(k->fail_message);
	k->fail_message = strdup(message ? message : "");
}

static void
round_reset(struct key *k)
{
	k->failed = 0;
	k->fail_reason = NULL;
	free(k->fail_message);
	k->fail_message = NULL;
	k->check = CHECK_NONE;
	free(k->check_err);
	k->check_err = NULL;
	k->nreq = 0;
	k->moved = 0;
	k->round_ns = 0;
	k->in_round = 0;
	k->fenced = 0;
	memset(&k->wrote, 0, sizeof k->wrote);
}

static void
key_end(struct key *k, struct intent *in)
{
	if (in->broken)
		k->failed = 1;
	if (in->retry) {
		k->failed = 1;
		rs_info(2, "%s: rs-sync's cache is behind our writes, retry",
		    k->name);
	} else if (k->failed && k->moved > 0)
		rs_info(2, "%s: sync failed after %lu pods created or deleted, "
		    "retry with the failures forgotten (%lu requests)", k->name,
		    k->moved, k->nreq);
	else if (k->failed)
		rs_info(2, "%s: sync failed, retry (%lu requests)", k->name,
		    k->nreq);
	else if (in->has_requeue)
		rs_info(2, "%s: synced, requeue after %gs (%lu requests)",
		    k->name, in->requeue_after, k->nreq);
	else
		rs_info(2, "%s: synced (%lu requests)", k->name, k->nreq);
	if (!app.dry_run && k->wrote.n > 0)
		fx_wrote(k->name, &k->wrote);
	if (!app.dry_run)
		fx_end(k->name, k->failed, k->moved > 0, in->has_requeue,
		    in->requeue_after);
	if (k->failed)
		reach_park(k->name);
	latency_end(k, in);
	round_reset(k);
}

/* Runs one intent; 1 when it left requests in flight. */
static int
step_start(struct key *k, struct intent *in)
{
	switch (in->op) {
	case OP_ADOPT:
	case OP_RELEASE:
		return claim_start(k, in);
	case OP_CREATE:
		return create_start(k, in);
	case OP_DELETE:
		return delete_start(k, in);
	case OP_STATUS:
		return status_start(k, in);
	case OP_END:
		key_end(k, in);
		break;
	case OP_EVENT:
		/* queued for the event writer: never holds the key up */
		event_record(&in->owner, in->ev_type, in->ev_reason, "%s",
		    in->ev_message);
		break;
	case OP_BAD:
		k->failed = 1;
		break;
	}
	intent_free(in);
	return 0;
}

/* A write step of a round that the fence stopped: it ends as if its
 * writes had failed, so what rs-sync expects of them is let go and the
 * key is retried (by the next holder of its bucket, or by this one once
 * its Lease is renewed). */
static void
skip_fenced(struct key *k, struct intent *in)
{
	static const char msg[] = "not sent: the Lease of the namespace's "
	    "bucket is not held (fence)";
	const cJSON *pod;
	char *podkey;

	switch (in->op) {
	case OP_CREATE:
		if (in->count > 0 && !app.dry_run)
			fx_lower_creations(k->name, in->count);
		key_fail(k, "FailedCreate", msg);
		break;
	case OP_DELETE:
		cJSON_ArrayForEach(pod, in->pods) {
			if (app.dry_run)
				break;
			if (asprintf(&podkey, "%s/%s", in->owner.ns,
			    rs_json_str(pod, "name", NULL)) < 0)
				rs_fatal(111, "unable to observe a deletion: %s",
				    rs_strerror(RS_ENOMEM));
			fx_deletion_observed(k->name, podkey);
			free(podkey);
		}
		key_fail(k, "FailedDelete", msg);
		break;
	case OP_EVENT:
		/* as when its write fails: never holds the key up */
		break;
	default:
		k->failed = 1;
	}
	intent_free(in);
}

static int
is_write(enum op op)
{
	return op != OP_END && op != OP_BAD;
}

/* Runs steps until one is in flight or the FIFO is empty; frees the key
 * when its last end has run and nothing else waits. */
static void
key_run(struct key *k)
{
	struct intent *in;
	int ended = 0;

	while (!k->running && (in = key_pop(k)) != NULL) {
		/* a round starts with the first intent after an end */
		if (k->round_ns == 0)
			k->round_ns = in->read_ns;
		if (!k->in_round) {
			k->in_round = 1;
			fence_round_begin(k);
		}
		ended = in->op == OP_END;
		if (is_write(in->op) && fence_key_stopped(k)) {
			skip_fenced(k, in);
			continue;
		}
		k->running = step_start(k, in);
	}
	if (!k->running && k->head == NULL && ended && open_key != k)
		key_free(k);
}

void
key_step_done(struct key *k)
{
	k->running = 0;
	key_run(k);
}

/* A key's intents are contiguous: a line for another key means the open
 * key's end was lost (a malformed line); finish it as failed. */
static void
close_open(unsigned long lineno, const char *why)
{
	struct key *k = open_key;
	struct intent *end;

	if (k == NULL)
		return;
	rs_warn("line %lu: %s %s without its end line: it will be retried",
	    lineno, why, k->name);
	open_key = NULL;
	if ((end = intent_broken_end(k->name, lineno)) == NULL)
		rs_fatal(111, "unable to end key %s: %s", k->name,
		    rs_strerror(RS_ENOMEM));
	key_push(k, end);
	key_run(k);
}

void
keys_feed(struct intent *in)
{
	struct key *k;

	latency_read(in);
	if (in->key == NULL) {
		/* no key named: it belongs to the key being read, if any */
		if (open_key != NULL) {
			k = open_key;
			key_push(k, in);
			key_run(k);
		} else {
			intent_free(in);
		}
		return;
	}
	if (open_key != NULL && strcmp(open_key->name, in->key) != 0)
		close_open(in->lineno, "intents of");
	k = key_get(in->key);
	if (open_key == NULL && k->head == NULL && !k->running) {
		rs_info(4, "%s: intents start at line %lu", k->name, in->lineno);
		reach_taken(k->name);
	}
	open_key = in->op == OP_END ? NULL : k;
	key_push(k, in);
	key_run(k);
}

void
keys_input_end(unsigned long lineno)
{
	close_open(lineno, "input ended inside the intents of");
}

/* The API group of an apiVersion: "apps/v1" -> "apps", "v1" -> "". */
static void
api_group(const char *api_version, char *out, size_t len)
{
	const char *slash = api_version ? strchr(api_version, '/') : NULL;
	size_t n = slash ? (size_t)(slash - api_version) : 0;

	if (n >= len)
		n = 0;
	memcpy(out, api_version, n);
	out[n] = '\0';
}

void
key_wrote_rv(struct key *k, const struct owner *o, const char *resource,
    const char *rv)
{
	struct rs_exp_write w;

	if (!rs_feature_enabled(RS_FEATURE_STALE_CONSISTENCY_RS) ||
	    o->uid == NULL || rv == NULL || strlen(rv) >= sizeof w.rv)
		return;
	memset(&w, 0, sizeof w);
	memcpy(w.rv, rv, strlen(rv));
	if (resource != NULL) {
		snprintf(w.resource, sizeof w.resource, "%s", resource);
	} else {
		snprintf(w.resource, sizeof w.resource, "%s", o->resource);
		api_group(o->api_version, w.group, sizeof w.group);
	}
	/* a new owner uid under the same key starts a new record */
	if (strcmp(k->wrote.uid, o->uid) != 0) {
		memset(&k->wrote, 0, sizeof k->wrote);
		snprintf(k->wrote.uid, sizeof k->wrote.uid, "%s", o->uid);
	}
	(void)rs_exp_written_add(&k->wrote, &w);
}

void
answer_meta(const struct rs_kresp *resp, struct answer_meta *m)
{
	static const char *const names[] = { "resourceVersion", "name" };
	struct rs_jspan doc, meta, v[2];

	m->has_rv = m->has_name = 0;
	if (resp == NULL || resp->body == NULL ||
	    rs_jscan_doc(resp->body, resp->len, &doc, NULL) != RS_OK ||
	    rs_jscan_find(resp->body, doc, "metadata", &meta) != RS_OK ||
	    rs_jscan_pick(resp->body, meta, names, v, 2) != RS_OK)
		return;
	m->has_rv = rs_jscan_type(resp->body, v[0]) == RS_JSTRING &&
	    rs_jscan_unescape(resp->body, v[0], m->rv, sizeof m->rv, NULL) ==
	    RS_OK;
	m->has_name = rs_jscan_type(resp->body, v[1]) == RS_JSTRING &&
	    rs_jscan_unescape(resp->body, v[1], m->name, sizeof m->name,
	    NULL) == RS_OK;
}

void
key_wrote(struct key *k, const struct owner *o, const char *resource,
    const struct rs_kresp *resp)
{
	struct answer_meta m;

	answer_meta(resp, &m);
	if (m.has_rv)
		key_wrote_rv(k, o, resource, m.rv);
}
