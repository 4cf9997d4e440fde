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
 * (then the PUT conflicts and the GET follows, as before).
 * The object is written from its text (the intent's, or the GET's answer),
 * its status and resourceVersion spliced in (rs_jsplice): only the status
 * is a tree, as it is compared and may be changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "clock.h"
#include "jscan.h"
#include "json.h"
#include "jsplice.h"
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
	cJSON *status;                 /* what is written, final */
	char *path;                    /* the object's path, no /status */
	char *base_rv;                 /* the version the PUT is based on */
	char *body;                    /* the PUT's, lent to it */
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
written_for(const char *key, const char *rv)
{
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
oom(void)
{
	rs_fatal(111, "unable to write a status: %s", rs_strerror(RS_ENOMEM));
}

/* metadata.resourceVersion of the object's text (a copy), or NULL. */
static char *
text_rv(const char *buf, struct rs_jspan obj)
{
	struct rs_jspan v;
	char *rv;

	if (rs_jscan_get(buf, obj, &v, "metadata", "resourceVersion", NULL) !=
	    RS_OK || rs_jscan_type(buf, v) != RS_JSTRING)
		return NULL;
	/* unescaped, a string is shorter than its span with the quotes */
	if ((rv = malloc(v.end - v.off)) == NULL)
		oom();
	(void)rs_jscan_unescape(buf, v, rv, v.end - v.off, NULL);
	return rv;
}

/* The PUT's body: the object's text with st as its status, in place when
 * place is set (else its old status goes and st comes last), and rv, when
 * not NULL, as its metadata.resourceVersion. st is printed, or is the
 * text of the object's own status when kept (kept: the span, in place). */
static char *
put_body(const char *buf, struct rs_jspan obj, const cJSON *st, int place,
    const struct rs_jspan *kept, const char *rv)
{
	struct rs_jsplice meta[] = { { .name = "resourceVersion" },
	    { .name = NULL } };
	struct rs_jsplice e[] = { { .name = "status", .last = !place },
	    { .name = NULL }, { .name = NULL } };
	cJSON *rvs = NULL;
	char *stx = NULL, *rvx = NULL, *out, *end;

	if (kept != NULL) {
		e[0].val = buf + kept->off;
		e[0].len = kept->end - kept->off;
	} else {
		if ((stx = rs_json_print(st)) == NULL)
			oom();
		e[0].val = stx;
		e[0].len = strlen(stx);
	}
	if (rv != NULL) {
		if ((rvs = cJSON_CreateString(rv)) == NULL ||
		    (rvx = rs_json_print(rvs)) == NULL)
			oom();
		meta[0].val = rvx;
		meta[0].len = strlen(rvx);
		e[1].name = "metadata";
		e[1].in = meta;
	}
	if ((out = malloc(rs_jsplice_room(obj, e) + 1)) == NULL)
		oom();
	end = rs_jsplice(out, buf, obj, e);
	*end = '\0';
	cJSON_free(stx);
	cJSON_free(rvx);
	cJSON_Delete(rvs);
	return out;
}

static void
status_free(struct status *s)
{
	intent_free(s->in);
	cJSON_Delete(s->status);
	free(s->path);
	free(s->base_rv);
	free(s->body);
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

/* s->body, made for s->base_rv */
static void
send_put(struct status *s)
{
	char *path;

	if (asprintf(&path, "%s/status", s->path) < 0)
		oom();
	s->k->nreq++;
	req_send_borrowed("PUT", path, NULL, s->body, put_done, s);
	free(path);
}

static void
get_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct status *s = arg;
	struct rs_jspan fresh;
	char buf[128];

	if (rc != RS_OK || resp->body == NULL ||
	    rs_jscan_doc(resp->body, resp->len, &fresh, NULL) != RS_OK ||
	    rs_jscan_type(resp->body, fresh) != RS_JOBJECT) {
		rs_warn("%s: unable to update status: unable to read it again: "
		    "%s", s->k->name, rc != RS_OK ? req_errmsg(rc, resp, buf,
		    sizeof buf) : "malformed answer");
		s->k->failed = 1;
		status_finish(s);
		return;
	}
	/* a PUT sent again comes after the last one was answered */
	free(s->base_rv);
	free(s->body);
	s->base_rv = text_rv(resp->body, fresh);
	s->body = put_body(resp->body, fresh, s->status, 0, NULL, NULL);
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
		written_put(s->k->name, s->base_rv, s->status,
		    m.has_rv ? m.rv : NULL);
		s->status = NULL;
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
	const char *buf = in->obj_text;
	struct rs_jspan obj = { 0, in->obj_len }, stv;
	char *rv = text_rv(buf, obj), *coll;
	const struct written *w = written_for(k->name, rv);
	const cJSON *old = w ? w->status : in->old_status;
	int place;

	if (s == NULL)
		oom();
	s->k = k;
	s->in = in;
	/* the status alone is a tree: it is compared, and may change */
	place = rs_jscan_find(buf, obj, "status", &stv) == RS_OK &&
	    rs_jscan_type(buf, stv) == RS_JOBJECT;
	if (place ? rs_json_parse(buf + stv.off, stv.end - stv.off,
	    &s->status, NULL) != RS_OK :
	    (s->status = cJSON_CreateObject()) == NULL)
		oom();
	if (k->fail_reason != NULL && put_failure(k, s->status, old) != RS_OK)
		oom();
	if (old != NULL && cJSON_IsObject(old) && same(s->status, old)) {
		rs_info(4, "%s: status unchanged%s", k->name,
		    w ? " (as last written)" : "");
		free(rv);
		status_free(s);
		return 0;
	}
	if (w != NULL)
		rs_info(4, "%s: status based on our last write, at %s", k->name,
		    w->rv);
	/* a status not changed here goes as its text, not printed again:
	 * rs-sync printed it as cJSON does, so the bytes are the same */
	s->body = put_body(buf, obj, s->status, place, place &&
	    k->fail_reason == NULL ? &stv : NULL, w ? w->rv : NULL);
	if (w != NULL) {
		free(rv);
		if ((rv = strdup(w->rv)) == NULL)
			oom();
	}
	s->base_rv = rv;
	if ((coll = owner_collection_path(&in->owner)) == NULL ||
	    asprintf(&s->path, "%s/%s", coll, in->owner.name) < 0)
		oom();
	free(coll);
	send_put(s);
	return 1;
}
