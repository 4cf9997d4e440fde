/* claim.c: adopt and release (upstream PodControllerRefManager). Before the
 * first adoption of a round the owner is read again from the API server,
 * never from a cache: a pod must not be adopted by an owner that is being
 * deleted or was replaced under the same name (upstream #42639). Adoption
 * patches with a metadata.uid precondition, so a pod replaced under the same
 * name is not adopted by mistake. Consecutive claims run in parallel. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "json.h"
#include "log.h"

struct claim {
	struct key *k;
	struct intent **v;
	size_t n, cap;
	size_t left;                   /* requests in flight */
};

struct patch {
	struct claim *c;
	struct intent *in;
};

static void
claim_push(struct claim *c, struct intent *in)
{
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 8;
		struct intent **nv = realloc(c->v, ncap * sizeof *nv);

		if (nv == NULL)
			rs_fatal(111, "unable to queue claims of %s: %s",
			    c->k->name, rs_strerror(RS_ENOMEM));
		c->v = nv;
		c->cap = ncap;
	}
	c->v[c->n++] = in;
}

static void
claim_free(struct claim *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		intent_free(c->v[i]);
	free(c->v);
	free(c);
}

static void
claim_finish(struct claim *c)
{
	struct key *k = c->k;

	claim_free(c);
	key_step_done(k);
}

/* {"metadata":{"ownerReferences":[REF],"uid":POD_UID}} */
static char *
patch_body(const struct intent *in)
{
	cJSON *o = cJSON_CreateObject(), *m, *refs, *ref;
	char *s = NULL;

	if (o == NULL || (m = cJSON_AddObjectToObject(o, "metadata")) == NULL ||
	    (refs = cJSON_AddArrayToObject(m, "ownerReferences")) == NULL ||
	    (ref = cJSON_CreateObject()) == NULL)
		goto out;
	cJSON_AddItemToArray(refs, ref);
	if (in->op == OP_ADOPT) {
		cJSON_AddStringToObject(ref, "apiVersion", in->owner.api_version);
		cJSON_AddStringToObject(ref, "kind", in->owner.kind);
		cJSON_AddStringToObject(ref, "name", in->owner.name);
		cJSON_AddStringToObject(ref, "uid", in->owner.uid);
		cJSON_AddTrueToObject(ref, "controller");
		cJSON_AddTrueToObject(ref, "blockOwnerDeletion");
	} else {
		cJSON_AddStringToObject(ref, "$patch", "delete");
		cJSON_AddStringToObject(ref, "uid", in->owner.uid);
	}
	cJSON_AddStringToObject(m, "uid", in->pod_uid);
	s = rs_json_print(o);
out:
	cJSON_Delete(o);
	if (s == NULL)
		rs_fatal(111, "unable to build a patch: %s",
		    rs_strerror(RS_ENOMEM));
	return s;
}

static void
patch_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct patch *p = arg;
	struct claim *c = p->c;
	const struct intent *in = p->in;
	char buf[128];

	free(p);
	if (rc == RS_OK) {
		key_wrote(c->k, &in->owner, "pods", resp);
		rs_info(2, "%s: %s pod %s/%s", c->k->name,
		    in->op == OP_ADOPT ? "adopted" : "released", in->owner.ns,
		    in->pod_name);
	} else if (req_is(rc, resp, "NotFound") ||
	    (in->op == OP_RELEASE && req_is(rc, resp, "Invalid"))) {
		/* gone, or (release) no longer ours: nothing to do */
		rs_info(2, "%s: %s of pod %s/%s: %s: ignored", c->k->name,
		    op_name(in->op), in->owner.ns, in->pod_name,
		    req_errmsg(rc, resp, buf, sizeof buf));
	} else {
		rs_warn("%s: unable to %s pod %s/%s: %s", c->k->name,
		    op_name(in->op), in->owner.ns, in->pod_name,
		    req_errmsg(rc, resp, buf, sizeof buf));
		c->k->failed = 1;
	}
	if (--c->left == 0)
		claim_finish(c);
}

static void
send_patches(struct claim *c)
{
	struct key *k = c->k;
	size_t i;

	for (i = 0; i < c->n; i++) {
		struct intent *in = c->v[i];
		struct patch *p;
		char *path, *body;

		if (in->op == OP_ADOPT && k->check == CHECK_REFUSED) {
			rs_warn("%s: can't adopt Pod %s/%s (%s): %s", k->name,
			    in->owner.ns, in->pod_name, in->pod_uid,
			    k->check_err);
			k->failed = 1;
			continue;
		}
		if ((p = malloc(sizeof *p)) == NULL ||
		    asprintf(&path, "/api/v1/namespaces/%s/pods/%s?fieldManager="
		    RS_FIELD_MANAGER, in->owner.ns, in->pod_name) < 0)
			rs_fatal(111, "unable to patch a pod: %s",
			    rs_strerror(RS_ENOMEM));
		p->c = c;
		p->in = in;
		body = patch_body(in);
		c->left++;
		k->nreq++;
		req_send("PATCH", path, CT_SMP, body, patch_done, p);
		free(path);
		cJSON_free(body);
	}
}

static void
refuse(struct key *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
refuse(struct key *k, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	k->check = CHECK_REFUSED;
	free(k->check_err);
	k->check_err = s ? s : strdup("refused");
}

/* RecheckDeletionTimestamp around a GET that must see the same UID. */
static void
check_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct claim *c = arg;
	struct key *k = c->k;
	const struct owner *o = &c->v[0]->owner;
	cJSON *fresh = NULL;
	const char *uid, *del;
	char buf[128];

	c->left--;
	k->check = CHECK_OK;
	if (rc != RS_OK) {
		refuse(k, "can't recheck DeletionTimestamp: %s",
		    req_errmsg(rc, resp, buf, sizeof buf));
	} else if (resp->body == NULL) {
		if (!app.dry_run)
			refuse(k, "can't recheck DeletionTimestamp: empty "
			    "answer");
	} else if (rs_json_parse(resp->body, resp->len, &fresh, NULL) !=
	    RS_OK) {
		refuse(k, "can't recheck DeletionTimestamp: malformed answer");
	} else if ((uid = rs_json_str(fresh, "metadata", "uid", NULL)) ==
	    NULL || strcmp(uid, o->uid) != 0) {
		refuse(k, "original %s %s/%s is gone: got uid %s, wanted %s",
		    o->kind, o->ns, o->name, uid ? uid : "", o->uid);
	} else if ((del = rs_json_str(fresh, "metadata", "deletionTimestamp",
	    NULL)) != NULL) {
		refuse(k, "%s/%s has just been deleted at %s", o->ns, o->name,
		    del);
	}
	cJSON_Delete(fresh);
	if (k->check == CHECK_REFUSED)
		rs_info(2, "%s: adoption refused: %s", k->name, k->check_err);
	send_patches(c);
	if (c->left == 0)
		claim_finish(c);
}

static void
send_check(struct claim *c)
{
	const struct owner *o = &c->v[0]->owner;
	char *coll = owner_collection_path(o), *path;

	if (coll == NULL || asprintf(&path, "%s/%s", coll, o->name) < 0)
		rs_fatal(111, "unable to read the owner: %s",
		    rs_strerror(RS_ENOMEM));
	free(coll);
	c->k->check = CHECK_RUNNING;
	c->left++;
	c->k->nreq++;
	req_send("GET", path, NULL, NULL, check_done, c);
	free(path);
}

int
claim_start(struct key *k, struct intent *first)
{
	struct claim *c = calloc(1, sizeof *c);
	struct intent *in;
	int adopts = 0;
	size_t i;

	if (c == NULL)
		rs_fatal(111, "unable to claim pods: %s",
		    rs_strerror(RS_ENOMEM));
	c->k = k;
	claim_push(c, first);
	while ((in = key_take_claim(k)) != NULL)
		claim_push(c, in);
	for (i = 0; i < c->n; i++)
		adopts += c->v[i]->op == OP_ADOPT;
	if (adopts > 0 && k->check == CHECK_NONE)
		send_check(c);
	else
		send_patches(c);
	if (c->left > 0)
		return 1;
	claim_free(c);
	return 0;
}
