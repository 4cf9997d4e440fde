/* create.c: pod creation as upstream manageReplicas does it. The pods go
 * out in slow-start batches of 1, 2, 4, ... each sent in parallel: a quota
 * or admission webhook that refuses every pod is found out by one request,
 * not by hundreds (nor hundreds of FailedCreate events). After the first
 * batch with a failure no more batches start, and the creation expectation
 * rs-sync raised is lowered once for every pod not created, since no watch
 * event will ever account for them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "json.h"
#include "log.h"

struct create {
	struct key *k;
	struct intent *in;
	char *path, *body;
	long total, started, ok, batch, left;
	long unknown;                  /* failed, but may have made a pod */
	int batch_failed;
	char *first_err;
};

/* validation.IsDNS1123Subdomain */
static int
dns_subdomain(const char *s)
{
	size_t n = strlen(s), i, lab = 0;

	if (n == 0 || n > 253)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (c == '.') {
			if (lab == 0 || s[i - 1] == '-')
				return 0;
			lab = 0;
		} else if (alnum || (c == '-' && lab > 0)) {
			lab++;
		} else {
			return 0;
		}
	}
	return s[n - 1] != '-' && s[n - 1] != '.';
}

/* getPodsPrefix: "<owner>-" if that is a valid generateName (checked as
 * ValidatePodName(prefix, true) does: the trailing dash masked the way
 * maskTrailingDash does), else the owner name alone. */
static char *
pods_prefix(const char *owner)
{
	size_t n = strlen(owner);
	char *prefix = malloc(n + 2), *masked;
	int ok;

	if (prefix == NULL)
		return NULL;
	memcpy(prefix, owner, n);
	prefix[n] = '-';
	prefix[n + 1] = '\0';
	if ((masked = strdup(prefix)) == NULL) {
		free(prefix);
		return NULL;
	}
	if (n + 1 > 1) {
		/* the upstream quirk: drops two characters, appends one */
		masked[n - 1] = 'a';
		masked[n] = '\0';
	}
	ok = dns_subdomain(masked);
	free(masked);
	if (!ok)
		prefix[n] = '\0';
	return prefix;
}

static int
nonempty_object(const cJSON *o)
{
	return cJSON_IsObject(o) && o->child != NULL;
}

/* GetPodFromTemplate: the template's labels, annotations, finalizers and
 * spec; generateName; the controllerRef. */
static char *
pod_body(const struct intent *in, const char *prefix)
{
	const cJSON *tm = cJSON_GetObjectItemCaseSensitive(in->tmpl,
	    "metadata");
	const cJSON *labels = rs_json_get(tm, "labels", NULL);
	const cJSON *ann = rs_json_get(tm, "annotations", NULL);
	const cJSON *fin = rs_json_get(tm, "finalizers", NULL);
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(in->tmpl, "spec");
	cJSON *pod = cJSON_CreateObject(), *m, *refs, *ref;
	char *s = NULL;

	if (pod == NULL)
		return NULL;
	cJSON_AddStringToObject(pod, "kind", "Pod");
	cJSON_AddStringToObject(pod, "apiVersion", "v1");
	if ((m = cJSON_AddObjectToObject(pod, "metadata")) == NULL)
		goto out;
	cJSON_AddStringToObject(m, "generateName", prefix);
	cJSON_AddItemToObject(m, "labels", cJSON_Duplicate(labels, 1));
	if (nonempty_object(ann))
		cJSON_AddItemToObject(m, "annotations", cJSON_Duplicate(ann, 1));
	if (cJSON_IsArray(fin) && cJSON_GetArraySize(fin) > 0)
		cJSON_AddItemToObject(m, "finalizers", cJSON_Duplicate(fin, 1));
	if ((refs = cJSON_AddArrayToObject(m, "ownerReferences")) == NULL ||
	    (ref = cJSON_CreateObject()) == NULL)
		goto out;
	cJSON_AddItemToArray(refs, ref);
	cJSON_AddStringToObject(ref, "apiVersion", in->owner.api_version);
	cJSON_AddStringToObject(ref, "kind", in->owner.kind);
	cJSON_AddStringToObject(ref, "name", in->owner.name);
	cJSON_AddStringToObject(ref, "uid", in->owner.uid);
	cJSON_AddTrueToObject(ref, "controller");
	cJSON_AddTrueToObject(ref, "blockOwnerDeletion");
	cJSON_AddItemToObject(pod, "spec", spec ? cJSON_Duplicate(spec, 1) :
	    cJSON_CreateObject());
	s = rs_json_print(pod);
out:
	cJSON_Delete(pod);
	return s;
}

static void
create_free(struct create *c)
{
	intent_free(c->in);
	free(c->path);
	cJSON_free(c->body);
	free(c->first_err);
	free(c);
}

/* The end of the step: expectations for pods never created, the failure
 * for the ReplicaFailure condition. */
static void
create_end(struct create *c)
{
	long skipped = c->total - c->ok;

	if (skipped > 0) {
		rs_info(2, "%s: slow-start failure: skipping creation of %ld "
		    "pods, decrementing expectations", c->k->name, skipped);
		if (!app.dry_run)
			fx_lower_creations(c->k->name, skipped);
	}
	if (c->first_err != NULL)
		key_fail(c->k, "FailedCreate", c->first_err);
}

static void send_batch(struct create *c);

static void
create_finish(void *arg)
{
	struct create *c = arg;
	struct key *k = c->k;

	create_end(c);
	create_free(c);
	key_step_done(k);
}

static void
create_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct create *c = arg;
	const struct owner *o = &c->in->owner;
	char buf[128];

	if (rc == RS_OK) {
		struct answer_meta m;

		c->ok++;
		c->k->moved++;
		/* only the version and name are wanted: scanned, no tree */
		answer_meta(resp, &m);
		if (m.has_rv)
			key_wrote_rv(c->k, o, "pods", m.rv);
		if (m.has_name) {
			rs_info(4, "%s: created pod %s/%s", c->k->name, o->ns,
			    m.name);
			event_record(o, "Normal", "SuccessfulCreate",
			    "Created pod: %s", m.name);
		}
	} else if (req_has_cause(resp, "NamespaceTerminating")) {
		/* every create would fail: nothing to do, nothing to retry */
		c->ok++;
		rs_info(2, "%s: namespace %s is terminating", c->k->name, o->ns);
	} else {
		const char *msg = req_errmsg(rc, resp, buf, sizeof buf);

		if (req_unknown(rc, resp))
			c->unknown++;
		rs_warn("%s: unable to create a pod: %s", c->k->name, msg);
		event_record(o, "Warning", "FailedCreate", "Error creating: %s",
		    msg);
		c->batch_failed = 1;
		if (c->first_err == NULL)
			c->first_err = strdup(msg);
	}
	if (--c->left > 0)
		return;
	if (!c->batch_failed && c->started < c->total) {
		long rest = c->total - c->started;

		c->batch = 2 * c->batch < rest ? 2 * c->batch : rest;
		send_batch(c);
		return;
	}
	if (c->unknown > 0) {
		unknown_creates(c->k, o, rs_json_get(c->in->tmpl, "metadata",
		    "labels", NULL), create_finish, c);
		return;
	}
	create_finish(c);
}

static void
send_batch(struct create *c)
{
	long i;

	rs_info(2, "%s: creating a batch of %ld pods (%ld of %ld started "
	    "before)", c->k->name, c->batch, c->started, c->total);
	c->left = c->batch;
	c->started += c->batch;
	for (i = 0; i < c->batch; i++) {
		c->k->nreq++;
		req_send_borrowed("POST", c->path, NULL, c->body,
		    create_done, c);
	}
}

int
create_start(struct key *k, struct intent *in)
{
	struct create *c = calloc(1, sizeof *c);
	const cJSON *labels;
	char *prefix;

	if (c == NULL)
		goto oom;
	c->k = k;
	c->in = in;
	c->total = in->count;
	if (c->total == 0) {
		create_free(c);
		return 0;
	}
	rs_info(2, "%s: too few replicas: creating %ld", k->name, c->total);
	labels = rs_json_get(in->tmpl, "metadata", "labels", NULL);
	if (!nonempty_object(labels)) {
		/* upstream refuses before any request, for every pod */
		c->first_err = strdup("unable to create pods, no labels");
		rs_warn("%s: %s", k->name, c->first_err);
		create_end(c);
		create_free(c);
		return 0;
	}
	if ((prefix = pods_prefix(in->owner.name)) == NULL)
		goto oom;
	c->body = pod_body(in, prefix);
	free(prefix);
	if (c->body == NULL ||
	    asprintf(&c->path, "/api/v1/namespaces/%s/pods?fieldManager="
	    RS_FIELD_MANAGER, in->owner.ns) < 0)
		goto oom;
	c->batch = 1;            /* SlowStartInitialBatchSize */
	send_batch(c);
	return 1;
oom:
	rs_fatal(111, "unable to create pods: %s", rs_strerror(RS_ENOMEM));
}
