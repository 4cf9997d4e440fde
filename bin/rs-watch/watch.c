/* watch.c: one watch stream, from the last resourceVersion seen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "reflector.h"

struct stream {
	struct reflector *r;
	struct watch_end *end;
};

/* The server's watch ERROR: 410 Gone / Expired means the resourceVersion
 * is no longer in its window and only a list can bring us up to date. */
static rs_code
on_error(struct stream *s, const cJSON *obj)
{
	struct rs_kstatus st;

	memset(&st, 0, sizeof st);
	rs_kstatus_from_json(&st, 0, obj);
	snprintf(s->end->why, sizeof s->end->why, "%s: %s (code %ld)",
	    st.reason, st.message, st.code);
	if (st.code == 410 || strcmp(st.reason, "Expired") == 0 ||
	    strcmp(st.reason, "Gone") == 0)
		s->end->expired = 1;
	rs_kstatus_clear(&st);
	/* not RS_EAGAIN: rs_kube_stream takes that as its own retry */
	return RS_EAPI;
}

static rs_code
on_object(struct stream *s, const char *type, cJSON *obj)
{
	struct reflector *r = s->r;
	struct objid id;
	const char *kind;
	rs_code rc;

	event_prepare(obj, r->o->trim, NULL, NULL);
	if ((rc = event_objid(obj, &id)) != RS_OK) {
		snprintf(s->end->why, sizeof s->end->why,
		    "a %s event without name or resourceVersion", type);
		return RS_EPARSE;
	}
	if (r->kind[0] == '\0' && (kind = rs_json_str(obj, "kind", NULL)))
		snprintf(r->kind, sizeof r->kind, "%s", kind);
	if ((rc = event_emit(&r->buf, type, r->res.plural, 0, obj, 1)) != RS_OK)
		return rc;
	if (type[0] == 'D')
		seen_del(&r->seen, id.key);
	else if ((rc = seen_put(&r->seen, id.key, id.rv, id.uid,
	    r->ls.pass)) != RS_OK)
		return rc;
	snprintf(r->rv, sizeof r->rv, "%s", id.rv);
	return RS_OK;
}

/* A line the stream cannot be trusted past ends it: the next watch starts
 * again from the last event applied, so nothing is skipped. */
static rs_code
on_line(void *arg, char *line, size_t len)
{
	struct stream *s = arg;
	const char *type, *rv;
	cJSON *ev = NULL, *obj;
	rs_code rc = RS_OK;

	if (rs_json_parse(line, len, &ev, NULL) != RS_OK) {
		snprintf(s->end->why, sizeof s->end->why,
		    "a watch event that is not JSON");
		return RS_EPARSE;
	}
	type = rs_json_str(ev, "type", NULL);
	obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
	if (type == NULL || !cJSON_IsObject(obj)) {
		snprintf(s->end->why, sizeof s->end->why,
		    "a watch event without type or object");
		rc = RS_EPARSE;
	} else if (strcmp(type, "ERROR") == 0) {
		rc = on_error(s, obj);
	} else if (strcmp(type, "BOOKMARK") == 0) {
		/* moves the resume point; nothing to print */
		if ((rv = rs_json_str(obj, "metadata", "resourceVersion", NULL)))
			snprintf(s->r->rv, sizeof s->r->rv, "%s", rv);
	} else if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0 ||
	    strcmp(type, "DELETED") == 0) {
		rc = on_object(s, type, obj);
	} else {
		rs_warn("ignoring a watch event of unknown type '%.32s'", type);
	}
	if (rc == RS_OK)
		s->end->events++;
	cJSON_Delete(ev);
	return rc;
}

rs_code
watch_run(struct reflector *r, struct watch_end *end, struct rs_kresp *resp)
{
	struct stream s = { r, end };
	long timeout = r->o->min_watch_timeout *
	    (1.0 + backoff_rand(&r->bo));
	char *q = NULL, *url, *esc;
	int64_t t0;
	rs_code rc;
	int n;

	memset(end, 0, sizeof *end);
	if ((esc = rs_kube_escape(r->rv)) == NULL)
		return RS_ENOMEM;
	n = asprintf(&q, "watch=1&allowWatchBookmarks=true&resourceVersion=%s"
	    "&timeoutSeconds=%ld", esc, timeout);
	free(esc);
	if (n < 0)
		return RS_ENOMEM;
	url = reflector_url(r, q);
	free(q);
	if (url == NULL)
		return RS_ENOMEM;
	rs_info(2, "watching %s from resourceVersion %s for %ld s",
	    r->res.plural, r->rv, timeout);
	rs_info(4, "GET %s", url);
	t0 = rs_mono_ns();
	/* the client's bound: the server's timeout and some slack */
	rc = rs_kube_stream(r->o->kube, url, (timeout + 30) * 1000L, on_line,
	    &s, &r->stop, resp);
	end->ns = rs_mono_ns() - t0;
	free(url);
	return rc;
}
