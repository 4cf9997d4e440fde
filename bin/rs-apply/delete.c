/* delete.c: pod deletion as upstream manageReplicas does it: all in
 * parallel. A delete that fails, NotFound included, will never be seen by
 * the watch as the deletion rs-sync expects, so it is observed in the
 * expectations file here; only a failure other than NotFound fails the key
 * (the pod being gone is what was asked for). */
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
	const char *name;              /* in the intent */
};

static void
delete_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct one *p = arg;
	struct delete *d = p->d;
	const struct owner *o = &d->in->owner;
	char buf[128];

	if (rc == RS_OK) {
		d->k->moved++;
		rs_info(4, "%s: deleted pod %s/%s", d->k->name, o->ns, p->name);
		event_record(o, "Normal", "SuccessfulDelete", "Deleted pod: %s",
		    p->name);
	} else {
		const char *msg = req_errmsg(rc, resp, buf, sizeof buf);
		char *podkey;

		if (asprintf(&podkey, "%s/%s", o->ns, p->name) < 0)
			rs_fatal(111, "unable to observe a deletion: %s",
			    rs_strerror(RS_ENOMEM));
		if (!app.dry_run)
			fx_deletion_observed(d->k->name, podkey);
		free(podkey);
		if (req_is(rc, resp, "NotFound")) {
			rs_info(4, "%s: pod %s/%s has already been deleted",
			    d->k->name, o->ns, p->name);
		} else {
			char *why;

			rs_warn("%s: unable to delete pod %s/%s: %s", d->k->name,
			    o->ns, p->name, msg);
			event_record(o, "Warning", "FailedDelete",
			    "Error deleting: %s", msg);
			if (asprintf(&why, "unable to delete pods: %s", msg) < 0)
				why = NULL;
			key_fail(d->k, "FailedDelete", why ? why : msg);
			free(why);
		}
	}
	free(p);
	if (--d->left == 0) {
		struct key *k = d->k;

		intent_free(d->in);
		free(d);
		key_step_done(k);
	}
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
		p->d = d;
		p->name = rs_json_str(pod, "name", NULL);
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
