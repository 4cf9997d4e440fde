#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event.h"
#include "linebuf.h"
#include "log.h"
#include "out.h"

static int
absent(struct rs_jspan s)
{
	return s.off == s.end;
}

static int
is_ws(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Whether k is the first member named key (bit in *done): the first of a
 * name decides, string or not, as cJSON's look-up has it; a later one of
 * the same name is not looked at. */
static int
first(const struct objtext *t, struct rs_jspan k, const char *key,
    unsigned bit, unsigned *done)
{
	if ((*done & bit) || !rs_jscan_keyeq(t->buf, k, key))
		return 0;
	*done |= bit;
	return 1;
}

/* *out is v when v is a string. */
static void
string_of(const struct objtext *t, struct rs_jspan v, struct rs_jspan *out)
{
	if (rs_jscan_type(t->buf, v) == RS_JSTRING)
		*out = v;
}

/* The member k: v of the object walked by md, left out with one comma:
 * the one after it when a member follows, else the one before it (after
 * prev_end). */
static void
cut(struct objtext *t, const struct rs_jiter *md, struct rs_jspan k,
    struct rs_jspan v, int has_prev, size_t prev_end)
{
	size_t i = v.end;

	while (i < md->end && is_ws(t->buf[i]))
		i++;
	if (i < md->end && t->buf[i] == ',') {
		for (i++; i < md->end && is_ws(t->buf[i]); i++)
			;
		t->cut_off = k.off;
		t->cut_end = i;
	} else if (has_prev) {
		t->cut_off = prev_end;
		t->cut_end = v.end;
	} else {
		t->cut_off = k.off;
		t->cut_end = v.end;
	}
}

/* Walks the rest of the container it walks. */
static void
walk_rest(struct rs_jiter *it)
{
	struct rs_jspan v;

	while (rs_jscan_value_next(it, &v) == RS_OK)
		;
}

/* Whether the object walked by o has a member named key; walks o to its
 * end. */
static int
has_member(const struct objtext *t, struct rs_jiter *o, const char *key)
{
	struct rs_jspan k, v;
	int found = 0;

	if (t->buf[o->start] != '{') {
		walk_rest(o);
		return 0;
	}
	while (rs_jscan_member(o, &k, &v) == RS_OK)
		if (!found && rs_jscan_keyeq(t->buf, k, key))
			found = 1;
	return found;
}

/* Whether the fieldsV1 walked by f has f:metadata with f:ownerReferences:
 * the entry's manager set (some of) the owners. Walks f to its end. */
static int
owns_refs(const struct objtext *t, struct rs_jiter *f)
{
	struct rs_jiter md;
	struct rs_jspan k, v;
	unsigned done = 0;
	int owns = 0;

	if (t->buf[f->start] != '{') {
		walk_rest(f);
		return 0;
	}
	while (rs_jscan_key(f, &k) == RS_OK) {
		if (first(t, k, "f:metadata", 1, &done) &&
		    rs_jscan_enter(f, &md) == RS_OK) {
			owns = has_member(t, &md, "f:ownerReferences");
			if (rs_jscan_leave(f, &md, NULL) != RS_OK)
				break;
			continue;
		}
		if (rs_jscan_elem(f, &v) != RS_OK)
			break;
	}
	return owns;
}

/* Keeps m among the ref_managers, once. */
static void
add_manager(struct objtext *t, struct rs_jspan m)
{
	size_t n = m.end - m.off;

	for (size_t i = 0; i < t->nmgr; i++)
		if (t->mgr[i].end - t->mgr[i].off == n &&
		    memcmp(t->buf + t->mgr[i].off, t->buf + m.off, n) == 0)
			return;
	if (t->nmgr < EVENT_MANAGERS_MAX)
		t->mgr[t->nmgr++] = m;
}

enum { E_MGR = 1, E_FIELDS = 2 };

/* One entry of managedFields, walked by e to its end. */
static void
scan_entry(struct objtext *t, struct rs_jiter *e)
{
	struct rs_jiter f;
	struct rs_jspan k, v, mgr = { 0, 0 };
	unsigned done = 0;
	int owns = 0, is_mgr;

	if (t->buf[e->start] != '{') {
		walk_rest(e);
		return;
	}
	while (rs_jscan_key(e, &k) == RS_OK) {
		if (first(t, k, "fieldsV1", E_FIELDS, &done) &&
		    rs_jscan_enter(e, &f) == RS_OK) {
			owns = owns_refs(t, &f);
			if (rs_jscan_leave(e, &f, NULL) != RS_OK)
				return;
			continue;
		}
		is_mgr = first(t, k, "manager", E_MGR, &done);
		if (rs_jscan_elem(e, &v) != RS_OK)
			return;
		if (is_mgr)
			string_of(t, v, &mgr);
	}
	if (owns && !absent(mgr))
		add_manager(t, mgr);
}

/* The value of managedFields, walked once from md: its entries' managers
 * noted, its span in *v. */
static rs_code
scan_managed(struct objtext *t, struct rs_jiter *md, struct rs_jspan *v)
{
	struct rs_jiter list, e;
	struct rs_jspan skip;
	rs_code rc;

	if ((rc = rs_jscan_enter(md, &list)) == RS_EPARSE)
		return rs_jscan_elem(md, v);    /* not a list: nothing in it */
	if (rc != RS_OK)
		return rc;
	if (t->buf[list.start] != '[')
		walk_rest(&list);
	else
		while ((rc = rs_jscan_enter(&list, &e)) != RS_EEOF) {
			if (rc != RS_OK) {      /* an entry that is no container */
				if (rs_jscan_elem(&list, &skip) != RS_OK)
					break;
				continue;
			}
			scan_entry(t, &e);
			if (rs_jscan_leave(&list, &e, NULL) != RS_OK)
				break;
		}
	return rs_jscan_leave(md, &list, v);
}

enum { M_NAME = 1, M_NS = 2, M_RV = 4, M_UID = 8, M_MF = 16, M_ALL = 31 };

/* metadata's members; whole: walked to its end, so that the walk of the
 * object can go on past it. managedFields is walked whatever trim says:
 * its owners of ownerReferences are printed even when it is kept. */
static void
scan_metadata(struct objtext *t, struct rs_jiter *md, int trim, int whole)
{
	struct rs_jspan k, v;
	unsigned done = 0;
	size_t prev_end = 0;
	int has_prev = 0;

	while ((whole || done != M_ALL) && rs_jscan_key(md, &k) == RS_OK) {
		if (first(t, k, "managedFields", M_MF, &done)) {
			if (scan_managed(t, md, &v) != RS_OK)
				break;
			if (trim)
				cut(t, md, k, v, has_prev, prev_end);
		} else {
			if (rs_jscan_elem(md, &v) != RS_OK)
				break;
			if (first(t, k, "name", M_NAME, &done))
				string_of(t, v, &t->name);
			else if (first(t, k, "namespace", M_NS, &done))
				string_of(t, v, &t->ns);
			else if (first(t, k, "resourceVersion", M_RV, &done))
				string_of(t, v, &t->rv);
			else if (first(t, k, "uid", M_UID, &done))
				string_of(t, v, &t->uid);
		}
		prev_end = v.end;
		has_prev = 1;
	}
}

/* metadata, entered: scanned when an object (else only walked), then left
 * unless the walk of the object stops here. RS_OK to go on. */
static rs_code
enter_metadata(struct objtext *t, struct rs_jiter *it, struct rs_jiter *md,
    int trim, int go_on)
{
	struct rs_jspan v;

	if (t->buf[md->start] == '{')
		scan_metadata(t, md, trim, go_on);
	else
		while (rs_jscan_elem(md, &v) == RS_OK)
			;
	return go_on ? rs_jscan_leave(it, md, NULL) : RS_EEOF;
}

enum { T_MD = 1, T_AV = 2, T_KIND = 4, T_ALL = 7 };

/* The object's members, walked in place by it; whole: to its end (it is
 * then at the closing brace). The server writes apiVersion and kind
 * before metadata: a watched object is seldom read past its metadata. */
static void
scan_object(struct objtext *t, struct rs_jiter *it, int trim,
    const char *api_version, const char *kind, int whole)
{
	struct rs_jiter md;
	struct rs_jspan k, v;
	unsigned done = api_version ? 0 : T_AV;
	int is_kind;

	while (whole || done != T_ALL) {
		if (rs_jscan_key(it, &k) != RS_OK)
			break;
		t->empty = 0;
		if (first(t, k, "metadata", T_MD, &done) &&
		    rs_jscan_enter(it, &md) == RS_OK) {
			if (enter_metadata(t, it, &md, trim,
			    whole || done != T_ALL) != RS_OK)
				break;
			continue;
		}
		is_kind = first(t, k, "kind", T_KIND, &done);
		if (!is_kind)
			first(t, k, "apiVersion", T_AV, &done);
		if (rs_jscan_elem(it, &v) != RS_OK)
			break;
		if (is_kind)
			string_of(t, v, &t->kind);
	}
	if (api_version && !(done & T_AV))
		t->add_api_version = api_version;
	if (kind && !(done & T_KIND))
		t->add_kind = kind;
}

static void
objtext_init(struct objtext *t, const char *buf)
{
	memset(t, 0, sizeof *t);
	t->buf = buf;
	t->empty = 1;
}

void
event_scan(struct objtext *t, const char *buf, struct rs_jspan obj,
    int trim, const char *api_version, const char *kind)
{
	struct rs_jiter it;

	objtext_init(t, buf);
	t->obj = obj;
	if (rs_jscan_type(buf, obj) == RS_JOBJECT &&
	    rs_jscan_iter(&it, buf, obj) == RS_OK)
		scan_object(t, &it, trim, api_version, kind, 0);
}

rs_code
event_scan_next(struct objtext *t, const char *buf, struct rs_jiter *items,
    int trim, const char *api_version, const char *kind)
{
	struct rs_jiter it;
	struct rs_jspan v;
	rs_code rc;

	objtext_init(t, buf);
	if ((rc = rs_jscan_enter(items, &it)) == RS_EPARSE)
		/* not even a container: no identity, skipped */
		return rs_jscan_elem(items, &t->obj);
	if (rc != RS_OK)
		return rc;
	/* an array has no identity: walked only */
	if (buf[it.start] == '{')
		scan_object(t, &it, trim, api_version, kind, 1);
	else
		while (rs_jscan_elem(&it, &v) == RS_OK)
			;
	return rs_jscan_leave(items, &it, &t->obj);
}

rs_code
event_objid(const struct objtext *t, struct objid *id)
{
	size_t n = 0;
	rs_code rc;

	if (absent(t->name) || absent(t->rv))
		return RS_EPARSE;
	if (!absent(t->ns)) {
		/* room for the slash */
		rc = rs_jscan_unescape(t->buf, t->ns, id->key,
		    sizeof id->key - 1, NULL);
		if (rc != RS_OK)
			return rc;
		/* a C string, as cJSON's strings were: a \u0000 ends it */
		if ((n = strlen(id->key)) > 0)
			id->key[n++] = '/';
	}
	rc = rs_jscan_unescape(t->buf, t->name, id->key + n, sizeof id->key - n,
	    NULL);
	if (rc != RS_OK)
		return rc;
	rc = rs_jscan_unescape(t->buf, t->rv, id->rv, sizeof id->rv, NULL);
	if (rc != RS_OK)
		return rc;
	id->uid[0] = '\0';
	if (!absent(t->uid))
		rc = rs_jscan_unescape(t->buf, t->uid, id->uid, sizeof id->uid,
		    NULL);
	return rc;
}

/* Drops the whitespace between tokens of p[0..*n), a validated text. */
static void
compact(char *p, size_t *n)
{
	size_t i, o = 0;
	int in = 0;

	for (i = 0; i < *n; i++) {
		if (in) {
			if (p[i] == '\\')
				p[o++] = p[i++];
			else if (p[i] == '"')
				in = 0;
		} else if (is_ws(p[i])) {
			continue;
		} else if (p[i] == '"') {
			in = 1;
		}
		p[o++] = p[i];
	}
	*n = o;
}

/* The object's text, less the cut, with the members to add after its
 * brace. A server that indents its JSON would break the line: a CR or LF
 * can only be whitespace between tokens (the scanner refuses them raw in
 * strings), and when there is one, all such whitespace goes. */
static void
put_object(struct linebuf *b, const struct objtext *t)
{
	const char *buf = t->buf;
	size_t start = b->len, n;

	linebuf_put(b, "{", 1);
	if (t->add_api_version)
		linebuf_put_member(b, "\"apiVersion\":", t->add_api_version);
	if (t->add_api_version && t->add_kind)
		linebuf_put(b, ",", 1);
	if (t->add_kind)
		linebuf_put_member(b, "\"kind\":", t->add_kind);
	if ((t->add_api_version || t->add_kind) && !t->empty)
		linebuf_put(b, ",", 1);
	if (t->cut_end > t->cut_off) {
		linebuf_put(b, buf + t->obj.off + 1, t->cut_off - t->obj.off - 1);
		linebuf_put(b, buf + t->cut_end, t->obj.end - t->cut_end);
	} else {
		linebuf_put(b, buf + t->obj.off + 1, t->obj.end - t->obj.off - 1);
	}
	n = b->len - start;
	if (memchr(b->p + start, '\n', n) || memchr(b->p + start, '\r', n)) {
		compact(b->p + start, &n);
		b->len = start + n;
	}
}

/* Room for ,"at": and the time. */
#define AT_MAX 48

/* ,"at":SECONDS.MICROSECONDS: the wall clock as the line is made, just
 * after its event was read, so that the stages downstream can tell how
 * long the event took to reach them (doc/metrics.md). One clock read a
 * line: tens of nanoseconds, next to microseconds of scanning. */
static void
put_at(struct linebuf *b)
{
	struct timespec ts;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(b->p + b->len, AT_MAX, ",\"at\":%lld.%06ld",
	    (long long)ts.tv_sec, ts.tv_nsec / 1000);
	if (n > 0 && n < AT_MAX)
		b->len += (size_t)n;
}

/* ,"ref_managers":[...]: the strings as the object has them. */
static void
put_managers(struct linebuf *b, const struct objtext *t)
{
	if (t == NULL || t->nmgr == 0)
		return;
	linebuf_puts(b, ",\"ref_managers\":[");
	for (size_t i = 0; i < t->nmgr; i++) {
		if (i > 0)
			linebuf_put(b, ",", 1);
		linebuf_put(b, t->buf + t->mgr[i].off, t->mgr[i].end - t->mgr[i].off);
	}
	linebuf_put(b, "]", 1);
}

/* Room for put_managers. */
static size_t
managers_len(const struct objtext *t)
{
	size_t n = 20;

	for (size_t i = 0; i < t->nmgr; i++)
		n += t->mgr[i].end - t->mgr[i].off + 1;
	return n;
}

/* type and resource need no escaping (checked words). */
static void
put_envelope(struct linebuf *b, const char *type, const char *resource,
    int final_state_unknown)
{
	b->len = 0;
	linebuf_puts(b, "{\"type\":\"");
	linebuf_puts(b, type);
	linebuf_puts(b, "\",\"resource\":\"");
	linebuf_puts(b, resource);
	linebuf_puts(b, "\"");
	put_at(b);
	if (final_state_unknown)
		linebuf_puts(b, ",\"final_state_unknown\":true");
}

rs_code
event_emit(struct linebuf *b, const char *type, const char *resource,
    int final_state_unknown, const struct objtext *t, int flush)
{
	size_t need = strlen(type) + strlen(resource) + 96 + AT_MAX;
	rs_code rc;

	need += t->obj.end - t->obj.off + 32 + managers_len(t);
	if (t->add_api_version)
		need += linebuf_quoted_max(strlen(t->add_api_version));
	if (t->add_kind)
		need += linebuf_quoted_max(strlen(t->add_kind));
	b->len = 0;
	if ((rc = linebuf_reserve(b, need)) != RS_OK)
		return rc;
	put_envelope(b, type, resource, final_state_unknown);
	put_managers(b, t);
	linebuf_puts(b, ",\"object\":");
	put_object(b, t);
	linebuf_put(b, "}", 1);
	/* a line the next stage skips would be an object missing from its
	 * cache: better to stop, loudly */
	if (b->max && b->len > b->max) {
		rs_error("a %s event of %zu bytes is longer than --max-line "
		    "(%zu bytes): raise it here and in rs-sync", resource,
		    b->len, b->max);
		return RS_ETOOBIG;
	}
	out_line(b->p, b->len, flush);
	return RS_OK;
}

rs_code
event_emit_rv(struct linebuf *b, const char *type, const char *resource,
    const char *rv, int relist, int flush)
{
	size_t need = strlen(type) + strlen(resource) + 80 + AT_MAX +
	    linebuf_quoted_max(strlen(rv));
	rs_code rc;

	b->len = 0;
	if ((rc = linebuf_reserve(b, need)) != RS_OK)
		return rc;
	put_envelope(b, type, resource, 0);
	linebuf_put_member(b, ",\"resourceVersion\":", rv);
	if (relist)
		linebuf_puts(b, ",\"relist\":true");
	linebuf_put(b, "}", 1);
	out_line(b->p, b->len, flush);
	return RS_OK;
}

rs_code
event_emit_gone(struct linebuf *b, const char *resource,
    const char *api_version, const char *kind, const struct seen_entry *e)
{
	const char *key = seen_key(e), *slash = strchr(key, '/');
	const char *name = slash ? slash + 1 : key;
	size_t need = strlen(resource) + 200 + AT_MAX;
	char ubuf[SEEN_UID_MAX];
	const char *uid = seen_uid(e, ubuf);
	rs_code rc;

	need += linebuf_quoted_max(strlen(key)) + linebuf_quoted_max(strlen(uid)) +
	    linebuf_quoted_max(strlen(seen_rv(e)));
	if (api_version)
		need += linebuf_quoted_max(strlen(api_version));
	if (kind)
		need += linebuf_quoted_max(strlen(kind));
	b->len = 0;
	if ((rc = linebuf_reserve(b, need)) != RS_OK)
		return rc;
	put_envelope(b, "DELETED", resource, 1);
	linebuf_puts(b, ",\"object\":{");
	if (api_version) {
		linebuf_put_member(b, "\"apiVersion\":", api_version);
		linebuf_put(b, ",", 1);
	}
	if (kind) {
		linebuf_put_member(b, "\"kind\":", kind);
		linebuf_put(b, ",", 1);
	}
	linebuf_put_member(b, "\"metadata\":{\"name\":", name);
	if (slash) {
		linebuf_puts(b, ",\"namespace\":");
		linebuf_put_quoted(b, key, slash - key);
	}
	if (uid[0])
		linebuf_put_member(b, ",\"uid\":", uid);
	linebuf_put_member(b, ",\"resourceVersion\":", seen_rv(e));
	linebuf_puts(b, "}}}");
	out_line(b->p, b->len, 0);
	return RS_OK;
}
