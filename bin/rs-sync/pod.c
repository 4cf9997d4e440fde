/* pod.c: a pod's cache entry (cache.h), read from its JSON text in place.
 *
 * At a list of 100,000 pods a tree per pod was half of rs-sync's time:
 * its allocations, and name look-ups by strcmp. The text is walked once
 * per object instead (rs_jscan_pick), and only the strings a pod keeps are
 * unescaped; what it reads is what the tree gave (scan.h). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "clock.h"
#include "intern.h"
#include "jscan.h"
#include "json.h"
#include "log.h"
#include "scan.h"

#define DELETION_COST "controller.kubernetes.io/pod-deletion-cost"
#define KEY_MAX 512

/* Whether v is the string s. */
static int
is(const char *buf, struct rs_jspan v, const char *s)
{
	return rs_jscan_type(buf, v) == RS_JSTRING && rs_jscan_keyeq(buf, v, s);
}

static double
time_of(const char *buf, struct rs_jspan v)
{
	const char *s = scan_str(buf, v);
	double t;

	if (s == NULL || rs_parse_rfc3339(s, &t) < 0)
		return 0;
	return t;
}

/* What a pod is read for, each the first member of its name. */
enum { P_METADATA, P_SPEC, P_STATUS, P_N };
static const char *const pod_names[P_N] = { "metadata", "spec", "status" };
enum { M_NAMESPACE, M_NAME, M_UID, M_RV, M_CREATED, M_DELETED, M_LABELS,
    M_ANNOTATIONS, M_OWNERS, M_N };
static const char *const meta_names[M_N] = { "namespace", "name", "uid",
    "resourceVersion", "creationTimestamp", "deletionTimestamp", "labels",
    "annotations", "ownerReferences" };
enum { S_NODE, S_INITS, S_N };
static const char *const spec_names[S_N] = { "nodeName", "initContainers" };
enum { T_PHASE, T_CONDITIONS, T_STATUSES, T_INIT_STATUSES, T_N };
static const char *const status_names[T_N] = { "phase", "conditions",
    "containerStatuses", "initContainerStatuses" };
struct pod_text {
	const char *buf;
	struct rs_jspan meta[M_N], spec[S_N], status[T_N];
};

static void
pod_text_read(struct pod_text *t, const char *buf, struct rs_jspan obj)
{
	struct rs_jspan top[P_N];

	t->buf = buf;
	(void)rs_jscan_pick(buf, obj, pod_names, top, P_N);
	(void)rs_jscan_pick(buf, top[P_METADATA], meta_names, t->meta, M_N);
	(void)rs_jscan_pick(buf, top[P_SPEC], spec_names, t->spec, S_N);
	(void)rs_jscan_pick(buf, top[P_STATUS], status_names, t->status, T_N);
}

/* helper.GetDeletionCostFromPodAnnotations: an int32, 0 when absent or bad. */
static int32_t
deletion_cost(const struct pod_text *t)
{
	struct rs_jspan v;
	const char *s = NULL;
	char *end;
	long long c;

	if (rs_jscan_find(t->buf, t->meta[M_ANNOTATIONS], DELETION_COST,
	    &v) == RS_OK)
		s = scan_str(t->buf, v);
	/* as upstream: no sign but '-', no leading zero, no blank */
	if (s == NULL || !(s[0] == '-' || (s[0] >= '1' && s[0] <= '9') ||
	    strcmp(s, "0") == 0))
		return 0;
	c = strtoll(s, &end, 10);
	if (*end != '\0' || c < INT32_MIN || c > INT32_MAX)
		return 0;
	return (int32_t)c;
}

/* The most restarts an init container status named name shows. */
static int32_t
init_restarts(const struct pod_text *t, const char *name)
{
	static const char *const names[] = { "name", "restartCount" };
	struct rs_jspan st, f[2];
	struct rs_jiter it;
	int32_t max = 0;
	long long r;

	if (!scan_values(&it, t->buf, t->status[T_INIT_STATUSES]))
		return 0;
	while (rs_jscan_value_next(&it, &st) == RS_OK)
		if (rs_jscan_pick(t->buf, st, names, f, 2) == RS_OK &&
		    is(t->buf, f[0], name) && (r = scan_int(t->buf, f[1], 0)) > max)
			max = (int32_t)r;
	return max;
}

/* Init containers with restartPolicy Always are sidecars: their restarts
 * break ties after the regular containers'. */
static int32_t
sidecar_restarts(const struct pod_text *t)
{
	static const char *const names[] = { "restartPolicy", "name" };
	struct rs_jspan c, f[2];
	struct rs_jiter it;
	const char *name;
	int32_t max = 0, r;

	if (!scan_values(&it, t->buf, t->spec[S_INITS]))
		return 0;
	while (rs_jscan_value_next(&it, &c) == RS_OK)
		if (rs_jscan_pick(t->buf, c, names, f, 2) == RS_OK &&
		    is(t->buf, f[0], "Always") &&
		    (name = scan_str(t->buf, f[1])) != NULL &&
		    (r = init_restarts(t, name)) > max)
			max = r;
	return max;
}

static void
pod_status(struct pod *p, const struct pod_text *t)
{
	static const char *const cnames[] = { "type", "status",
	    "lastTransitionTime" };
	const struct rs_jspan phase = t->status[T_PHASE];
	struct rs_jspan c, f[3];
	struct rs_jiter it;
	long long n;

	p->phase_rank = 0;
	if (is(t->buf, phase, "Unknown"))
		p->phase_rank = 1;
	else if (is(t->buf, phase, "Running"))
		p->phase_rank = 2;
	p->terminal = is(t->buf, phase, "Succeeded") ||
	    is(t->buf, phase, "Failed");
	if (scan_values(&it, t->buf, t->status[T_CONDITIONS]))
		while (rs_jscan_value_next(&it, &c) == RS_OK) {
			if (rs_jscan_pick(t->buf, c, cnames, f, 3) != RS_OK ||
			    !is(t->buf, f[0], "Ready"))
				continue;
			p->ready = is(t->buf, f[1], "True");
			if (p->ready)
				p->ready_since = time_of(t->buf, f[2]);
			break;
		}
	if (scan_values(&it, t->buf, t->status[T_STATUSES]))
		while (rs_jscan_value_next(&it, &c) == RS_OK)
			if (rs_jscan_find(t->buf, c, "restartCount", &f[0]) ==
			    RS_OK && (n = scan_int(t->buf, f[0], 0)) > p->restarts)
				p->restarts = (int32_t)n;
	p->sidecar_restarts = sidecar_restarts(t);
}

/* The values pods share: one reference each on the intern pool's copy. */
static rs_code
pod_share(struct pod *p, const struct pod_text *t, const char *ns, char *why,
    size_t len)
{
	const char *node = scan_str(t->buf, t->spec[S_NODE]);
	const char *r[3];
	struct rs_labels *l;
	rs_code rc;

	scan_controller_ref(t->buf, t->meta[M_OWNERS], r);
	if ((p->ns = intern_str(ns)) == NULL ||
	    (p->node = intern_str(node ? node : "")) == NULL)
		return RS_ENOMEM;
	/* a controllerRef without its kind, name or UID counts as none */
	if (r[0] && r[1] && r[2]) {
		if ((p->ctrl_kind = intern_strs(r, 3)) == NULL)
			return RS_ENOMEM;
		p->ctrl_name = p->ctrl_kind + strlen(r[0]) + 1;
		p->ctrl_uid = p->ctrl_name + strlen(r[1]) + 1;
	}
	rc = rs_labels_from_jscan(t->buf, t->meta[M_LABELS], &l, why, len);
	if (rc != RS_OK)
		return rc;
	p->labels = intern_labels(l);
	rs_labels_free(l);
	return p->labels ? RS_OK : RS_ENOMEM;
}

/* The namespace and name of the pod, which make its key. */
static rs_code
names_of(const struct pod_text *t, const char **ns, const char **name,
    char *why, size_t len)
{
	*ns = scan_str(t->buf, t->meta[M_NAMESPACE]);
	*name = scan_str(t->buf, t->meta[M_NAME]);
	if (*ns == NULL || *name == NULL)
		return rs_why(RS_EPARSE, why, len,
		    "pod without metadata.namespace or metadata.name");
	if (strlen(*ns) + 1 + strlen(*name) + 1 > KEY_MAX)
		return rs_why(RS_EPARSE, why, len, "pod key too long");
	return RS_OK;
}

rs_code
pod_key(const char *buf, struct rs_jspan obj, char *key, size_t keylen)
{
	struct pod_text t;
	const char *ns, *name;
	char why[64];
	rs_code rc;

	if ((rc = scan_reset(obj.end - obj.off + 1)) != RS_OK)
		return rc;
	pod_text_read(&t, buf, obj);
	if ((rc = names_of(&t, &ns, &name, why, sizeof why)) != RS_OK)
		return rc;
	if ((size_t)snprintf(key, keylen, "%s/%s", ns, name) >= keylen)
		return RS_ETOOBIG;
	return RS_OK;
}

rs_code
pod_decode(const char *buf, struct rs_jspan obj, struct pod **out, char *why,
    size_t len)
{
	struct pod_text t;
	const char *ns, *name, *uid, *rv;
	size_t nl, kl, ul, rl;
	struct pod *p;
	rs_code rc;

	if ((rc = scan_reset(obj.end - obj.off + 1)) != RS_OK)
		return rc;
	pod_text_read(&t, buf, obj);
	if ((rc = names_of(&t, &ns, &name, why, len)) != RS_OK)
		return rc;
	uid = scan_str(buf, t.meta[M_UID]);
	rv = scan_str(buf, t.meta[M_RV]);
	nl = strlen(ns);
	kl = nl + 1 + strlen(name) + 1;
	ul = strlen(uid ? uid : "") + 1;
	rl = strlen(rv ? rv : "") + 1;
	/* one block per pod, no padding after the fields: cached pods are the
	 * controller's memory */
	if ((p = calloc(1, offsetof(struct pod, key) + kl + ul + rl)) == NULL)
		return RS_ENOMEM;
	memcpy(p->key, ns, nl);
	p->key[nl] = '/';
	p->name = memcpy(p->key + nl + 1, name, kl - nl - 1);
	p->uid = memcpy(p->key + kl, uid ? uid : "", ul);
	p->rv = memcpy(p->key + kl + ul, rv ? rv : "", rl);
	if ((rc = pod_share(p, &t, ns, why, len)) != RS_OK) {
		pod_free(p);
		return rc;
	}
	p->created = time_of(buf, t.meta[M_CREATED]);
	/* present, even unparsable or null: still being deleted */
	p->deleted = rs_jscan_type(buf, t.meta[M_DELETED]) != RS_JNONE;
	p->cost = deletion_cost(&t);
	pod_status(p, &t);
	*out = p;
	return RS_OK;
}

void
pod_free(struct pod *p)
{
	if (p == NULL)
		return;
	intern_drop(p->ns);
	intern_drop(p->node);
	intern_drop(p->ctrl_kind);
	intern_drop(p->labels);
	free(p);
}
