#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "handlers.h"
#include "json.h"
#include "log.h"
#include "stagestats.h"

/* Keys held for their event times beyond the controllers cached: room for
 * the deleted controllers whose last sync is still to come. */
#define PENDING_SLACK 1024

/* resolveControllerRef: the controller a pod's controllerRef names, if it
 * is of our kind, in the cache, and the same incarnation (UID). */
static struct ctrl *
resolve(struct sync *s, const char *ns, const char *kind, const char *name,
    const char *uid)
{
	struct ctrl *r;

	if (kind == NULL || strcmp(kind, s->kind->kind) != 0)
		return NULL;
	r = cache_ctrl_nsname(&s->cache, ns, name);
	if (r == NULL || strcmp(r->uid, uid) != 0)
		return NULL;
	return r;
}

static int
still_cached(void *arg, const char *key)
{
	return cache_ctrl(arg, key) != NULL;
}

/* An enqueue because of the event being handled: the key's sync will
 * carry the time of the earliest such event it acts on. */
static void
enqueue(struct sync *s, const char *key)
{
	rs_code rc = pending_note(&s->pending, key, s->event_at,
	    s->cache.ctrls.len + PENDING_SLACK, still_cached, &s->cache);

	if (rc != RS_OK && rc != RS_EFULL)
		rs_warn("unable to remember the event time of %s: %s", key,
		    rs_strerror(rc));
	sync_enqueue(s, key, 0);
}

static struct ctrl *
pod_owner(struct sync *s, const struct pod *p)
{
	if (p->ctrl_uid == NULL)
		return NULL;
	return resolve(s, p->ns, p->ctrl_kind, p->ctrl_name, p->ctrl_uid);
}

static void
exp_warn(rs_code rc, const char *what, const char *key)
{
	if (rc != RS_OK)
		rs_warn("unable to %s for %s: %s", what, key, rs_strerror(rc));
}

/* getPodReplicaSets: every controller of the namespace whose selector
 * matches; a nil or empty selector matches nothing here. */
static void
enqueue_matching(struct sync *s, const struct pod *p)
{
	const struct ctrl_group *g = cache_ns_ctrls(&s->cache, p->ns);
	int n = 0;

	for (struct ctrl *r = g ? g->head : NULL; r; r = r->ns_next) {
		if (r->sel == NULL || rs_selector_is_empty(r->sel) ||
		    !rs_selector_matches(r->sel, p->labels))
			continue;
		enqueue(s, r->key);
		n++;
	}
	if (n > 1)
		rs_info(2, "orphan pod %s matches %d %ss: user error", p->key, n,
		    s->kind->kind);
}

static void
delete_pod(struct sync *s, const struct pod *p)
{
	struct ctrl *r = pod_owner(s, p);

	if (r == NULL)
		return;
	rs_info(4, "pod %s deleted, observed by %s", p->key, r->key);
	exp_warn(rs_exp_deletion_observed(s->exp, r->key, p->key),
	    "observe a deletion", r->key);
	enqueue(s, r->key);
}

static void
add_pod(struct sync *s, const struct pod *p)
{
	struct ctrl *r;

	if (p->deleted) {
		/* a restarted controller can see a pod already being deleted */
		delete_pod(s, p);
		return;
	}
	if (p->ctrl_uid != NULL) {
		if ((r = pod_owner(s, p)) == NULL)
			return;
		rs_info(4, "pod %s created, observed by %s", p->key, r->key);
		exp_warn(rs_exp_creation_observed(s->exp, r->key),
		    "observe a creation", r->key);
		takeover_pod_added(s, r, p);
		enqueue(s, r->key);
		return;
	}
	enqueue_matching(s, p);
}

static int
same_ref(const struct pod *a, const struct pod *b)
{
	if (a->ctrl_uid == NULL || b->ctrl_uid == NULL)
		return a->ctrl_uid == b->ctrl_uid;
	return strcmp(a->ctrl_uid, b->ctrl_uid) == 0 &&
	    strcmp(a->ctrl_kind, b->ctrl_kind) == 0 &&
	    strcmp(a->ctrl_name, b->ctrl_name) == 0;
}

static void
update_pod(struct sync *s, const struct pod *old, const struct pod *cur)
{
	int labels_changed, ref_changed;
	struct ctrl *r;

	if (strcmp(old->rv, cur->rv) == 0)
		return;  /* a resync or snapshot: nothing changed */
	labels_changed = !rs_labels_equal(old->labels, cur->labels);
	if (cur->deleted) {
		/* act on the deletionTimestamp, not on the final delete */
		delete_pod(s, cur);
		if (labels_changed)
			delete_pod(s, old);
		return;
	}
	ref_changed = !same_ref(old, cur);
	if (ref_changed && old->ctrl_uid && (r = pod_owner(s, old)))
		enqueue(s, r->key);
	if (cur->ctrl_uid) {
		if ((r = pod_owner(s, cur)) == NULL)
			return;
		enqueue(s, r->key);
		/* availability is a matter of time: look again once it passed */
		if (!old->ready && cur->ready && r->min_ready > 0)
			sync_enqueue(s, r->key, r->min_ready + 1.0);
		return;
	}
	if (labels_changed || ref_changed)
		enqueue_matching(s, cur);
}

/* deleteRS: expectations dropped, and the writes recorded for the owner
 * of that uid (upstream's Clear; "" for any). */
static void
delete_ctrl(struct sync *s, const char *key, const char *uid)
{
	exp_warn(rs_exp_delete(s->exp, key), "delete expectations", key);
	exp_warn(rs_exp_clear_written(s->exp, key, uid),
	    "clear the recorded writes", key);
	enqueue(s, key);
}

static rs_code
event_pod(struct sync *s, const char *type, const char *buf,
    struct rs_jspan obj, int unknown)
{
	char why[256], key[512];
	struct pod *p, *old = NULL;
	rs_code rc;

	if (strcmp(type, "DELETED") == 0) {
		/* the final state, unless the watcher lost it; else the key
		 * alone, and the cached state */
		if (unknown || pod_decode(buf, obj, &p, why, sizeof why) != RS_OK)
			p = NULL;
		if (p == NULL && (rc = pod_key(buf, obj, key, sizeof key)) != RS_OK)
			return rc == RS_ENOMEM ? rc : RS_EPARSE;
		old = cache_del_pod(&s->cache, p ? p->key : key);
		if (p || old)
			delete_pod(s, p ? p : old);
		pod_free(p);
		pod_free(old);
		return RS_OK;
	}
	if ((rc = pod_decode(buf, obj, &p, why, sizeof why)) != RS_OK) {
		if (rc != RS_ENOMEM)    /* handle_event says that one */
			rs_warn("event %lu: pod skipped: %s", s->events, why);
		return rc;
	}
	if ((rc = cache_put_pod(&s->cache, p, &old)) != RS_OK) {
		pod_free(p);    /* a failed put left the cache as it was */
		return rc;
	}
	if (old)
		update_pod(s, old, p);
	else
		add_pod(s, p);
	pod_free(old);
	return RS_OK;
}

static rs_code
event_ctrl(struct sync *s, const char *type, const char *buf,
    struct rs_jspan obj)
{
	char why[256];
	struct ctrl *r, *old = NULL;
	rs_code rc;

	if (strcmp(type, "DELETED") == 0) {
		const char *uid;
		char key[512];

		if ((rc = ctrl_key(s->kind, buf, obj, key, sizeof key, &uid)) !=
		    RS_OK)
			return rc;
		if ((r = cache_del_ctrl(&s->cache, key)) != NULL)
			takeover_forget(&s->takeover, r->uid);
		ctrl_free(r);
		delete_ctrl(s, key, uid ? uid : "");
		return RS_OK;
	}
	if ((rc = ctrl_decode(s->kind, buf, obj, &r, why, sizeof why)) != RS_OK) {
		if (rc != RS_ENOMEM)
			rs_warn("event %lu: %s skipped: %s", s->events,
			    s->kind->kind, why);
		return rc;
	}
	if (r->sel == NULL)
		rs_warn("%s %s has an invalid selector: %s", s->kind->kind,
		    r->key, why);
	if ((rc = cache_put_ctrl(&s->cache, r, &old)) != RS_OK)
		return rc;
	/* updateRS: a new UID under the same name is a delete, then an add */
	if (old && strcmp(old->uid, r->uid) != 0) {
		takeover_forget(&s->takeover, old->uid);
		delete_ctrl(s, old->key, old->uid);
	}
	enqueue(s, r->key);
	ctrl_free(old);
	return RS_OK;
}

/* Where resource's read resourceVersion is kept; NULL: not ours. */
static char *
read_rv_slot(struct sync *s, const char *resource)
{
	if (strcmp(resource, "pods") == 0)
		return s->read_rv_pods;
	if (strcmp(resource, s->kind->resource) == 0)
		return s->read_rv_ctrls;
	return NULL;
}

const char *
sync_read_rv(const struct sync *s, const char *resource)
{
	const char *slot = read_rv_slot((struct sync *)s, resource);

	if (slot == s->read_rv_pods && s->synced_pods)
		return slot;
	if (slot == s->read_rv_ctrls && s->synced_ctrls)
		return slot;
	return "";
}

/* A copy, not a pointer into the line: the line is gone once handled.
 * A value that is no string, or does not fit, is no position at all. */
static void
read_rv_note(char *slot, const char *buf, struct rs_jspan rv)
{
	if (rs_jscan_type(buf, rv) != RS_JSTRING ||
	    rs_jscan_unescape(buf, rv, slot, RS_RV_MAX, NULL) != RS_OK)
		slot[0] = '\0';
}

static void
event_synced(struct sync *s, const char *resource, const char *buf,
    struct rs_jspan rv)
{
	char *slot = read_rv_slot(s, resource);

	if (slot == NULL) {
		rs_info(1, "%s synced", resource);
		return;
	}
	/* none (a recording from before rs-watch printed it): the listed
	 * objects' versions, in list order, tell no position */
	read_rv_note(slot, buf, rv);
	if (slot == s->read_rv_pods)
		s->synced_pods = 1;
	else
		s->synced_ctrls = 1;
	rs_info(1, "%s synced at resourceVersion '%s'", resource, slot);
}

void
handlers_enqueue_all(struct sync *s)
{
	size_t i = 0;
	const char *key;

	while (rs_strmap_next(&s->cache.ctrls, &i, &key, NULL))
		enqueue(s, key);
}

/* A BOOKMARK: every change up to its resourceVersion has been read. It
 * moves the read position; one without a resourceVersion says nothing.
 * One that ends a relist of the controllers (relist) stands for the
 * update handler run on every listed controller, changed or not, as
 * client-go's Replace runs it: updateRS queues each, with a plain add
 * that takes a key parked in a long retry at once. The cache holds just
 * the listed controllers by then (the relist's deletions come before).
 * A relist of pods queues nothing more: updatePod passes over a pod
 * whose resourceVersion did not change. */
static void
event_bookmark(struct sync *s, const char *resource, const char *buf,
    struct rs_jspan rv, struct rs_jspan relist)
{
	char *slot = read_rv_slot(s, resource);

	if (slot != NULL && rs_jscan_type(buf, rv) == RS_JSTRING)
		read_rv_note(slot, buf, rv);
	if (slot == s->read_rv_ctrls && s->synced_ctrls &&
	    rs_jscan_type(buf, relist) == RS_JTRUE) {
		rs_info(2, "%s relisted: queueing each of the %zu cached", resource,
		    s->cache.ctrls.len);
		handlers_enqueue_all(s);
	}
}

/* What an event line is read for, each the first member of its name. */
enum { E_TYPE, E_RESOURCE, E_OBJECT, E_AT, E_UNKNOWN, E_MANAGERS, E_RV,
    E_RELIST, E_N };
static const char *const event_names[E_N] = { "type", "resource", "object",
    "at", "final_state_unknown", "ref_managers", "resourceVersion",
    "relist" };

/* rs-watch's "at": when it read the event (absent from recordings older
 * than it, and from hand-written lines: 0). */
static double
event_at(const char *buf, struct rs_jspan at)
{
	double t;

	return rs_jscan_double(buf, at, &t) == RS_OK && t > 0 ? t : 0;
}

/* A string member of the event: type and resource are short words, and
 * one cut at len compares unequal to all of them. */
static const char *
event_word(const char *buf, struct rs_jspan v, char *out, size_t len)
{
	if (rs_jscan_type(buf, v) != RS_JSTRING)
		return NULL;
	(void)rs_jscan_unescape(buf, v, out, len, NULL);
	return out;
}

/* The resourceVersion of the object's metadata; an empty span: none. */
static struct rs_jspan
object_rv(const char *buf, struct rs_jspan obj)
{
	struct rs_jspan v = { 0, 0 };

	(void)rs_jscan_get(buf, obj, &v, "metadata", "resourceVersion", NULL);
	return v;
}

/* The line is validated once, then read in place: a pod's object builds
 * no tree at all (pod.c), a controller's only of its small parts
 * (cache.h). */
rs_code
handle_event(struct sync *s, const char *line, size_t len)
{
	struct rs_jspan ev, f[E_N];
	char type[32], res[256], *slot;
	size_t where = 0;
	rs_code rc;

	s->events++;
	s->event_at = 0;
	if ((rc = rs_jscan_doc(line, len, &ev, &where)) != RS_OK) {
		rs_warn("event %lu: malformed JSON at byte %zu, skipped",
		    s->events, where);
		goto bad;
	}
	if ((rc = rs_jscan_pick(line, ev, event_names, f, E_N)) != RS_OK) {
		rs_warn("event %lu: not a JSON object, skipped", s->events);
		goto bad;
	}
	if ((s->event_at = event_at(line, f[E_AT])) > 0)
		rs_stagestats_observe_since("rs_sync_event_delivery_seconds",
		    NULL, s->event_at, rs_wall_now());
	if (event_word(line, f[E_TYPE], type, sizeof type) == NULL ||
	    event_word(line, f[E_RESOURCE], res, sizeof res) == NULL) {
		rs_warn("event %lu: no type or resource, skipped", s->events);
		rc = RS_EPARSE;
		goto bad;
	}
	if (strcmp(type, "SYNCED") == 0) {
		event_synced(s, res, line, f[E_RV]);
		goto out;
	}
	if (strcmp(type, "BOOKMARK") == 0) {
		event_bookmark(s, res, line, f[E_RV], f[E_RELIST]);
		goto out;
	}
	if (strcmp(type, "ADDED") != 0 && strcmp(type, "MODIFIED") != 0 &&
	    strcmp(type, "DELETED") != 0) {
		rs_warn("event %lu: unknown type %.32s, skipped", s->events, type);
		rc = RS_EPARSE;
		goto bad;
	}
	if (rs_jscan_type(line, f[E_OBJECT]) != RS_JOBJECT) {
		rs_warn("event %lu: no object, skipped", s->events);
		rc = RS_EPARSE;
		goto bad;
	}
	/* the line is read whatever the handlers make of its object, as a
	 * reflector's store takes every delta it is given */
	if ((slot = read_rv_slot(s, res)) != NULL)
		read_rv_note(slot, line, object_rv(line, f[E_OBJECT]));
	if (slot == s->read_rv_pods) {
		int unknown = rs_jscan_type(line, f[E_UNKNOWN]) == RS_JTRUE;

		/* who set the owners matters only when a pod appears */
		if (strcmp(type, "ADDED") == 0) {
			s->line = line;
			s->ref_managers = f[E_MANAGERS];
		}
		rc = event_pod(s, type, line, f[E_OBJECT], unknown);
	} else if (slot == s->read_rv_ctrls) {
		rc = event_ctrl(s, type, line, f[E_OBJECT]);
	} else {
		rs_info(5, "event %lu: resource %.64s ignored", s->events, res);
	}
	if (rc != RS_OK)
		goto bad;
out:
	s->event_at = 0;
	s->line = NULL;
	return RS_OK;
bad:
	/* an object the cache could not take would be missing from every
	 * decision: better no controller (the supervisor starts it again,
	 * and it relists) than one that creates what exists */
	if (rc == RS_ENOMEM)
		rs_fatal(111, "unable to keep event %lu in the cache: %s",
		    s->events, rs_strerror(rc));
	s->event_at = 0;
	s->line = NULL;
	s->bad_events++;
	return rc;
}
