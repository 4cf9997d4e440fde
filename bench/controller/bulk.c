/* bulk: the controller benchmark's own API client. It makes the load the
 * scenarios start from, and it is "the physical limit": the writes a
 * controller must make for a scenario, sent by a plain concurrent client
 * with no controller logic (no cache, no queue, no expectations), as fast
 * as the API server takes them. At most --inflight requests are in flight,
 * over libcommon's client (rs_kube_submit: curl multi, HTTP/2), under its
 * --qps/--burst token bucket (default: none). --settle: after a wake-up
 * that brought answers, wait MS before the next (libcommon's settle, as
 * rs-apply --batch; default 0).
 *
 *   bulk [--kubeconfig F] [--qps Q] [--burst B] [--inflight W] [--settle MS]
 *       -n NS CMD
 *   rs PREFIX COUNT REPLICAS [--pods] [--status | --put-status]
 *       ReplicaSets PREFIX-0 .. PREFIX-(COUNT-1) of REPLICAS pods (label
 *       app=NAME); --pods also creates their pods, owned by them (as a
 *       controller would); --status then writes each one's status (a
 *       merge patch); --put-status writes it as rs-apply does, a PUT of
 *       the object as created (its resourceVersion, no spec, no
 *       managedFields) with the status set: the request of the write's
 *       floor (bench/controller/floor).
 *   scale NAME REPLICAS [--pods] [--status]
 *       sets spec.replicas; --pods also deletes the surplus pods (listed
 *       first), --status then writes the status.
 *   ready [--status]
 *       marks every pod of NS Running and Ready through /status (the event
 *       storm); --status then writes every owner's status.
 *   churn FRACTION SEED [--replace] [--status]
 *       deletes that fraction of the pods of NS, chosen at random with
 *       SEED; --replace creates as many for the same owners, --status then
 *       writes the owners' statuses.
 *   wait COUNT READY [--timeout S] [--armed]
 *       watches the ReplicaSets of NS until there are COUNT, every one with
 *       status.replicas == spec.replicas and observedGeneration ==
 *       generation, and their readyReplicas add up to READY: reached only
 *       after having been false once, so that a state from before the
 *       action does not count. --armed: a state final from the start
 *       counts (the wait begins after the action, at a fault's end).
 *   kick COUNT [--pause MS] [--timeout S]
 *       COUNT times: deletes a pod of NS, then waits until a watch on the
 *       pods of NS sees a new one (the controller's replacement) and
 *       pauses MS (default 50) before the next delete; the victim is the
 *       newest pod. For the reaction benchmark (bench/reaction/run), which
 *       reads the latencies from the API server's audit log.
 *
 * Output on stdout, one "name value..." a line: "t0 T" (wall-clock seconds
 * when the first write was sent, after any listing), "t1 T" (when the last
 * answer came), "deleted N" (churn), "req VERB RESOURCE N" for each kind of
 * request sent (LIST and WATCH as the API server's metrics name them, so
 * that the caller can subtract them); wait prints "watching" once its watch
 * is about to open, then "converged T"; kick prints "kick_ms X" for each
 * delete (from its answer to the new pod seen), then "kicks N". Exit 0, 1
 * when a request was refused, 111 on transport failures, 100 on usage.
 * Each batch of requests sent in parallel also prints "batch VERB RESOURCE
 * N CPU_S WALL_S": its N requests (retries not counted) and the CPU
 * (utime + stime, getrusage) and wall time bulk spent from its first send
 * to its last answer: the floor of a request's CPU for a plain client
 * (bench/controller/floor). */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "code.h"
#include "json.h"
#include "kube.h"
#include "kubeconfig.h"
#include "log.h"
#include "strmap.h"

#define IMAGE "registry.k8s.io/pause:3.10"
#define TRIES 5
#define TRIES_429 1000          /* TooManyRequests: the server's own
                                   in-flight limit, below --inflight */

static const char usage_text[] =
    "usage: bulk [--kubeconfig F] [--qps Q] [--burst B] [--inflight W] "
    "[--settle MS] -n NS CMD\n"
    "  rs PREFIX COUNT REPLICAS [--pods] [--status | --put-status]\n"
    "  scale NAME REPLICAS [--pods] [--status]\n"
    "  ready [--status]\n"
    "  churn FRACTION SEED [--replace] [--status]\n"
    "  wait COUNT READY [--timeout S] [--armed]\n"
    "  kick COUNT [--pause MS] [--timeout S]\n";

struct req {
	char *method, *path, *body;
	const char *ctype;
	const char *verb, *res;        /* for the tally */
	int tries, tries429;
	int id;                        /* for the answer handler */
};

struct tally {
	const char *verb, *res;
	long n;
};

struct bulk;
typedef void (*answer_fn)(struct bulk *b, struct req *r, const char *body);

struct bulk {
	struct rs_kube *k;
	const char *ns;
	int window;
	struct tally tally[16];
	int ntally;
	double t0, t1;
	/* the batch running */
	struct req *v;
	size_t n, next;
	int inflight, *retry, nretry;
	answer_fn answer;
	int failed;
	rs_code last;
	char why[1200];
};

/* Pods of the namespace, as the commands that list them need them. */
struct pinfo {
	char *name, *owner, *owner_uid;
};

/* Owners: a ReplicaSet and what a status write needs. */
struct owner {
	char *name, *uid;
	long pods, ready;
	int touched;
};

static void
usage(int code)
{
	fputs(usage_text, code ? stderr : stdout);
	exit(code);
}

static void *
xmalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (p == NULL)
		rs_fatal(111, "unable to allocate: %s", strerror(ENOMEM));
	return p;
}

static char *
xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
xprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		rs_fatal(111, "unable to allocate: %s", strerror(ENOMEM));
	return s;
}

static void
count(struct bulk *b, const char *verb, const char *res)
{
	for (int i = 0; i < b->ntally; i++)
		if (strcmp(b->tally[i].verb, verb) == 0 &&
		    strcmp(b->tally[i].res, res) == 0) {
			b->tally[i].n++;
			return;
		}
	if (b->ntally == (int)(sizeof b->tally / sizeof b->tally[0]))
		return;
	b->tally[b->ntally++] = (struct tally){ verb, res, 1 };
}

static void
print_tally(const struct bulk *b)
{
	for (int i = 0; i < b->ntally; i++)
		printf("req %s %s %ld\n", b->tally[i].verb, b->tally[i].res,
		    b->tally[i].n);
	fflush(stdout);
}

/* 429, 5xx and transport failures are tried again: the load must be
 * exactly what the scenario says, whatever the server's mood. */
static int
retryable(rs_code rc, const struct rs_kresp *resp)
{
	if (rc == RS_ENET || rc == RS_ETIMEOUT)
		return 1;
	return rc == RS_EAPI && (resp->code == 429 || resp->code >= 500);
}

/* rs_kube_submit hands back one pointer: a small record ties the request to
 * its batch. */
struct ticket {
	struct bulk *b;
	size_t i;
};

static void
ticket_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct ticket *t = arg;
	struct bulk *b = t->b;
	struct req *r = &b->v[t->i];

	b->inflight--;
	b->t1 = rs_wall_now();
	if (rc == RS_OK) {
		if (b->answer)
			b->answer(b, r, resp->body);
	} else if (rc == RS_EAPI && resp->code == 429 &&
	    ++r->tries429 < TRIES_429) {
		/* a depth over the server's --max-requests-inflight: the
		 * surplus is refused at once and sent again (counted again) */
		b->retry[b->nretry++] = (int)t->i;
	} else if (retryable(rc, resp) && ++r->tries < TRIES) {
		b->retry[b->nretry++] = (int)t->i;
	} else {
		b->failed++;
		b->last = rc;
		snprintf(b->why, sizeof b->why, "%s %s: %s%s%s", r->method,
		    r->path, rc == RS_EAPI || rc == RS_ENOTFOUND ?
		    resp->status.reason : rs_strerror(rc),
		    resp->status.message[0] ? ": " : "", resp->status.message);
	}
	free(t);
}

static void
submit(struct bulk *b, size_t i)
{
	struct req *r = &b->v[i];
	struct ticket *t = xmalloc(sizeof *t);

	t->b = b;
	t->i = i;
	if (b->t0 == 0)
		b->t0 = rs_wall_now();
	count(b, r->verb, r->res);
	if (rs_kube_submit(b->k, r->method, r->path, r->ctype, r->body,
	    r->body ? strlen(r->body) : 0, ticket_done, t) != RS_OK)
		rs_fatal(111, "unable to submit: %s", strerror(ENOMEM));
	b->inflight++;
}

static double
cpu_now(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Sends v[0..n) with at most b->window in flight; frees them. */
static void
run_batch(struct bulk *b, struct req *v, size_t n, answer_fn answer)
{
	double cpu0 = cpu_now(), wall0 = rs_wall_now();
	const char *verb = n > 0 ? v[0].verb : NULL;
	const char *res = n > 0 ? v[0].res : NULL;

	b->v = v;
	b->n = n;
	b->next = 0;
	b->answer = answer;
	b->retry = xmalloc(n * sizeof *b->retry);
	b->nretry = 0;
	while (b->next < n || b->nretry > 0 || b->inflight > 0) {
		while (b->inflight < b->window && b->nretry > 0)
			submit(b, (size_t)b->retry[--b->nretry]);
		while (b->inflight < b->window && b->next < n)
			submit(b, b->next++);
		rs_kube_run(b->k, 200, -1);
	}
	if (n > 0)
		printf("batch %s %s %zu %.6f %.6f\n", verb, res, n,
		    cpu_now() - cpu0, rs_wall_now() - wall0);
	free(b->retry);
	for (size_t i = 0; i < n; i++) {
		free(v[i].method);
		free(v[i].path);
		free(v[i].body);
	}
	free(v);
	if (b->failed)
		rs_fatal(b->last == RS_EAPI || b->last == RS_ENOTFOUND ? 1 :
		    rs_exit_code(b->last), "%d requests failed, the last: %s",
		    b->failed, b->why);
}

static struct req
mkreq(const char *method, char *take_path, const char *ctype, char *take_body,
    const char *verb, const char *res, int id)
{
	return (struct req){ .method = xprintf("%s", method),
	    .path = take_path, .body = take_body, .ctype = ctype,
	    .verb = verb, .res = res, .id = id };
}

/* One blocking request, for reads outside the timed part. */
static cJSON *
get_json(struct bulk *b, const char *path, const char *verb, const char *res)
{
	struct rs_kresp resp;
	cJSON *o = NULL;
	rs_code rc;

	count(b, verb, res);
	rc = rs_kube_do(b->k, "GET", path, NULL, NULL, 0, &resp);
	if (rc != RS_OK)
		rs_fatal(rc == RS_EAPI || rc == RS_ENOTFOUND ? 1 :
		    rs_exit_code(rc), "unable to GET %s: %s: %s", path,
		    rc == RS_EAPI ? resp.status.reason : rs_strerror(rc),
		    resp.status.message);
	if (rs_json_parse(resp.body, resp.len, &o, NULL) != RS_OK)
		rs_fatal(111, "unable to parse the answer to GET %s", path);
	rs_kresp_free(&resp);
	return o;
}

/* Every pod of the namespace, in pages of 500. */
static struct pinfo *
list_pods(struct bulk *b, size_t *np)
{
	struct pinfo *v = NULL;
	size_t n = 0, cap = 0;
	char *cont = NULL;

	do {
		char *esc = cont ? rs_kube_escape(cont) : NULL;
		char *path = xprintf("/api/v1/namespaces/%s/pods?limit=500%s%s",
		    b->ns, esc ? "&continue=" : "", esc ? esc : "");
		cJSON *o = get_json(b, path, "LIST", "pods"), *it;
		const char *c;

		free(esc);
		free(path);
		cJSON_ArrayForEach(it, rs_json_get(o, "items", NULL)) {
			const cJSON *ref = cJSON_GetArrayItem(
			    rs_json_get(it, "metadata", "ownerReferences", NULL), 0);

			if (n == cap) {
				cap = cap ? cap * 2 : 1024;
				v = realloc(v, cap * sizeof *v);
				if (v == NULL)
					rs_fatal(111, "unable to allocate");
			}
			v[n].name = xprintf("%s",
			    rs_json_str(it, "metadata", "name", NULL));
			v[n].owner = ref ? xprintf("%s",
			    rs_json_str(ref, "name", NULL)) : NULL;
			v[n].owner_uid = ref ? xprintf("%s",
			    rs_json_str(ref, "uid", NULL)) : NULL;
			n++;
		}
		c = rs_json_str(o, "metadata", "continue", NULL);
		free(cont);
		cont = c && *c ? xprintf("%s", c) : NULL;
		cJSON_Delete(o);
	} while (cont);
	*np = n;
	return v;
}

static char *
rs_body(const char *ns, const char *name, long replicas)
{
	return xprintf("{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
	    "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
	    "\"spec\":{\"replicas\":%ld,"
	    "\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},"
	    "\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"" IMAGE
	    "\"}]}}}}", name, ns, replicas, name, name);
}

/* What a controller would send: the template, generateName, and the
 * controller reference. */
static char *
pod_body(const char *ns, const char *owner, const char *uid)
{
	return xprintf("{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"generateName\":\"%s-\",\"namespace\":\"%s\","
	    "\"labels\":{\"app\":\"%s\"},\"ownerReferences\":[{"
	    "\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"%s\","
	    "\"uid\":\"%s\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
	    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"" IMAGE
	    "\"}]}}", owner, ns, owner, owner, uid);
}

/* A controller's status of a ReplicaSet whose pods all carry the
 * template's labels. Every count is written, zeros included, since a merge
 * patch keeps what it does not name; terminatingReplicas too, as both
 * controllers report it on this release (no pod here lingers), so that a
 * controller starting on a cluster set up this way has nothing to write.
 * generation 0: observedGeneration not written. */
static cJSON *
status_json(long replicas, long ready, long generation)
{
	cJSON *st = cJSON_CreateObject();

	if (st == NULL ||
	    !cJSON_AddNumberToObject(st, "replicas", replicas) ||
	    !cJSON_AddNumberToObject(st, "fullyLabeledReplicas", replicas) ||
	    !cJSON_AddNumberToObject(st, "readyReplicas", ready) ||
	    !cJSON_AddNumberToObject(st, "availableReplicas", ready) ||
	    !cJSON_AddNumberToObject(st, "terminatingReplicas", 0) ||
	    (generation > 0 &&
	    !cJSON_AddNumberToObject(st, "observedGeneration", generation)))
		rs_fatal(111, "unable to allocate");
	return st;
}

/* The text of take, which it frees. run_batch frees a body with free(3):
 * cJSON allocates with malloc, as nothing here calls cJSON_InitHooks. */
static char *
print_take(cJSON *take)
{
	char *s = rs_json_print(take);

	if (s == NULL)
		rs_fatal(111, "unable to allocate");
	cJSON_Delete(take);
	return s;
}

/* A merge patch of the status (status_json's), as a controller's status
 * write. */
static struct req
status_req(const char *ns, const char *name, long replicas, long ready,
    long generation)
{
	cJSON *p = cJSON_CreateObject();

	if (p == NULL || !cJSON_AddItemToObject(p, "status",
	    status_json(replicas, ready, generation)))
		rs_fatal(111, "unable to allocate");
	return mkreq("PATCH", xprintf("/apis/apps/v1/namespaces/%s/"
	    "replicasets/%s/status", ns, name), "application/merge-patch+json",
	    print_take(p), "PATCH", "replicasets/status", 0);
}

/* rs */

struct rs_state {
	char **names, **uids;
	cJSON **objects;               /* as created, for --put-status */
	long count, replicas;
};

static struct rs_state *rs_st;

static void
rs_created(struct bulk *b, struct req *r, const char *body)
{
	(void)b;
	cJSON *o = NULL;
	const char *uid;

	if (body == NULL || rs_json_parse(body, strlen(body), &o, NULL) != RS_OK ||
	    (uid = rs_json_str(o, "metadata", "uid", NULL)) == NULL)
		rs_fatal(111, "unable to read the uid of %s", r->path);
	rs_st->uids[r->id] = xprintf("%s", uid);
	if (rs_st->objects != NULL)
		rs_st->objects[r->id] = o;
	else
		cJSON_Delete(o);
}

/* The PUT of a status write's floor: the object as created, status set as
 * status_req's, the fields rs-sync leaves out of a status intent left out
 * (spec: the server keeps its own on a status write; managedFields). The
 * body is made here, before the batch, as a plain client would have it. */
static struct req
put_status_req(const char *ns, const char *name, cJSON *take, long replicas,
    long generation)
{
	cJSON_DeleteItemFromObjectCaseSensitive(take, "spec");
	cJSON_DeleteItemFromObjectCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(take, "metadata"), "managedFields");
	cJSON_DeleteItemFromObjectCaseSensitive(take, "status");
	if (!cJSON_AddItemToObject(take, "status",
	    status_json(replicas, 0, generation)))
		rs_fatal(111, "unable to allocate");
	return mkreq("PUT", xprintf("/apis/apps/v1/namespaces/%s/"
	    "replicasets/%s/status", ns, name), NULL, print_take(take), "PUT",
	    "replicasets/status", 0);
}

static int
cmd_rs(struct bulk *b, int argc, char **argv)
{
	struct rs_state st;
	int pods = 0, status = 0, put = 0;
	struct req *v;
	size_t n;

	if (argc < 4)
		usage(100);
	for (int i = 4; i < argc; i++) {
		if (strcmp(argv[i], "--pods") == 0)
			pods = 1;
		else if (strcmp(argv[i], "--status") == 0)
			status = 1;
		else if (strcmp(argv[i], "--put-status") == 0)
			status = put = 1;
		else
			usage(100);
	}
	st.count = atol(argv[2]);
	st.replicas = atol(argv[3]);
	if (st.count < 1 || st.replicas < 0)
		usage(100);
	st.names = xmalloc(st.count * sizeof *st.names);
	st.uids = xmalloc(st.count * sizeof *st.uids);
	st.objects = put ? xmalloc(st.count * sizeof *st.objects) : NULL;
	rs_st = &st;
	v = xmalloc(st.count * sizeof *v);
	for (long i = 0; i < st.count; i++) {
		st.names[i] = xprintf("%s-%ld", argv[1], i);
		v[i] = mkreq("POST", xprintf("/apis/apps/v1/namespaces/%s/"
		    "replicasets", b->ns), NULL, rs_body(b->ns, st.names[i],
		    st.replicas), "POST", "replicasets", (int)i);
	}
	run_batch(b, v, st.count, rs_created);
	if (pods && st.replicas > 0) {
		n = (size_t)(st.count * st.replicas);
		v = xmalloc(n * sizeof *v);
		for (size_t i = 0; i < n; i++) {
			long o = (long)(i % st.count);

			v[i] = mkreq("POST", xprintf("/api/v1/namespaces/%s/pods",
			    b->ns), NULL, pod_body(b->ns, st.names[o], st.uids[o]),
			    "POST", "pods", 0);
		}
		run_batch(b, v, n, NULL);
	}
	if (status) {
		v = xmalloc(st.count * sizeof *v);
		for (long i = 0; i < st.count; i++)
			v[i] = put ? put_status_req(b->ns, st.names[i],
			    st.objects[i], pods ? st.replicas : 0, 1) :
			    status_req(b->ns, st.names[i],
			    pods ? st.replicas : 0, 0, 1);
		run_batch(b, v, st.count, NULL);
	}
	free(st.objects);
	for (long i = 0; i < st.count; i++) {
		free(st.names[i]);
		free(st.uids[i]);
	}
	free(st.names);
	free(st.uids);
	return 0;
}

/* Owners of the pods listed, with their pod counts. */
static struct owner *
owners_of(struct pinfo *p, size_t n, struct rs_strmap *map, size_t *nown)
{
	struct owner *v = xmalloc(n * sizeof *v);
	size_t k = 0;

	rs_strmap_init(map);
	for (size_t i = 0; i < n; i++) {
		struct owner *o;

		if (p[i].owner == NULL)
			continue;
		o = rs_strmap_get(map, p[i].owner);
		if (o == NULL) {
			o = &v[k++];
			o->name = p[i].owner;
			o->uid = p[i].owner_uid;
			if (rs_strmap_put(map, o->name, o, NULL) != RS_OK)
				rs_fatal(111, "unable to allocate");
		}
		o->pods++;
	}
	*nown = k;
	return v;
}

static void
free_pods(struct pinfo *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(p[i].name);
		free(p[i].owner);
		free(p[i].owner_uid);
	}
	free(p);
}

static int
cmd_scale(struct bulk *b, int argc, char **argv)
{
	struct pinfo *p = NULL;
	size_t np = 0, nd = 0, nown = 0;
	int pods = 0, status = 0;
	long replicas, generation = 0;
	struct req *v;
	struct rs_kresp resp;
	cJSON *o = NULL;
	char *path, *body;
	rs_code rc;

	if (argc < 3)
		usage(100);
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--pods") == 0)
			pods = 1;
		else if (strcmp(argv[i], "--status") == 0)
			status = 1;
		else
			usage(100);
	}
	replicas = atol(argv[2]);
	if (pods)
		p = list_pods(b, &np);
	path = xprintf("/apis/apps/v1/namespaces/%s/replicasets/%s", b->ns,
	    argv[1]);
	body = xprintf("{\"spec\":{\"replicas\":%ld}}", replicas);
	b->t0 = rs_wall_now();
	count(b, "PATCH", "replicasets");
	rc = rs_kube_do(b->k, "PATCH", path, "application/merge-patch+json",
	    body, strlen(body), &resp);
	b->t1 = rs_wall_now();
	if (rc != RS_OK)
		rs_fatal(1, "unable to PATCH %s: %s", path, resp.status.message);
	if (rs_json_parse(resp.body, resp.len, &o, NULL) == RS_OK)
		generation = rs_json_int(o, 0, "metadata", "generation", NULL);
	cJSON_Delete(o);
	rs_kresp_free(&resp);
	free(path);
	free(body);
	for (size_t i = 0; i < np; i++)
		if (p[i].owner && strcmp(p[i].owner, argv[1]) == 0)
			nown++;
	if (pods && (long)nown > replicas) {
		v = xmalloc((nown - (size_t)replicas) * sizeof *v);
		for (size_t i = 0; i < np && nown - nd > (size_t)replicas; i++)
			if (p[i].owner && strcmp(p[i].owner, argv[1]) == 0)
				v[nd++] = mkreq("DELETE", xprintf("/api/v1/"
				    "namespaces/%s/pods/%s", b->ns, p[i].name),
				    NULL, NULL, "DELETE", "pods", 0);
		run_batch(b, v, nd, NULL);
	}
	if (status) {
		v = xmalloc(sizeof *v);
		v[0] = status_req(b->ns, argv[1], replicas, 0, generation);
		run_batch(b, v, 1, NULL);
	}
	free_pods(p, np);
	return 0;
}

static int
cmd_ready(struct bulk *b, int argc, char **argv)
{
	struct pinfo *p;
	struct owner *own;
	struct rs_strmap map;
	size_t np, nown;
	struct req *v;
	char now[32];
	int status = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--status") == 0)
			status = 1;
		else
			usage(100);
	}
	p = list_pods(b, &np);
	rs_format_rfc3339(rs_wall_now(), now);
	v = xmalloc(np * sizeof *v);
	for (size_t i = 0; i < np; i++)
		v[i] = mkreq("PATCH", xprintf("/api/v1/namespaces/%s/pods/%s/"
		    "status", b->ns, p[i].name), "application/merge-patch+json",
		    xprintf("{\"status\":{\"phase\":\"Running\",\"conditions\":"
		    "[{\"type\":\"Ready\",\"status\":\"True\","
		    "\"lastTransitionTime\":\"%s\"}]}}", now), "PATCH",
		    "pods/status", 0);
	run_batch(b, v, np, NULL);
	if (status) {
		own = owners_of(p, np, &map, &nown);
		v = xmalloc(nown * sizeof *v);
		for (size_t i = 0; i < nown; i++)
			v[i] = status_req(b->ns, own[i].name, own[i].pods,
			    own[i].pods, 0);
		run_batch(b, v, nown, NULL);
		rs_strmap_free(&map);
		free(own);
	}
	free_pods(p, np);
	return 0;
}

/* xorshift64*: the same seed picks the same positions on every side. */
static uint64_t
next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static int
cmd_churn(struct bulk *b, int argc, char **argv)
{
	struct pinfo *p;
	struct owner *own;
	struct rs_strmap map;
	size_t np, nown, nd, *idx;
	int replace = 0, status = 0;
	uint64_t seed;
	double frac;
	struct req *v;

	if (argc < 3)
		usage(100);
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--replace") == 0)
			replace = 1;
		else if (strcmp(argv[i], "--status") == 0)
			status = 1;
		else
			usage(100);
	}
	frac = atof(argv[1]);
	seed = strtoull(argv[2], NULL, 10) * 2 + 1;
	if (frac <= 0 || frac > 1)
		usage(100);
	p = list_pods(b, &np);
	own = owners_of(p, np, &map, &nown);
	nd = (size_t)(frac * (double)np + 0.5);
	/* a partial Fisher-Yates shuffle: the first nd are the victims */
	idx = xmalloc(np * sizeof *idx);
	for (size_t i = 0; i < np; i++)
		idx[i] = i;
	for (size_t i = 0; i < nd; i++) {
		size_t j = i + (size_t)(next_rand(&seed) % (np - i)), t = idx[i];

		idx[i] = idx[j];
		idx[j] = t;
	}
	v = xmalloc(nd * sizeof *v);
	for (size_t i = 0; i < nd; i++) {
		struct pinfo *q = &p[idx[i]];
		struct owner *o = q->owner ? rs_strmap_get(&map, q->owner) : NULL;

		if (o) {
			o->ready++;       /* here: pods lost */
			o->touched = 1;
		}
		v[i] = mkreq("DELETE", xprintf("/api/v1/namespaces/%s/pods/%s",
		    b->ns, q->name), NULL, NULL, "DELETE", "pods", 0);
	}
	run_batch(b, v, nd, NULL);
	if (replace) {
		v = xmalloc(nd * sizeof *v);
		for (size_t i = 0; i < nd; i++) {
			struct pinfo *q = &p[idx[i]];

			v[i] = mkreq("POST", xprintf("/api/v1/namespaces/%s/pods",
			    b->ns), NULL, pod_body(b->ns, q->owner, q->owner_uid),
			    "POST", "pods", 0);
		}
		run_batch(b, v, nd, NULL);
	}
	if (status) {
		size_t k = 0;

		v = xmalloc(nown * sizeof *v);
		for (size_t i = 0; i < nown; i++)
			if (own[i].touched)
				v[k++] = status_req(b->ns, own[i].name, own[i].pods,
				    own[i].pods - own[i].ready, 0);
		run_batch(b, v, k, NULL);
	}
	printf("deleted %zu\n", nd);
	free(idx);
	rs_strmap_free(&map);
	free(own);
	free_pods(p, np);
	return 0;
}

/* wait */

struct rsw {
	char *name;
	int ok;
	long ready;
};

struct waiter {
	struct bulk *b;
	struct rs_strmap rs;
	long want, want_ready;
	long n, nok, ready;
	int armed, converged;
	char rv[64];
};

static int
converged(const struct waiter *w)
{
	return w->n == w->want && w->nok == w->n && w->ready == w->want_ready;
}

static void
forget(struct waiter *w, const char *name)
{
	struct rsw *r = rs_strmap_del(&w->rs, name);

	if (r == NULL)
		return;
	w->n--;
	w->nok -= r->ok;
	w->ready -= r->ready;
	free(r->name);
	free(r);
}

static void
observe(struct waiter *w, const cJSON *o, int deleted)
{
	const char *name = rs_json_str(o, "metadata", "name", NULL);
	const char *rv = rs_json_str(o, "metadata", "resourceVersion", NULL);
	struct rsw *r;

	if (rv)
		snprintf(w->rv, sizeof w->rv, "%s", rv);
	if (name == NULL)
		return;
	forget(w, name);
	if (deleted)
		return;
	r = xmalloc(sizeof *r);
	r->name = xprintf("%s", name);
	r->ready = rs_json_int(o, 0, "status", "readyReplicas", NULL);
	r->ok = rs_json_int(o, 1, "spec", "replicas", NULL) ==
	    rs_json_int(o, 0, "status", "replicas", NULL) &&
	    rs_json_int(o, 0, "metadata", "generation", NULL) ==
	    rs_json_int(o, -1, "status", "observedGeneration", NULL);
	if (rs_strmap_put(&w->rs, r->name, r, NULL) != RS_OK)
		rs_fatal(111, "unable to allocate");
	w->n++;
	w->nok += r->ok;
	w->ready += r->ready;
}

static rs_code
check(struct waiter *w)
{
	if (!converged(w)) {
		w->armed = 1;
		return RS_OK;
	}
	if (!w->armed)
		return RS_OK;
	printf("converged %.6f\n", rs_wall_now());
	fflush(stdout);
	w->converged = 1;
	return RS_EEOF;
}

static rs_code
watch_line(void *arg, char *line, size_t len)
{
	struct waiter *w = arg;
	cJSON *e = NULL;
	const char *type;
	rs_code rc;

	if (rs_json_parse(line, len, &e, NULL) != RS_OK)
		return RS_OK;
	type = rs_json_str(e, "type", NULL);
	if (type && strcmp(type, "ERROR") == 0)
		rs_fatal(111, "watch error: %s", line);
	if (type && strcmp(type, "BOOKMARK") == 0) {
		const char *rv = rs_json_str(e, "object", "metadata",
		    "resourceVersion", NULL);

		if (rv)
			snprintf(w->rv, sizeof w->rv, "%s", rv);
		cJSON_Delete(e);
		return RS_OK;
	}
	observe(w, rs_json_get(e, "object", NULL),
	    type && strcmp(type, "DELETED") == 0);
	cJSON_Delete(e);
	rc = check(w);
	return rc;
}

static int
cmd_wait(struct bulk *b, int argc, char **argv)
{
	struct waiter w = { .b = b };
	double timeout = 600, end;
	char *path;
	cJSON *list, *it;

	if (argc < 3)
		usage(100);
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
			timeout = atof(argv[++i]);
		else if (strcmp(argv[i], "--armed") == 0)
			w.armed = 1;
		else
			usage(100);
	}
	w.want = atol(argv[1]);
	w.want_ready = atol(argv[2]);
	rs_strmap_init(&w.rs);
	end = rs_wall_now() + timeout;
	path = xprintf("/apis/apps/v1/namespaces/%s/replicasets", b->ns);
	list = get_json(b, path, "LIST", "replicasets");
	free(path);
	cJSON_ArrayForEach(it, rs_json_get(list, "items", NULL))
		observe(&w, it, 0);
	snprintf(w.rv, sizeof w.rv, "%s",
	    rs_json_str(list, "metadata", "resourceVersion", NULL));
	cJSON_Delete(list);
	printf("watching\n");
	fflush(stdout);
	check(&w);
	while (!w.converged) {
		struct rs_kresp resp;
		double left = end - rs_wall_now();
		rs_code rc;

		if (left <= 0)
			rs_fatal(111, "not converged after %.0f s: %ld of %ld "
			    "ReplicaSets final, %ld ready of %ld", timeout, w.nok,
			    w.want, w.ready, w.want_ready);
		path = xprintf("/apis/apps/v1/namespaces/%s/replicasets?watch=1"
		    "&allowWatchBookmarks=true&resourceVersion=%s"
		    "&timeoutSeconds=%ld", b->ns, w.rv, (long)left + 1);
		count(b, "WATCH", "replicasets");
		rc = rs_kube_stream(b->k, path, (long)(left * 1000) + 1000,
		    watch_line, &w, NULL, NULL, &resp);
		if (rc != RS_OK && rc != RS_EEOF && rc != RS_ETIMEOUT)
			rs_fatal(rs_exit_code(rc), "unable to watch %s: %s %s",
			    path, rs_strerror(rc), resp.status.message);
		rs_kresp_free(&resp);
		free(path);
	}
	return 0;
}

/* kick */

struct kicker {
	struct bulk *b;
	struct rs_strmap seen;      /* names of the pods seen */
	char victim[256];           /* deleted, its replacement awaited */
	double deleted;             /* when the delete was answered */
	long want, done;
	long pause_ms;
	char rv[64];
};

static void
kick_delete(struct kicker *k, const char *name)
{
	struct rs_kresp resp;
	char *path;
	rs_code rc;

	snprintf(k->victim, sizeof k->victim, "%s", name);
	path = xprintf("/api/v1/namespaces/%s/pods/%s", k->b->ns, name);
	if (k->b->t0 == 0)
		k->b->t0 = rs_wall_now();
	count(k->b, "DELETE", "pods");
	rc = rs_kube_do(k->b->k, "DELETE", path, NULL, NULL, 0, &resp);
	k->deleted = rs_wall_now();
	if (rc != RS_OK)
		rs_fatal(rc == RS_EAPI || rc == RS_ENOTFOUND ? 1 :
		    rs_exit_code(rc), "unable to DELETE %s: %s: %s", path,
		    rc == RS_EAPI || rc == RS_ENOTFOUND ? resp.status.reason :
		    rs_strerror(rc), resp.status.message);
	rs_kresp_free(&resp);
	free(path);
}

static int
kick_seen(struct kicker *k, const char *name)
{
	char *key;

	if (name == NULL || rs_strmap_get(&k->seen, name) != NULL)
		return 1;
	key = xprintf("%s", name);
	if (rs_strmap_put(&k->seen, key, key, NULL) != RS_OK)
		rs_fatal(111, "unable to allocate");
	return 0;
}

static rs_code
kick_line(void *arg, char *line, size_t len)
{
	struct kicker *k = arg;
	const char *type, *name, *rv;
	cJSON *e = NULL;
	struct timespec ts;

	if (rs_json_parse(line, len, &e, NULL) != RS_OK)
		return RS_OK;
	type = rs_json_str(e, "type", NULL);
	if (type && strcmp(type, "ERROR") == 0)
		rs_fatal(111, "watch error: %s", line);
	rv = rs_json_str(e, "object", "metadata", "resourceVersion", NULL);
	if (rv)
		snprintf(k->rv, sizeof k->rv, "%s", rv);
	name = rs_json_str(e, "object", "metadata", "name", NULL);
	if (type == NULL || strcmp(type, "ADDED") != 0 || name == NULL ||
	    kick_seen(k, name)) {
		cJSON_Delete(e);
		return RS_OK;
	}
	k->done++;
	printf("kick_ms %.3f\n", (rs_wall_now() - k->deleted) * 1000);
	k->b->t1 = rs_wall_now();
	if (k->done == k->want) {
		cJSON_Delete(e);
		return RS_EEOF;
	}
	ts.tv_sec = k->pause_ms / 1000;
	ts.tv_nsec = k->pause_ms % 1000 * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	kick_delete(k, name);
	cJSON_Delete(e);
	return RS_OK;
}

static int
cmd_kick(struct bulk *b, int argc, char **argv)
{
	struct kicker k = { .b = b, .pause_ms = 50 };
	double timeout = 600, end;
	const cJSON *it, *newest = NULL;
	const char *newest_ts = NULL;
	char *path;
	cJSON *list;

	if (argc < 2)
		usage(100);
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--pause") == 0 && i + 1 < argc)
			k.pause_ms = atol(argv[++i]);
		else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
			timeout = atof(argv[++i]);
		else
			usage(100);
	}
	k.want = atol(argv[1]);
	if (k.want < 1 || k.pause_ms < 0)
		usage(100);
	rs_strmap_init(&k.seen);
	end = rs_wall_now() + timeout;
	path = xprintf("/api/v1/namespaces/%s/pods", b->ns);
	list = get_json(b, path, "LIST", "pods");
	free(path);
	cJSON_ArrayForEach(it, rs_json_get(list, "items", NULL)) {
		const char *ts = rs_json_str(it, "metadata",
		    "creationTimestamp", NULL);

		kick_seen(&k, rs_json_str(it, "metadata", "name", NULL));
		if (newest == NULL || (ts && newest_ts &&
		    strcmp(ts, newest_ts) > 0)) {
			newest = it;
			newest_ts = ts;
		}
	}
	if (newest == NULL)
		rs_fatal(1, "unable to kick: no pod in %s", b->ns);
	snprintf(k.rv, sizeof k.rv, "%s",
	    rs_json_str(list, "metadata", "resourceVersion", NULL));
	/* the watch starts from the list, so the first replacement is seen
	 * however soon it comes */
	kick_delete(&k, rs_json_str(newest, "metadata", "name", NULL));
	cJSON_Delete(list);
	while (k.done < k.want) {
		struct rs_kresp resp;
		double left = end - rs_wall_now();
		rs_code rc;

		if (left <= 0)
			rs_fatal(111, "unable to kick: no replacement for %s "
			    "after %.0f s (%ld of %ld done)", k.victim, timeout,
			    k.done, k.want);
		path = xprintf("/api/v1/namespaces/%s/pods?watch=1"
		    "&allowWatchBookmarks=true&resourceVersion=%s"
		    "&timeoutSeconds=%ld", b->ns, k.rv, (long)left + 1);
		count(b, "WATCH", "pods");
		rc = rs_kube_stream(b->k, path, (long)(left * 1000) + 1000,
		    kick_line, &k, NULL, NULL, &resp);
		if (rc != RS_OK && rc != RS_EEOF && rc != RS_ETIMEOUT)
			rs_fatal(rs_exit_code(rc), "unable to watch %s: %s %s",
			    path, rs_strerror(rc), resp.status.message);
		rs_kresp_free(&resp);
		free(path);
	}
	printf("kicks %ld\n", k.done);
	{
		const char *key;
		void *v;

		for (size_t i = 0; rs_strmap_next(&k.seen, &i, &key, &v); )
			free(v);
	}
	rs_strmap_free(&k.seen);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "qps", required_argument, NULL, 'q' },
		{ "burst", required_argument, NULL, 'b' },
		{ "inflight", required_argument, NULL, 'w' },
		{ "settle", required_argument, NULL, 's' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rs_kube_config_opts co = { NULL, NULL, NULL };
	struct rs_kube_opts ko = { .user_agent = "rs-bench-bulk/0.1" };
	struct rs_kube_config *cfg;
	struct bulk b;
	const char *cmd;
	int c, rc;

	rs_log_init(argv[0]);
	memset(&b, 0, sizeof b);
	b.window = 100;
	while ((c = getopt_long(argc, argv, "+n:h", lo, NULL)) != -1) {
		switch (c) {
		case 'k': co.kubeconfig = optarg; break;
		case 'q': ko.qps = atof(optarg); break;
		case 's': ko.settle_ms = atol(optarg); break;
		case 'b': ko.burst = atoi(optarg); break;
		case 'w': b.window = atoi(optarg); break;
		case 'n': b.ns = optarg; break;
		case 'h': usage(0); break;
		default: usage(100);
		}
	}
	if (optind >= argc || b.ns == NULL || b.window < 1)
		usage(100);
	ko.max_running = b.window;   /* the window is the bound, not libcommon's */
	if (rs_kube_config_load(&co, &cfg) != RS_OK)
		rs_fatal(111, "unable to load the API configuration");
	if (rs_kube_new(cfg, &ko, &b.k) != RS_OK)
		rs_fatal(111, "unable to set up the API client");
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	if (strcmp(cmd, "rs") == 0)
		rc = cmd_rs(&b, argc, argv);
	else if (strcmp(cmd, "scale") == 0)
		rc = cmd_scale(&b, argc, argv);
	else if (strcmp(cmd, "ready") == 0)
		rc = cmd_ready(&b, argc, argv);
	else if (strcmp(cmd, "churn") == 0)
		rc = cmd_churn(&b, argc, argv);
	else if (strcmp(cmd, "wait") == 0)
		rc = cmd_wait(&b, argc, argv);
	else if (strcmp(cmd, "kick") == 0)
		rc = cmd_kick(&b, argc, argv);
	else
		usage(100);
	if (b.t0 > 0)
		printf("t0 %.6f\nt1 %.6f\n", b.t0, b.t1);
	print_tally(&b);
	rs_kube_free(b.k);
	return rc;
}
