#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "clock.h"
#include "intern.h"
#include "json.h"
#include "scan.h"

void
cache_init(struct cache *c, const struct kind *k)
{
	memset(c, 0, sizeof *c);
	c->kind = k;
}

/* Copies strs[0..n) after each other into dst; out[i] points at each. */
static void
pack(char *dst, const char **strs, const char **out[], int n)
{
	for (int i = 0; i < n; i++) {
		if (strs[i] == NULL) {
			*out[i] = NULL;
			continue;
		}
		size_t l = strlen(strs[i]) + 1;
		memcpy(dst, strs[i], l);
		*out[i] = dst;
		dst += l;
	}
}

static size_t
packed_size(const char **strs, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		if (strs[i])
			t += strlen(strs[i]) + 1;
	return t;
}

/* The part v of an object's text as a tree, NULL for an empty span: the
 * parts read with the trees' rules (selectors, labels, a status) are
 * small beside the whole object, and its managedFields. */
static rs_code
subtree(const char *buf, struct rs_jspan v, cJSON **out, char *why,
    size_t len)
{
	rs_code rc;

	*out = NULL;
	if (v.end == v.off)
		return RS_OK;
	rc = rs_json_parse(buf + v.off, v.end - v.off, out, NULL);
	if (rc == RS_EPARSE)    /* cJSON refused what rs_jscan took */
		rs_why(rc, why, len, "unreadable JSON at byte %zu", v.off);
	return rc;
}

static rs_code
ctrl_selector(const struct kind *k, const cJSON *s, struct ctrl *r,
    char *why, size_t len)
{
	if (k->map_selector)
		return rs_selector_from_map(s, &r->sel, why, len);
	return rs_selector_from_label_selector(s, &r->sel, why, len);
}

/* spec.FIELD (v) as the int32 the API validates; hostile input is clamped
 * rather than wrapped (4294967299 must not read as 3). */
static int32_t
int32_field(const char *buf, struct rs_jspan v, long long dflt)
{
	long long n = scan_int(buf, v, dflt);

	return n < 0 ? 0 : n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

const char *const status_count_name[SC_N] = {
	[SC_REPLICAS] = "replicas",
	[SC_FULLY] = "fullyLabeledReplicas",
	[SC_READY] = "readyReplicas",
	[SC_AVAILABLE] = "availableReplicas",
	[SC_TERMINATING] = "terminatingReplicas",
	[SC_OBSERVED] = "observedGeneration",
};

/* Whether the conditions are what a sync's new status keeps as they are:
 * none, or a list without ReplicaFailure (drop_failure in status.c takes
 * those out, and an empty list with them). A condition without a type,
 * or a list that is no array, leaves it to the trees. */
static int
conditions_kept(const cJSON *st)
{
	const cJSON *c, *conds = cJSON_GetObjectItemCaseSensitive(st,
	    "conditions");

	if (conds == NULL)
		return 1;
	if (!cJSON_IsArray(conds) || conds->child == NULL)
		return 0;
	cJSON_ArrayForEach(c, conds) {
		const char *t = rs_json_str(c, "type", NULL);

		if (t == NULL || strcmp(t, "ReplicaFailure") == 0)
			return 0;
	}
	return 1;
}

/* A member name twice: the trees would see the one a lookup finds first,
 * and a sync that replaces it would bring the other one forward. */
static int
has_twice(const cJSON *st)
{
	const cJSON *a, *b;

	for (a = st->child; a; a = a->next)
		for (b = a->next; b; b = b->next)
			if (a->string && b->string &&
			    strcmp(a->string, b->string) == 0)
				return 1;
	return 0;
}

/* The counts of st; plain only where they tell all that a sync changes
 * (a count that is no whole number within 2^53, a name twice, or
 * conditions a sync would change leave the trees to judge). */
static void
status_counts_read(const cJSON *st, struct status_counts *out)
{
	memset(out, 0, sizeof *out);
	if (st == NULL) {
		out->plain = 1;
		return;
	}
	if (!cJSON_IsObject(st) || !conditions_kept(st) || has_twice(st))
		return;
	for (int i = 0; i < SC_N; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(st,
		    status_count_name[i]);
		double d;

		if (v == NULL)
			continue;
		d = v->valuedouble;
		/* the negated range test refuses a NaN too */
		if (!cJSON_IsNumber(v) || !(d >= -9007199254740992.0 &&
		    d <= 9007199254740992.0) || d != (double)(long long)d)
			return;
		out->v[i] = (long long)d;
		out->present |= 1u << i;
	}
	out->plain = 1;
}

static char *
put_span(char *out, const char *buf, struct rs_jspan v)
{
	memcpy(out, buf + v.off, v.end - v.off);
	return out + (v.end - v.off);
}

char *
ctrl_strip(char *out, const char *buf, struct rs_jspan obj,
    const char *const *names, struct rs_jspan *dropped)
{
	struct rs_jiter it;
	struct rs_jspan k, v;
	int dropped_one = 0, entered = 0, first = 1;

	if (rs_jscan_type(buf, obj) != RS_JOBJECT ||
	    rs_jscan_iter(&it, buf, obj) != RS_OK)
		return put_span(out, buf, obj);
	*out++ = '{';
	while (rs_jscan_member(&it, &k, &v) == RS_OK) {
		if (names[0] && !dropped_one && rs_jscan_keyeq(buf, k, names[0])) {
			dropped_one = 1;
			if (dropped)
				*dropped = v;
			continue;
		}
		if (!first)
			*out++ = ',';
		first = 0;
		out = put_span(out, buf, k);
		*out++ = ':';
		if (names[0] && names[1] && !entered &&
		    rs_jscan_keyeq(buf, k, names[1])) {
			entered = 1;
			out = ctrl_strip(out, buf, v, names + 2, NULL);
		} else
			out = put_span(out, buf, v);
	}
	*out++ = '}';
	return out;
}

/* What a controller is read for, each the first member of its name. */
enum { C_METADATA, C_SPEC, C_STATUS, C_N };
static const char *const ctrl_names[C_N] = { "metadata", "spec", "status" };
enum { CM_NAMESPACE, CM_NAME, CM_UID, CM_RV, CM_GENERATION, CM_DELETED,
    CM_OWNERS, CM_N };
static const char *const cmeta_names[CM_N] = { "namespace", "name", "uid",
    "resourceVersion", "generation", "deletionTimestamp", "ownerReferences" };
enum { CS_REPLICAS, CS_MIN_READY, CS_SELECTOR, CS_TEMPLATE, CS_N };
static const char *const cspec_names[CS_N] = { "replicas", "minReadySeconds",
    "selector", "template" };

struct ctrl_text {
	const char *buf;
	struct rs_jspan top[C_N], meta[CM_N], spec[CS_N];
	const char *ns, *name;
};

/* The parts of the object, and its namespace and name (in the scan
 * buffer); RS_EPARSE without them. */
static rs_code
ctrl_text_read(const struct kind *k, struct ctrl_text *t, const char *buf,
    struct rs_jspan obj, char *why, size_t len)
{
	rs_code rc;

	if ((rc = scan_reset(obj.end - obj.off + 1)) != RS_OK)
		return rc;
	t->buf = buf;
	(void)rs_jscan_pick(buf, obj, ctrl_names, t->top, C_N);
	(void)rs_jscan_pick(buf, t->top[C_METADATA], cmeta_names, t->meta, CM_N);
	(void)rs_jscan_pick(buf, t->top[C_SPEC], cspec_names, t->spec, CS_N);
	t->ns = scan_str(buf, t->meta[CM_NAMESPACE]);
	t->name = scan_str(buf, t->meta[CM_NAME]);
	if (t->ns == NULL || t->name == NULL)
		return rs_why(RS_EPARSE, why, len,
		    "%s without metadata.namespace or metadata.name", k->kind);
	return RS_OK;
}

rs_code
ctrl_key(const struct kind *k, const char *buf, struct rs_jspan obj,
    char *key, size_t keylen, const char **uid)
{
	struct ctrl_text t;
	char why[128];
	rs_code rc;

	if ((rc = ctrl_text_read(k, &t, buf, obj, why, sizeof why)) != RS_OK)
		return rc;
	snprintf(key, keylen, "%s/%s", t.ns, t.name);
	*uid = scan_str(buf, t.meta[CM_UID]);
	return RS_OK;
}

/* The object's text but its status and managedFields (r->text), and its
 * status apart, as a tree once printed (r->status, r->counts). */
static rs_code
ctrl_texts(struct ctrl *r, const struct ctrl_text *t, struct rs_jspan obj,
    char *why, size_t len)
{
	static const char *const strip[] = { "status", "metadata",
	    "managedFields", NULL };
	struct rs_jspan st = { 0, 0 };
	cJSON *tree;
	char *end, *small;
	rs_code rc;

	if ((r->text = malloc(obj.end - obj.off + 1)) == NULL)
		return RS_ENOMEM;
	end = ctrl_strip(r->text, t->buf, obj, strip, &st);
	*end = '\0';
	if ((small = realloc(r->text, end - r->text + 1)) != NULL)
		r->text = small;
	if ((rc = subtree(t->buf, st, &tree, why, len)) != RS_OK)
		return rc;
	status_counts_read(tree, &r->counts);
	if (cJSON_IsObject(tree) && (r->status = cJSON_PrintUnformatted(tree)) ==
	    NULL)
		rc = RS_ENOMEM;
	cJSON_Delete(tree);
	return rc;
}

/* The template's labels (an error fails the object), then the selector
 * (an invalid one leaves r->sel NULL, why says it). */
static rs_code
ctrl_spec(const struct kind *k, struct ctrl *r, const struct ctrl_text *t,
    char *why, size_t len)
{
	struct rs_jspan v = { 0, 0 };
	cJSON *tree;
	rs_code rc;

	(void)rs_jscan_get(t->buf, t->spec[CS_TEMPLATE], &v, "metadata",
	    "labels", NULL);
	if ((rc = subtree(t->buf, v, &tree, why, len)) != RS_OK)
		return rc;
	rc = rs_labels_from_json(tree, &r->tmpl_labels, why, len);
	cJSON_Delete(tree);
	if (rc != RS_OK)
		return rc;
	if ((rc = subtree(t->buf, t->spec[CS_SELECTOR], &tree, why,
	    len)) != RS_OK)
		return rc;
	if (ctrl_selector(k, tree, r, why, len) != RS_OK)
		r->sel = NULL;  /* kept: upstream skips the sync, not the object */
	cJSON_Delete(tree);
	return RS_OK;
}

rs_code
ctrl_decode(const struct kind *k, const char *buf, struct rs_jspan obj,
    struct ctrl **out, char *why, size_t len)
{
	struct ctrl_text t;
	const char *ref[3];
	char key[512];
	struct ctrl *r;
	rs_code rc;

	if ((rc = ctrl_text_read(k, &t, buf, obj, why, len)) != RS_OK)
		return rc;
	snprintf(key, sizeof key, "%s/%s", t.ns, t.name);
	scan_controller_ref(buf, t.meta[CM_OWNERS], ref);
	const char *strs[] = {
		key, t.ns, t.name,
		scan_str(buf, t.meta[CM_UID]),
		scan_str(buf, t.meta[CM_RV]),
		ref[2],
	};
	int n = sizeof strs / sizeof strs[0];
	if (strs[3] == NULL)
		strs[3] = "";
	if (strs[4] == NULL)
		strs[4] = "";
	if ((r = calloc(1, sizeof *r + packed_size(strs, n))) == NULL)
		return RS_ENOMEM;
	const char **dst[] = { &r->key, &r->ns, &r->name, &r->uid, &r->rv,
	    &r->owner_uid };
	pack(r->strings, strs, dst, n);
	r->generation = scan_int(buf, t.meta[CM_GENERATION], 0);
	r->deleting = rs_jscan_type(buf, t.meta[CM_DELETED]) != RS_JNONE &&
	    rs_jscan_type(buf, t.meta[CM_DELETED]) != RS_JNULL;
	r->replicas = int32_field(buf, t.spec[CS_REPLICAS], 1);
	r->min_ready = int32_field(buf, t.spec[CS_MIN_READY], 0);
	if ((rc = ctrl_texts(r, &t, obj, why, len)) != RS_OK ||
	    (rc = ctrl_spec(k, r, &t, why, len)) != RS_OK) {
		ctrl_free(r);
		return rc;
	}
	*out = r;
	return RS_OK;
}

void
ctrl_free(struct ctrl *r)
{
	if (r == NULL)
		return;
	rs_selector_free(r->sel);
	rs_labels_free(r->tmpl_labels);
	cJSON_free(r->status);
	free(r->text);
	free(r);
}

rs_code
ctrl_template(const struct ctrl *r, cJSON **out)
{
	struct rs_jspan all = { 0, strlen(r->text) }, v = { 0, 0 };
	char why[64];

	/* r->text is ctrl_strip's, an object that rs_jscan validated */
	(void)rs_jscan_get(r->text, all, &v, "spec", "template", NULL);
	return subtree(r->text, v, out, why, sizeof why);
}

/* Finds or creates the podlist of id in m. */
static struct podlist *
podlist_get(struct rs_strmap *m, const char *id)
{
	struct podlist *l = rs_strmap_get(m, id);

	if (l != NULL)
		return l;
	size_t n = strlen(id) + 1;
	if ((l = calloc(1, sizeof *l + n)) == NULL)
		return NULL;
	memcpy(l->id, id, n);
	if (rs_strmap_put(m, l->id, l, NULL) != RS_OK) {
		free(l);
		return NULL;
	}
	return l;
}

/* The podlist a pod of the cache is in: found from the pod's own fields,
 * which never change, rather than kept in each pod. */
static struct rs_strmap *
pod_map(struct cache *c, const struct pod *p, const char **id)
{
	*id = p->ctrl_uid ? p->ctrl_uid : p->ns;
	return p->ctrl_uid ? &c->owned : &c->orphans;
}

static void
pod_link(struct podlist *l, struct pod *p)
{
	p->next = l->head;
	p->prev = NULL;
	if (l->head)
		l->head->prev = p;
	l->head = p;
	l->n++;
}

static void
pod_unlink(struct cache *c, struct pod *p)
{
	const char *id;
	struct rs_strmap *m = pod_map(c, p, &id);
	struct podlist *l = rs_strmap_get(m, id);

	if (p->prev)
		p->prev->next = p->next;
	else
		l->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->next = p->prev = NULL;
	if (--l->n == 0) {
		rs_strmap_del(m, l->id);
		free(l);
	}
}

/* Every pod in c->pods is in its podlist and no other pod is: the list is
 * made first, and dropped again if the pod cannot go in the map. */
rs_code
cache_put_pod(struct cache *c, struct pod *p, struct pod **old)
{
	const char *id;
	struct rs_strmap *m = pod_map(c, p, &id);
	struct podlist *l = podlist_get(m, id);
	void *prev;

	*old = NULL;
	if (l == NULL)
		return RS_ENOMEM;
	if (rs_strmap_put(&c->pods, p->key, p, &prev) != RS_OK) {
		if (l->n == 0) {
			rs_strmap_del(m, l->id);
			free(l);
		}
		return RS_ENOMEM;
	}
	/* linked before prev leaves: prev may be l's last pod */
	pod_link(l, p);
	if (prev)
		pod_unlink(c, prev);
	*old = prev;
	return RS_OK;
}

struct pod *
cache_del_pod(struct cache *c, const char *key)
{
	struct pod *p = rs_strmap_del(&c->pods, key);

	if (p)
		pod_unlink(c, p);
	return p;
}

static struct ctrl_group *
group_get(struct rs_strmap *m, const char *id)
{
	struct ctrl_group *g = rs_strmap_get(m, id);

	if (g != NULL)
		return g;
	size_t n = strlen(id) + 1;
	if ((g = calloc(1, sizeof *g + n)) == NULL)
		return NULL;
	memcpy(g->id, id, n);
	if (rs_strmap_put(m, g->id, g, NULL) != RS_OK) {
		free(g);
		return NULL;
	}
	return g;
}

static void
ctrl_unlink(struct cache *c, struct ctrl *r)
{
	struct ctrl_group *g = rs_strmap_get(&c->ctrl_ns, r->ns);

	if (g) {
		if (r->ns_prev)
			r->ns_prev->ns_next = r->ns_next;
		else
			g->head = r->ns_next;
		if (r->ns_next)
			r->ns_next->ns_prev = r->ns_prev;
		if (g->head == NULL) {
			rs_strmap_del(&c->ctrl_ns, g->id);
			free(g);
		}
	}
	if (r->owner_uid && (g = rs_strmap_get(&c->ctrl_sib, r->owner_uid))) {
		if (r->sib_prev)
			r->sib_prev->sib_next = r->sib_next;
		else
			g->head = r->sib_next;
		if (r->sib_next)
			r->sib_next->sib_prev = r->sib_prev;
		if (g->head == NULL) {
			rs_strmap_del(&c->ctrl_sib, g->id);
			free(g);
		}
	}
	r->ns_next = r->ns_prev = r->sib_next = r->sib_prev = NULL;
}

static rs_code
ctrl_link(struct cache *c, struct ctrl *r)
{
	struct ctrl_group *g = group_get(&c->ctrl_ns, r->ns);

	if (g == NULL)
		return RS_ENOMEM;
	r->ns_next = g->head;
	if (g->head)
		g->head->ns_prev = r;
	g->head = r;
	if (r->owner_uid) {
		if ((g = group_get(&c->ctrl_sib, r->owner_uid)) == NULL)
			return RS_ENOMEM;
		r->sib_next = g->head;
		if (g->head)
			g->head->sib_prev = r;
		g->head = r;
	}
	return RS_OK;
}

rs_code
cache_put_ctrl(struct cache *c, struct ctrl *r, struct ctrl **old)
{
	void *prev;
	rs_code rc;

	if ((rc = rs_strmap_put(&c->ctrls, r->key, r, &prev)) != RS_OK)
		return rc;
	*old = prev;
	if (prev)
		ctrl_unlink(c, prev);
	return ctrl_link(c, r);
}

struct ctrl *
cache_del_ctrl(struct cache *c, const char *key)
{
	struct ctrl *r = rs_strmap_del(&c->ctrls, key);

	if (r)
		ctrl_unlink(c, r);
	return r;
}

struct pod *cache_pod(const struct cache *c, const char *key) { return rs_strmap_get(&c->pods, key); }
struct ctrl *cache_ctrl(const struct cache *c, const char *key) { return rs_strmap_get(&c->ctrls, key); }
const struct podlist *cache_owned(const struct cache *c, const char *uid) { return rs_strmap_get(&c->owned, uid); }
const struct podlist *cache_orphans(const struct cache *c, const char *ns) { return rs_strmap_get(&c->orphans, ns); }
const struct ctrl_group *cache_ns_ctrls(const struct cache *c, const char *ns) { return rs_strmap_get(&c->ctrl_ns, ns); }
const struct ctrl_group *cache_siblings(const struct cache *c, const char *uid) { return rs_strmap_get(&c->ctrl_sib, uid); }

struct ctrl *
cache_ctrl_nsname(const struct cache *c, const char *ns, const char *name)
{
	char key[512];

	snprintf(key, sizeof key, "%s/%s", ns, name);
	return cache_ctrl(c, key);
}

int
pod_active(const struct pod *p)
{
	return !p->terminal && p->deleted == 0;
}

int
pod_available(const struct pod *p, int32_t min_ready, double now)
{
	if (!p->ready)
		return 0;
	if (min_ready == 0)
		return 1;
	return p->ready_since != 0 && p->ready_since + min_ready < now;
}

void
cache_free(struct cache *c)
{
	size_t i = 0;
	void *v;

	while (rs_strmap_next(&c->pods, &i, NULL, &v))
		pod_free(v);
	i = 0;
	while (rs_strmap_next(&c->owned, &i, NULL, &v))
		free(v);
	i = 0;
	while (rs_strmap_next(&c->orphans, &i, NULL, &v))
		free(v);
	i = 0;
	while (rs_strmap_next(&c->ctrls, &i, NULL, &v))
		ctrl_free(v);
	i = 0;
	while (rs_strmap_next(&c->ctrl_ns, &i, NULL, &v))
		free(v);
	i = 0;
	while (rs_strmap_next(&c->ctrl_sib, &i, NULL, &v))
		free(v);
	rs_strmap_free(&c->pods);
	rs_strmap_free(&c->owned);
	rs_strmap_free(&c->orphans);
	rs_strmap_free(&c->ctrls);
	rs_strmap_free(&c->ctrl_ns);
	rs_strmap_free(&c->ctrl_sib);
}
