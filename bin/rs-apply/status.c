/* status.c: the status write of a round (upstream calculateStatus's
 * ReplicaFailure part and updateReplicaSetStatus with statusUpdateRetries =
 * 1). rs-sync computed the status as if this round's writes succeed; if a
 * create or delete failed, the ReplicaFailure condition goes in here. An
 * unchanged status is not written. A failed PUT gets one fresh GET and one
 * more PUT of the same status.
 * rs-sync may sync a key again before its cache has seen this process's
 * last status write of it: the intent then carries the resourceVersion that
 * write replaced, and the PUT would fail with a conflict, costing a GET and
 * a second PUT. So each key's last write is remembered (the version it
 * replaced, the version it made, the status written): an intent based on
 * the replaced version is compared with, and written over, the version we
 * made, which is what the GET would return unless someone else wrote since
 * (then the PUT conflicts and the GET follows, as before). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "clock.h"
#include "json.h"
#include "log.h"

#define COND_TYPE "ReplicaFailure"
#define WRITTEN_KEYS 4096            /* keys whose last write is remembered */
#define WRITTEN_BASES 8              /* replaced versions kept per key */

/* A key's last status write. bases are the versions replaced by our
 * consecutive writes of it: a cache at any of them has not seen them. */
struct written {
	char *bases[WRITTEN_BASES];
	int nbases;
	char *rv;                      /* the version the last write made */
	cJSON *status;                 /* the status it wrote */
};

static struct lru written;
static int written_ready;

struct status {
	struct key *k;
	struct intent *in;
	cJSON *object;                 /* what is written, status final */
	char *path;                    /* the object's path, no /status */
	char *base_rv;                 /* the version the PUT is based on */
	char *body;                    /* the PUT's, lent to it (cJSON_free) */
	int retried;
};

static void
written_free(void *v)
{
	struct written *w = v;

	for (int i = 0; i < w->nbases; i++)
		free(w->bases[i]);
	free(w->rv);
	cJSON_Delete(w->status);
	free(w);
}

/* This key's last write if the intent was computed before its cache saw
 * it, else NULL. */
static const struct written *
written_for(const char *key, const cJSON *object)
{
	const char *rv = rs_json_str(object, "metadata", "resourceVersion",
	    NULL);
	const struct written *w;

	if (!written_ready || rv == NULL ||
	    (w = lru_get(&written, key)) == NULL)
		return NULL;
	for (int i = 0; i < w->nbases; i++)
		if (strcmp(w->bases[i], rv) == 0)
			return w;
	return NULL;
}

/* The versions a write over base replaced: base, and those our earlier
 * writes replaced if base is the version the last of them made. */
static rs_code
written_bases(struct written *w, const struct written *prev,
    const char *base)
{
	int from = 0;

	if (prev != NULL && strcmp(prev->rv, base) == 0) {
		if (prev->nbases == WRITTEN_BASES)
			from = 1;
		for (int i = from; i < prev->nbases; i++)
			if ((w->bases[w->nbases++] = strdup(prev->bases[i])) ==
			    NULL)
				return RS_ENOMEM;
	}
	if ((w->bases[w->nbases++] = strdup(base)) == NULL)
		return RS_ENOMEM;
	return RS_OK;
}

/* Remembers a successful PUT that made version rv (best-effort: without
 * memory, nothing); takes status. */
static void
written_put(const char *key, const char *base_rv, cJSON *status,
    const char *rv)
{
	struct written *w;

	if (!written_ready) {
		lru_init(&written, WRITTEN_KEYS, written_free);
		written_ready = 1;
	}
	if (base_rv == NULL || rv == NULL || status == NULL ||
	    (w = calloc(1, sizeof *w)) == NULL) {
		cJSON_Delete(status);
		return;
	}
	w->rv = strdup(rv);
	w->status = status;
	if (w->rv == NULL ||
	    written_bases(w, lru_get(&written, key), base_rv) != RS_OK ||
	    lru_add(&written, key, w) != RS_OK)
		written_free(w);
}

/* What Go's typed structs would not tell apart from absent. */
static int
is_zero(const cJSON *v)
{
	if (v == NULL || cJSON_IsNull(v) || cJSON_IsFalse(v))
		return 1;
	if (cJSON_IsNumber(v))
		return v->valuedouble == 0;
	if (cJSON_IsString(v))
		return v->valuestring[0] == '\0';
	if (cJSON_IsArray(v) || cJSON_IsObject(v))
		return v->child == NULL;
	return 0;
}

/* reflect.DeepEqual of the decoded structs: absent equals zero. */
static int
same(const cJSON *a, const cJSON *b)
{
	const cJSON *x, *y;

	if (is_zero(a) && is_zero(b))
		return 1;
	if (a == NULL || b == NULL)
		return 0;
	if ((a->type & 0xff) != (b->type & 0xff))
		return 0;
	if (cJSON_IsNumber(a))
		return a->valuedouble == b->valuedouble;
	if (cJSON_IsString(a))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (cJSON_IsArray(a)) {
		for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
			if (!same(x, y))
				return 0;
		return x == NULL && y == NULL;
	}
	if (cJSON_IsObject(a)) {
		cJSON_ArrayForEach(x, a)
			if (!same(x, cJSON_GetObjectItemCaseSensitive(b,
			    x->string)))
				return 0;
		cJSON_ArrayForEach(y, b)
			if (cJSON_GetObjectItemCaseSensitive(a, y->string) ==
			    NULL && !is_zero(y))
				return 0;
		return 1;
	}
	return 1;
}

static int
cond_index(const cJSON *conds, const cJSON **found)
{
	const cJSON *c;
	int i = 0;

	cJSON_ArrayForEach(c, conds) {
		const char *t = rs_json_str(c, "type", NULL);

		if (t != NULL && strcmp(t, COND_TYPE) == 0) {
			if (found)
				*found = c;
			return i;
		}
		i++;
	}
	return -1;
}

static cJSON *
new_cond(const struct key *k)
{
	cJSON *c = cJSON_CreateObject();
	char ts[32];

	if (c == NULL)
		return NULL;
	rs_format_rfc3339(rs_wall_now(), ts);
	cJSON_AddStringToObject(c, "type", COND_TYPE);
	cJSON_AddStringToObject(c, "status", "True");
	cJSON_AddStringToObject(c, "lastTransitionTime", ts);
	cJSON_AddStringToObject(c, "reason", k->fail_reason);
	cJSON_AddStringToObject(c, "message", k->fail_message ?
	    k->fail_message : "");
	return c;
}

/* With a failed create or delete: the old ReplicaFailure condition if there
 * was one (upstream leaves it untouched), else a new one at the end (as
 * SetCondition appends). */
static rs_code
put_failure(const struct key *k, cJSON *status, const cJSON *old_status)
{
	cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions");
	const cJSON *old = NULL;
	cJSON *c;
	int at;

	if (!cJSON_IsArray(conds)) {
		cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
		if ((conds = cJSON_AddArrayToObject(status, "conditions")) ==
		    NULL)
			return RS_ENOMEM;
	}
	while ((at = cond_index(conds, NULL)) >= 0)
		cJSON_DeleteItemFromArray(conds, at);
	at = cond_index(rs_json_get(old_status, "conditions", NULL), &old);
	if (old != NULL) {
		if ((c = cJSON_Duplicate(old, 1)) == NULL)
			return RS_ENOMEM;
		if (at < cJSON_GetArraySize(conds))
			cJSON_InsertItemInArray(conds, at, c);
		else
			cJSON_AddItemToArray(conds, c);
	} else {
		if ((c = new_cond(k)) == NULL)
			return RS_ENOMEM;
		cJSON_AddItemToArray(conds, c);
	}
	return RS_OK;
}

static void
status_free(struct status *s)
{
	intent_free(s->in);
	cJSON_Delete(s->object);
	free(s->path);
	free(s->base_rv);
	cJSON_free(s->body);
	free(s);
}

static void
status_finish(struct status *s)
{
	struct key *k = s->k;

	status_free(s);
	key_step_done(k);
}

static void put_done(void *arg, rs_code rc, struct rs_kresp *resp);

static void
send_put(struct status *s)
{
	const char *rv = rs_json_str(s->object, "metadata", "resourceVersion",
	    NULL);
	char *path;

	/* a PUT sent again comes after the last one was answered */
	cJSON_free(s->body);
	s->body = rs_json_print(s->object);
	free(s->base_rv);
	s->base_rv = rv ? strdup(rv) : NULL;
	if (s->body == NULL || (rv && s->base_rv == NULL) ||
	    asprintf(&path, "%s/status", s->path) < 0)
		rs_fatal(111, "unable to write a status: %s",
		    rs_strerror(RS_ENOMEM));
	s->k->nreq++;
	req_send_borrowed("PUT", path, NULL, s->body, put_done, s);
	free(path);
}

static void
get_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct status *s = arg;
	cJSON *fresh = NULL, *st;
	char buf[128];

	if (rc != RS_OK || resp->body == NULL ||
	    rs_json_parse(resp->body, resp->len, &fresh, NULL) != RS_OK ||
	    !cJSON_IsObject(fresh)) {
		rs_warn("%s: unable to update status: unable to read it again: "
		    "%s", s->k->name, rc != RS_OK ? req_errmsg(rc, resp, buf,
		    sizeof buf) : "malformed answer");
		cJSON_Delete(fresh);
		s->k->failed = 1;
		status_finish(s);
		return;
	}
	st = cJSON_DetachItemFromObjectCaseSensitive(s->object, "status");
	cJSON_DeleteItemFromObjectCaseSensitive(fresh, "status");
	cJSON_AddItemToObject(fresh, "status", st);
	cJSON_Delete(s->object);
	s->object = fresh;
	send_put(s);
}

static void
put_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct status *s = arg;
	char buf[128];

	if (rc == RS_OK) {
		struct answer_meta m;

		rs_info(4, "%s: status updated", s->k->name);
		answer_meta(resp, &m);
		if (m.has_rv)
			key_wrote_rv(s->k, &s->in->owner, NULL, m.rv);
		/* the status written is kept, not copied: the object goes */
		written_put(s->k->name, s->base_rv,
		    cJSON_DetachItemFromObjectCaseSensitive(s->object, "status"),
		    m.has_rv ? m.rv : NULL);
		status_finish(s);
		return;
	}
	if (s->retried) {
		rs_warn("%s: unable to update status: %s", s->k->name,
		    req_errmsg(rc, resp, buf, sizeof buf));
		s->k->failed = 1;
		status_finish(s);
		return;
	}
	rs_info(2, "%s: status update failed, reading it again: %s",
	    s->k->name, req_errmsg(rc, resp, buf, sizeof buf));
	s->retried = 1;
	s->k->nreq++;
	req_send("GET", s->path, NULL, NULL, get_done, s);
}

int
status_start(struct key *k, struct intent *in)
{
	struct status *s = calloc(1, sizeof *s);
	const struct written *w = written_for(k->name, in->object);
	const cJSON *old = w ? w->status : in->old_status;
	cJSON *st;
	char *coll;

	if (s == NULL)
		goto oom;
	/* the intent's own tree, taken rather than copied: nothing reads
	 * in->object after this */
	s->object = cJSON_DetachItemViaPointer(in->json, (cJSON *)in->object);
	in->object = NULL;
	s->k = k;
	s->in = in;
	st = cJSON_GetObjectItemCaseSensitive(s->object, "status");
	if (!cJSON_IsObject(st)) {
		cJSON_DeleteItemFromObjectCaseSensitive(s->object, "status");
		if ((st = cJSON_AddObjectToObject(s->object, "status")) == NULL)
			goto oom;
	}
	if (k->fail_reason != NULL && put_failure(k, st, old) != RS_OK)
		goto oom;
	if (old != NULL && cJSON_IsObject(old) && same(st, old)) {
		rs_info(4, "%s: status unchanged%s", k->name,
		    w ? " (as last written)" : "");
		status_free(s);
		return 0;
	}
	if (w != NULL) {
		rs_info(4, "%s: status based on our last write, at %s", k->name,
		    w->rv);
		if (!cJSON_ReplaceItemInObjectCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(s->object, "metadata"),
		    "resourceVersion", cJSON_CreateString(w->rv)))
			goto oom;
	}
	if ((coll = owner_collection_path(&in->owner)) == NULL ||
	    asprintf(&s->path, "%s/%s", coll, in->owner.name) < 0)
		goto oom;
	free(coll);
	send_put(s);
	return 1;
oom:
	rs_fatal(111, "unable to write a status: %s", rs_strerror(RS_ENOMEM));
}
