/* delete.c: pod deletion as upstream manageReplicas does it: all in
 * parallel. A delete that fails will never be seen by the watch as the
 * deletion rs-sync expects, so it is observed in the expectations file
 * here, and fails the key. A pod already gone (NotFound) is a success, and
 * unlike upstream its deletion is left to rs-sync to observe: the pod was
 * in rs-sync's cache when it chose it, so its stream (or a relist) will
 * bring the deletion, and until it has, the next sync must not count the
 * pod and delete another. That NotFound is also what a delete of unknown
 * outcome gives when libcurl sends it again on a new connection; one not
 * sent again is settled by listing the pod (unknown.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "json.h"
#include "log.h"

struct delete {
	struct key *k;
	struct intent *in;
	size_t left;
};

struct one {
	struct delete *d;
	const char *name, *uid;        /* in the intent */
	char *msg;                     /* why its delete failed */
};

static void
delete_next(struct one *p)
{
	struct delete *d = p->d;

	free(p->msg);
	free(p);
	if (--d->left == 0) {
		struct key *k = d->k;

		intent_free(d->in);
		free(d);
		key_step_done(k);
	}
}

static void
deleted(struct one *p)
{
	const struct owner *o = &p->d->in->owner;

	p->d->k->moved++;
	rs_info(4, "%s: deleted pod %s/%s", p->d->k->name, o->ns, p->name);
	event_record(o, "Normal", "SuccessfulDelete", "Deleted pod: %s",
	    p->name);
}

/* No watch event will show the deletion rs-sync expects: it is observed
 * here, and the key fails. */
static void
delete_failed(struct one *p)
{
	struct delete *d = p->d;
	const struct owner *o = &d->in->owner;
	char *podkey, *why;

	if (asprintf(&podkey, "%s/%s", o->ns, p->name) < 0)
		rs_fatal(111, "unable to observe a deletion: %s",
		    rs_strerror(RS_ENOMEM));
	if (!app.dry_run)
		fx_deletion_observed(d->k->name, podkey);
	free(podkey);
	rs_warn("%s: unable to delete pod %s/%s: %s", d->k->name, o->ns,
	    p->name, p->msg);
	event_record(o, "Warning", "FailedDelete", "Error deleting: %s",
	    p->msg);
	if (asprintf(&why, "unable to delete pods: %s", p->msg) < 0)
		why = NULL;
	key_fail(d->k, "FailedDelete", why ? why : p->msg);
	free(why);
}

/* The pod listed by name after a delete of unknown outcome: gone (or
 * another pod of that name), or being deleted, and the stream will bring
 * the deletion rs-sync expects. A LIST, not a GET: the role grants list
 * on pods, not get. */
static void
delete_looked(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct one *p = arg;
	cJSON *list = NULL;
	const cJSON *pod;
	int gone = 0;

	if (rc == RS_OK && resp->body != NULL &&
	    rs_json_parse(resp->body, resp->len, &list, NULL) == RS_OK) {
		gone = 1;
		cJSON_ArrayForEach(pod, cJSON_GetObjectItemCaseSensitive(list,
		    "items")) {
			const char *uid = rs_json_str(pod, "metadata", "uid",
			    NULL);

			if ((p->uid == NULL || (uid && strcmp(uid, p->uid) ==
			    0)) && rs_json_get(pod, "metadata",
			    "deletionTimestamp", NULL) == NULL)
				gone = 0;
		}
		cJSON_Delete(list);
	}
	if (gone) {
		rs_info(2, "%s: the delete of pod %s/%s, of unknown outcome, "
		    "was carried out: rs-sync observes it from its stream",
		    p->d->k->name, p->d->in->owner.ns, p->name);
		deleted(p);
	} else {
		delete_failed(p);
	}
	delete_next(p);
}

static void
delete_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct one *p = arg;
	const struct owner *o = &p->d->in->owner;
	char buf[128], *path;

	if (rc == RS_OK) {
		deleted(p);
		delete_next(p);
		return;
	}
	if (req_is(rc, resp, "NotFound")) {
		rs_info(4, "%s: pod %s/%s has already been deleted: its "
		    "deletion is left for rs-sync to observe", p->d->k->name,
		    o->ns, p->name);
		delete_next(p);
		return;
	}
	if ((p->msg = strdup(req_errmsg(rc, resp, buf, sizeof buf))) == NULL)
		goto oom;
	if (req_unknown(rc, resp) && !app.dry_run) {
		if (asprintf(&path, "/api/v1/namespaces/%s/pods?fieldSelector="
		    "metadata.name%%3D%s", o->ns, p->name) < 0)
			goto oom;
		look(p->d->k, path, delete_looked, p);
		return;
	}
	delete_failed(p);
	delete_next(p);
	return;
oom:
	rs_fatal(111, "unable to delete pods: %s", rs_strerror(RS_ENOMEM));
}

int
delete_start(struct key *k, struct intent *in)
{
	struct delete *d = calloc(1, sizeof *d);
	const cJSON *pod;

	if (d == NULL)
		goto oom;
	d->k = k;
	d->in = in;
	rs_info(2, "%s: too many replicas: deleting %d", k->name,
	    cJSON_GetArraySize(in->pods));
	cJSON_ArrayForEach(pod, in->pods) {
		struct one *p = malloc(sizeof *p);
		char *path;

		if (p == NULL)
			goto oom;
		memset(p, 0, sizeof *p);
		p->d = d;
		p->name = rs_json_str(pod, "name", NULL);
		p->uid = rs_json_str(pod, "uid", NULL);
		if (asprintf(&path, "/api/v1/namespaces/%s/pods/%s",
		    in->owner.ns, p->name) < 0)
			goto oom;
		d->left++;
		k->nreq++;
		req_send("DELETE", path, NULL, NULL, delete_done, p);
		free(path);
	}
	if (d->left > 0)
		return 1;
	intent_free(in);
	free(d);
	return 0;
oom:
	rs_fatal(111, "unable to delete pods: %s", rs_strerror(RS_ENOMEM));
}
