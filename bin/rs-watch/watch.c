/* watch.c: one watch stream, from the last resourceVersion seen, or, for
 * a streaming list, one that sends every object first (sendInitialEvents)
 * and then a bookmark that completes the list, and goes on as a watch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "jscan.h"
#include "json.h"
#include "log.h"
#include "out.h"
#include "pbpod.h"
#include "protobuf.h"
#include "reflector.h"
#include "shardcheck.h"

struct stream {
	struct reflector *r;
	struct watch_end *end;
};

/* The server's watch ERROR: 410 Gone / Expired means the resourceVersion
 * is no longer in its window and only a list can bring us up to date. */
static rs_code
on_error(struct stream *s, struct rs_kstatus *st)
{
	snprintf(s->end->why, sizeof s->end->why, "%s: %s (code %ld)",
	    st->reason, st->message, st->code);
	if (st->code == 410 || strcmp(st->reason, "Expired") == 0 ||
	    strcmp(st->reason, "Gone") == 0)
		s->end->expired = 1;
	rs_kstatus_clear(st);
	/* not RS_EAGAIN: rs_kube_stream takes that as its own retry */
	return RS_EAPI;
}

static rs_code
on_object(struct stream *s, const char *type, const char *line,
    struct rs_jspan obj)
{
	struct reflector *r = s->r;
	struct objtext t;
	struct objid id;
	rs_code rc;

	event_scan(&t, line, obj, r->o->trim, NULL, NULL);
	if ((rc = event_objid(&t, &id)) != RS_OK) {
		snprintf(s->end->why, sizeof s->end->why, rc == RS_ETOOBIG ?
		    "a %s event with a name, uid or resourceVersion too long" :
		    "a %s event without name or resourceVersion", type);
		return RS_EPARSE;
	}
	if (r->kind[0] == '\0' && t.kind.off != t.kind.end &&
	    rs_jscan_unescape(line, t.kind, r->kind, sizeof r->kind,
	    NULL) != RS_OK)
		r->kind[0] = '\0';
	/* out of the shard: as if never there, but the stream has come
	 * this far */
	if (!shard_keep(r, &t)) {
		if (!r->ls.active)
			snprintf(r->rv, sizeof r->rv, "%s", id.rv);
		return RS_OK;
	}
	/* the resume point stays unset until the list is complete */
	if (r->ls.active && type[0] != 'D')
		return list_object(r, &t, &id);
	if ((rc = event_emit(&r->buf, type, r->res.plural, 0, &t, 0)) !=
	    RS_OK)
		return rc;
	if (type[0] == 'D')
		seen_del(&r->seen, id.key);
	else if ((rc = seen_put(&r->seen, id.key, id.rv, id.uid,
	    r->ls.pass)) != RS_OK)
		return rc;
	if (!r->ls.active)
		snprintf(r->rv, sizeof r->rv, "%s", id.rv);
	return RS_OK;
}

/* The rare events go through a tree: an ERROR's Status. */
static rs_code
on_error_text(struct stream *s, const char *line, struct rs_jspan obj)
{
	struct rs_kstatus st;
	cJSON *o = NULL;

	if (rs_json_parse(line + obj.off, obj.end - obj.off, &o, NULL) !=
	    RS_OK) {
		snprintf(s->end->why, sizeof s->end->why,
		    "a watch event that is not JSON");
		return RS_EPARSE;
	}
	memset(&st, 0, sizeof st);
	rs_kstatus_from_json(&st, 0, o);
	cJSON_Delete(o);
	return on_error(s, &st);
}

/* The bookmark of a streaming list that says every object was sent. */
static int
ends_initial_events(const char *line, struct rs_jspan obj)
{
	struct rs_jspan v;
	char val[8];

	return rs_jscan_get(line, obj, &v, "metadata", "annotations",
	    "k8s.io/initial-events-end", NULL) == RS_OK &&
	    rs_jscan_type(line, v) == RS_JSTRING &&
	    rs_jscan_unescape(line, v, val, sizeof val, NULL) == RS_OK &&
	    strcmp(val, "true") == 0;
}

/* The server has sent everything up to the bookmark's resourceVersion:
 * it is the resume point, and printed, so that a consumer knows how far
 * its cache is current even when nothing of its own changed. A bookmark
 * without a usable resourceVersion says nothing and is passed over; so
 * does one in a streaming list but the one that completes it. */
static rs_code
on_bookmark(struct stream *s, const char *line, struct rs_jspan obj)
{
	struct reflector *r = s->r;
	struct rs_jspan v;
	char rv[sizeof r->rv];

	if (rs_jscan_get(line, obj, &v, "metadata", "resourceVersion",
	    NULL) != RS_OK || rs_jscan_type(line, v) != RS_JSTRING ||
	    rs_jscan_unescape(line, v, rv, sizeof rv, NULL) != RS_OK ||
	    rv[0] == '\0')
		return RS_OK;
	if (r->ls.active)
		return ends_initial_events(line, obj) ?
		    list_complete(r, rv) : RS_OK;
	memcpy(r->rv, rv, sizeof rv);
	return event_emit_rv(&r->buf, "BOOKMARK", r->res.plural, rv, 0, 0);
}

/* The event's type and object: the first member of each name, as cJSON's
 * look-up found them. */
static void
envelope(const char *line, struct rs_jspan ev, struct rs_jspan *type,
    struct rs_jspan *obj)
{
	struct rs_jiter it;
	struct rs_jspan k, v;
	int got_type = 0, got_obj = 0;

	type->off = type->end = obj->off = obj->end = 0;
	if (rs_jscan_iter(&it, line, ev) != RS_OK)
		return;
	while ((!got_type || !got_obj) && rs_jscan_member(&it, &k, &v) == RS_OK)
		if (!got_type && rs_jscan_keyeq(line, k, "type")) {
			got_type = 1;
			if (rs_jscan_type(line, v) == RS_JSTRING)
				*type = v;
		} else if (!got_obj && rs_jscan_keyeq(line, k, "object")) {
			got_obj = 1;
			if (rs_jscan_type(line, v) == RS_JOBJECT)
				*obj = v;
		}
}

/* A line the stream cannot be trusted past ends it: the next watch starts
 * again from the last event applied, so nothing is skipped. The line is
 * checked whole before anything of it is used, so that nothing is printed
 * of a line that turns out to be malformed. */
static rs_code on_event(struct stream *s, const char *type,
    const char *line, struct rs_jspan obj);

static rs_code
on_line(void *arg, char *line, size_t len)
{
	struct stream *s = arg;
	struct rs_jspan ev, tv, obj;
	char type[64];
	rs_code rc;

	if (rs_jscan_doc(line, len, &ev, NULL) != RS_OK) {
		snprintf(s->end->why, sizeof s->end->why,
		    "a watch event that is not JSON");
		return RS_EPARSE;
	}
	envelope(line, ev, &tv, &obj);
	if (tv.off == tv.end || obj.off == obj.end) {
		snprintf(s->end->why, sizeof s->end->why,
		    "a watch event without type or object");
		return RS_EPARSE;
	}
	/* a type too long for this is none we know: what fits is shown */
	rs_jscan_unescape(line, tv, type, sizeof type, NULL);
	if (strcmp(type, "ERROR") == 0) {
		rc = on_error_text(s, line, obj);
		if (rc == RS_OK)
			s->end->events++;
		return rc;
	}
	return on_event(s, type, line, obj);
}

/* An event but ERROR, its object in text. */
static rs_code
on_event(struct stream *s, const char *type, const char *line,
    struct rs_jspan obj)
{
	rs_code rc = RS_OK;

	if (strcmp(type, "BOOKMARK") == 0) {
		rc = on_bookmark(s, line, obj);
	} else if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0 ||
	    strcmp(type, "DELETED") == 0) {
		rc = on_object(s, type, line, obj);
	} else {
		rs_warn("ignoring a watch event of unknown type '%.32s'", type);
	}
	if (rc == RS_OK)
		s->end->events++;
	return rc;
}

/* A watch event in protobuf: type 1, object 2 (a RawExtension, whose
 * raw 1 holds the object in its envelope). */
static rs_code
event_parts(const char *frame, size_t len, struct rs_pbspan *type,
    struct rs_pbunknown *u)
{
	static const uint32_t event[] = { 1, 2 }, raw_extension[] = { 1 };
	struct rs_pbspan ev = { (const unsigned char *)frame, len }, f[2], raw;

	if (rs_pb_pick(ev, event, f, 2) != RS_OK || f[0].p == NULL ||
	    f[1].p == NULL || rs_pb_pick(f[1], raw_extension, &raw, 1) != RS_OK ||
	    raw.p == NULL)
		return RS_EPARSE;
	*type = f[0];
	return rs_pb_unknown(raw, u);
}

/* The ERROR of a stream in protobuf: its Status. */
static rs_code
on_error_pb(struct stream *s, const struct rs_pbunknown *u)
{
	struct rs_kstatus st;

	memset(&st, 0, sizeof st);
	if (!rs_pb_eq(u->kind, "Status") ||
	    rs_kstatus_from_pb(&st, 0, u->raw) != RS_OK) {
		rs_kstatus_clear(&st);
		snprintf(s->end->why, sizeof s->end->why,
		    "a watch ERROR event without a Status");
		return RS_EPARSE;
	}
	return on_error(s, &st);
}

/* An event of a stream in protobuf: its pod read as the JSON of the
 * fields we print (pbpod.h), then taken as an event in JSON is. */
static rs_code
on_frame(void *arg, char *frame, size_t len)
{
	struct stream *s = arg;
	struct reflector *r = s->r;
	struct rs_pbspan tv;
	struct rs_pbunknown u;
	struct rs_jspan obj;
	char type[64];
	rs_code rc;

	if (event_parts(frame, len, &tv, &u) != RS_OK) {
		snprintf(s->end->why, sizeof s->end->why,
		    "a watch event that is not protobuf");
		return RS_EPARSE;
	}
	snprintf(type, sizeof type, "%.*s", (int)tv.len, (const char *)tv.p);
	if (strcmp(type, "ERROR") == 0)
		return on_error_pb(s, &u);
	if (!rs_pb_eq(u.kind, "Pod")) {
		snprintf(s->end->why, sizeof s->end->why,
		    "a %s event of kind %.*s, not Pod", type,
		    (int)(u.kind.len > 64 ? 64 : u.kind.len),
		    u.kind.p ? (const char *)u.kind.p : "");
		return RS_EPARSE;
	}
	r->pbtext.len = 0;
	rc = pbpod_json(&r->pbtext, u.raw, u.api_version, u.kind, r->o->trim);
	if (rc == RS_EPARSE)
		snprintf(s->end->why, sizeof s->end->why,
		    "a %s event whose pod is not protobuf", type);
	if (rc != RS_OK)
		return rc;
	obj.off = 0;
	obj.end = r->pbtext.len;
	return on_event(s, type, r->pbtext.p, obj);
}

/* The events read so far are all out: write them in one go. Not in a
 * streaming list, whose objects come a few at a time: written as the
 * buffer fills and when the list is complete, they reach the consumer in
 * large writes as a page's do, not in thousands of small ones that wake
 * it as many times (100,000 pods: 1.5 CPU seconds more in all). Nor does
 * a list wait for --batch: its writes are large already, and a relist is
 * the time to recovery. */
static int
on_idle(void *arg)
{
	struct stream *s = arg;

	if (s->r->ls.active)
		return 0;
	out_flush();
	return 1;
}

rs_code
watch_run(struct reflector *r, struct watch_end *end, struct rs_kresp *resp)
{
	struct stream s = { r, end };
	struct rs_kube_batch batch = { on_idle, r->o->batch_ms };
	long timeout = r->o->min_watch_timeout *
	    (1.0 + backoff_rand(&r->bo));
	char *q = NULL, *url, *esc;
	int64_t t0;
	rs_code rc;
	int n;

	memset(end, 0, sizeof *end);
	/* a streaming list reads the latest state, as a list without a
	 * resourceVersion does: resourceVersion unset, NotOlderThan it */
	if (r->ls.active) {
		n = asprintf(&q, "watch=1&sendInitialEvents=true&"
		    "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
		    "&timeoutSeconds=%ld", timeout);
	} else {
		if ((esc = rs_kube_escape(r->rv)) == NULL)
			return RS_ENOMEM;
		n = asprintf(&q, "watch=1&allowWatchBookmarks=true&"
		    "resourceVersion=%s&timeoutSeconds=%ld", esc, timeout);
		free(esc);
	}
	if (n < 0)
		return RS_ENOMEM;
	url = reflector_url(r, q);
	free(q);
	if (url == NULL)
		return RS_ENOMEM;
	if (r->ls.active)
		rs_info(2, "listing %s by a streaming watch", r->res.plural);
	else
		rs_info(2, "watching %s from resourceVersion %s for %ld s",
		    r->res.plural, r->rv, timeout);
	rs_info(4, "GET %s", url);
	t0 = rs_mono_ns();
	/* the client's bound: the server's timeout and some slack */
	rc = (r->pb ? rs_kube_stream_pb : rs_kube_stream)(r->o->kube, url,
	    (timeout + 30) * 1000L, r->pb ? on_frame : on_line, &s, &batch,
	    &r->stop, resp);
	end->ns = rs_mono_ns() - t0;
	free(url);
	return rc;
}
