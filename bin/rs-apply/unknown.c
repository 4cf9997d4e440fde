/* unknown.c: writes of unknown outcome. A create or delete that was sent
 * and got no answer (the connection reset or timed out after it went
 * out, or a 5xx) may have been carried out all the same. Upstream takes
 * it as failed: a create's expectation is lowered, a delete's observed,
 * so the next sync may act again, and if it runs before the pods stream
 * has brought the outcome, it creates a pod too many (or deletes one).
 * So before the step ends the server is asked, by a read sent after the
 * failure:
 *  - creates: the owner's pods are listed (a quorum read) and the newest
 *    resourceVersion of those it controls is recorded as a version
 *    written for pods: rs-sync's stale-cache guard holds the next sync
 *    until its stream has reached it, so a pod the create made is in its
 *    cache by then. The expectation is lowered, as upstream does.
 *  - deletes: the pod is read. Gone, or being deleted, and the stream
 *    will bring that deletion: its expectation is left for rs-sync to
 *    observe. There, unchanged: observed here, as for any failure.
 * A read that fails for want of the server is sent again, with a short
 * backoff, until it is answered: the key is not reported, so not synced
 * again, meanwhile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "featuregate.h"
#include "json.h"
#include "log.h"
#include "ownerref.h"
#include "selector.h"

#define LOOK_FIRST 0.2          /* s: the first wait after a failed list */
#define LOOK_MAX   2.0          /* s: the longest */

struct look {
	struct key *k;
	char *path;
	double wait;
	look_fn fn;
	void *arg;
};

/* The template's labels as a selector, escaped for the query; NULL when
 * they make none. */
static char *
selector(const cJSON *labels)
{
	struct rs_selector *sel = NULL;
	char why[128], *s = NULL, *esc = NULL;

	if (rs_selector_from_map(labels, &sel, why, sizeof why) == RS_OK &&
	    rs_selector_string(sel, &s) == RS_OK && s[0] != '\0')
		esc = rs_kube_escape(s);
	free(s);
	rs_selector_free(sel);
	return esc;
}

static int
controlled_by(const cJSON *pod, const char *uid)
{
	const char *ref = rs_json_str(rs_controller_ref(pod), "uid", NULL);

	return ref != NULL && strcmp(ref, uid) == 0;
}

static void
look_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct look *l = arg;
	char buf[128];
	double wait;

	if (rc == RS_OK || app.stopping || (resp != NULL && resp->code != 0 &&
	    resp->code != 429 && resp->code < 500)) {
		/* answered; or no time left: the pipeline starts again with
		 * a relist */
		l->fn(l->arg, rc, resp);
		free(l->path);
		free(l);
		return;
	}
	wait = l->wait;
	if (resp != NULL && resp->status.retry_after > wait)
		wait = resp->status.retry_after;
	rs_info(2, "%s: unable to learn the outcome of a write: GET %s: %s: "
	    "again in %.1fs", l->k->name, l->path, req_errmsg(rc, resp, buf,
	    sizeof buf), wait);
	l->wait = 2 * l->wait < LOOK_MAX ? 2 * l->wait : LOOK_MAX;
	req_send_later(wait, "GET", l->path, look_done, l);
}

void
look(struct key *k, char *path, look_fn fn, void *arg)
{
	struct look *l = calloc(1, sizeof *l);

	if (l == NULL)
		rs_fatal(111, "unable to send GET %s: %s", path,
		    rs_strerror(RS_ENOMEM));
	l->k = k;
	l->path = path;
	l->wait = LOOK_FIRST;
	l->fn = fn;
	l->arg = arg;
	k->nreq++;
	req_send("GET", path, NULL, NULL, look_done, l);
}

struct listed {
	struct key *k;
	const struct owner *o;        /* the step's, alive until then runs */
	unknown_fn then;
	void *arg;
};

/* The versions of the owner's pods; how many there were. */
static size_t
listed_record(struct listed *l, const struct rs_kresp *resp)
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
listed(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct listed *l = arg;
	unknown_fn then = l->then;
	void *then_arg = l->arg;
	char buf[128];

	if (rc == RS_OK)
		rs_info(2, "%s: a create's outcome is unknown: %zu pods of %s "
		    "listed, the next sync waits for its stream to reach them",
		    l->k->name, listed_record(l, resp), l->o->name);
	else
		rs_warn("%s: unable to list its pods after a create of unknown "
		    "outcome: %s: its next sync may miss a pod that create "
		    "made", l->k->name, req_errmsg(rc, resp, buf, sizeof buf));
	free(l);
	then(then_arg);
}

void
unknown_creates(struct key *k, const struct owner *o, const cJSON *labels,
    unknown_fn then, void *arg)
{
	struct listed *l;
	char *sel, *path;

	/* without the guard, nothing would wait for what the list says */
	if (!rs_feature_enabled(RS_FEATURE_STALE_CONSISTENCY_RS)) {
		then(arg);
		return;
	}
	if ((sel = selector(labels)) == NULL) {
		rs_warn("%s: the template's labels make no selector: its next "
		    "sync may miss a pod a create of unknown outcome made",
		    k->name);
		then(arg);
		return;
	}
	l = calloc(1, sizeof *l);
	if (l == NULL || asprintf(&path,
	    "/api/v1/namespaces/%s/pods?labelSelector=%s", o->ns, sel) < 0)
		rs_fatal(111, "unable to list pods: %s",
		    rs_strerror(RS_ENOMEM));
	free(sel);
	l->k = k;
	l->o = o;
	l->then = then;
	l->arg = arg;
	look(k, path, listed, l);
}
