/* unknown.c: creates of unknown outcome. A create that was sent and got
 * no answer (the connection reset or timed out after its body went out,
 * or a 5xx) may have made its pod. Its expectation is lowered all the
 * same, as upstream does, so the next sync may create again: if that
 * sync runs before the pods stream has brought the pod, it is a pod too
 * many. So before the step ends the owner's pods are listed (a quorum
 * read, sent after the create's failure), and the newest resourceVersion
 * among the pods it controls is recorded as a version written for pods:
 * rs-sync's stale-cache guard then holds the next sync until its stream
 * has reached it, by which time a pod the create made is in its cache.
 * The list is tried again, with a short backoff, until it is answered:
 * the key is not reported, so not synced again, meanwhile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "json.h"
#include "log.h"

#define LOOK_FIRST 0.2          /* s: the first wait after a failed list */
#define LOOK_MAX   2.0          /* s: the longest */

struct look {
	struct key *k;
	const struct owner *o;        /* the step's, alive until then runs */
	char *path;
	double wait;
	unknown_fn then;
	void *arg;
};

/* "k1=v1,k2=v2", escaped for the query. */
static char *
selector(const cJSON *labels)
{
	const cJSON *l;
	char *s = NULL, *t, *esc;

	cJSON_ArrayForEach(l, labels) {
		const char *v = cJSON_IsString(l) ? l->valuestring : "";

		if (asprintf(&t, "%s%s%s=%s", s ? s : "", s ? "," : "",
		    l->string, v) < 0) {
			free(s);
			return NULL;
		}
		free(s);
		s = t;
	}
	if (s == NULL)
		return NULL;
	esc = rs_kube_escape(s);
	free(s);
	return esc;
}

static int
controlled_by(const cJSON *pod, const char *uid)
{
	const cJSON *ref;

	cJSON_ArrayForEach(ref, rs_json_get(pod, "metadata",
	    "ownerReferences", NULL)) {
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref,
		    "controller")))
			return strcmp(rs_json_str(ref, "uid", NULL) ?
			    rs_json_str(ref, "uid", NULL) : "", uid) == 0;
	}
	return 0;
}

/* Records the versions of the owner's pods; how many there were. */
static size_t
look_record(struct look *l, const struct rs_kresp *resp)
{
	cJSON *list = NULL;
	const cJSON *pod;
	size_t n = 0;

	if (resp->body == NULL ||
	    rs_json_parse(resp->body, resp->len, &list, NULL) != RS_OK) {
		rs_warn("%s: the list of its pods does not parse", l->k->name);
		return 0;
	}
	cJSON_ArrayForEach(pod, cJSON_GetObjectItemCaseSensitive(list,
	    "items")) {
		if (!controlled_by(pod, l->o->uid))
			continue;
		key_wrote_rv(l->k, l->o, "pods", rs_json_str(pod, "metadata",
		    "resourceVersion", NULL));
		n++;
	}
	cJSON_Delete(list);
	return n;
}

static void
look_end(struct look *l)
{
	unknown_fn then = l->then;
	void *arg = l->arg;

	free(l->path);
	free(l);
	then(arg);
}

static void
look_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct look *l = arg;
	char buf[128];
	double wait;

	if (rc == RS_OK) {
		size_t n = look_record(l, resp);

		rs_info(2, "%s: a create's outcome is unknown: %zu pods of "
		    "%s listed, the next sync waits for its stream to reach "
		    "them", l->k->name, n, l->o->name);
		look_end(l);
		return;
	}
	if (app.stopping || (resp != NULL && resp->code != 0 &&
	    resp->code != 429 && resp->code < 500)) {
		/* refused for good, or no time: the next holder relists */
		rs_warn("%s: unable to list its pods after a create of unknown "
		    "outcome: %s: its next sync may miss a pod that create "
		    "made", l->k->name, req_errmsg(rc, resp, buf, sizeof buf));
		look_end(l);
		return;
	}
	wait = l->wait;
	if (resp != NULL && resp->status.retry_after > wait)
		wait = resp->status.retry_after;
	rs_info(2, "%s: unable to list its pods after a create of unknown "
	    "outcome: %s: again in %.1fs", l->k->name,
	    req_errmsg(rc, resp, buf, sizeof buf), wait);
	l->wait = 2 * l->wait < LOOK_MAX ? 2 * l->wait : LOOK_MAX;
	req_send_later(wait, "GET", l->path, look_done, l);
}

void
unknown_creates(struct key *k, const struct owner *o, const cJSON *labels,
    unknown_fn then, void *arg)
{
	struct look *l = calloc(1, sizeof *l);
	char *sel = selector(labels);

	if (l == NULL || sel == NULL || asprintf(&l->path,
	    "/api/v1/namespaces/%s/pods?labelSelector=%s", o->ns, sel) < 0)
		rs_fatal(111, "unable to list pods: %s",
		    rs_strerror(RS_ENOMEM));
	free(sel);
	l->k = k;
	l->o = o;
	l->wait = LOOK_FIRST;
	l->then = then;
	l->arg = arg;
	k->nreq++;
	req_send("GET", l->path, NULL, NULL, look_done, l);
}
