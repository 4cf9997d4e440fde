/* list.c: the paginated list, printed as the difference from what was
 * printed before (everything, the first time). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "jscan.h"
#include "log.h"
#include "out.h"
#include "pbpod.h"
#include "reflector.h"
#include "shardcheck.h"

/* ASan: gcc says so with __SANITIZE_ADDRESS__, clang with a feature. */
#if defined(__SANITIZE_ADDRESS__)
#define RS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RS_ASAN 1
#endif
#endif

/* After this many expired continue tokens in one list, the next attempt
 * asks for everything at once, as client-go's pager does on the first. */
#define LIST_EXPIRED_PAGED 1

void
list_begin(struct reflector *r, int snapshot)
{
	struct listing *ls = &r->ls;

	if (++ls->pass == 0)
		ls->pass = 1;
	ls->snap_from = snapshot ? ls->pass : 0;
	ls->active = 1;
	ls->streaming = r->o->stream_list;
	free(ls->cont);
	ls->cont = NULL;
	ls->expired = 0;
	ls->pages = ls->items = ls->dropped = 0;
	ls->echo = 0;
	ls->t0 = rs_mono_ns();
	/* a streaming list's own stream is the first watch after it */
	r->watches = 0;
}

void
list_restart(struct reflector *r, int token_expired, int streaming)
{
	uint32_t snap = r->ls.snap_from;
	int expired = r->ls.expired + (token_expired != 0);
	int64_t t0 = r->ls.t0;

	list_begin(r, 0);
	r->ls.snap_from = snap;
	r->ls.expired = expired;
	r->ls.t0 = t0;
	r->ls.streaming = streaming;
}

static char *
page_url(const struct reflector *r)
{
	char *q = NULL, *esc = NULL, *url;
	long limit = r->ls.expired > LIST_EXPIRED_PAGED ? 0 : r->o->page_size;
	int n;

	if (r->ls.cont && (esc = rs_kube_escape(r->ls.cont)) == NULL)
		return NULL;
	if (limit > 0)
		n = asprintf(&q, "limit=%ld%s%s", limit, esc ? "&continue=" : "",
		    esc ? esc : "");
	else
		n = asprintf(&q, "%s", "");
	free(esc);
	if (n < 0)
		return NULL;
	url = reflector_url(r, q);
	free(q);
	return url;
}

static rs_code
emit_gone(void *arg, const struct seen_entry *e)
{
	struct reflector *r = arg;

	return event_emit_gone(&r->buf, r->res.plural, r->api_version,
	    r->kind[0] ? r->kind : NULL, e);
}

/* One listed object against what was printed: new is ADDED, a changed
 * resourceVersion is MODIFIED, a new uid under the same name is the old
 * object's deletion (final state unknown) and an ADDED. */
rs_code
list_object(struct reflector *r, const struct objtext *t,
    const struct objid *id)
{
	char uid[SEEN_UID_MAX];
	struct seen_entry *e;
	const char *type = NULL;
	rs_code rc;

	e = seen_get(&r->seen, id->key);
	if (e == NULL)
		type = "ADDED";
	else if (strcmp(seen_uid(e, uid), id->uid) != 0) {
		if ((rc = emit_gone(r, e)) != RS_OK)
			return rc;
		type = "ADDED";
	} else if (strcmp(seen_rv(e), id->rv) != 0)
		type = "MODIFIED";
	else if (r->ls.snap_from && e->mark < r->ls.snap_from)
		type = "MODIFIED";
	if (type && (rc = event_emit(&r->buf, type, r->res.plural, 0, t,
	    0)) != RS_OK)
		return rc;
	r->ls.items++;
	return seen_put(&r->seen, id->key, id->rv, id->uid, r->ls.pass);
}

/* An item of a page: one without a usable identity is passed over. */
static rs_code
list_item(struct reflector *r, const struct objtext *t)
{
	struct objid id;
	rs_code rc;

	if ((rc = event_objid(t, &id)) != RS_OK) {
		rs_warn(rc == RS_ETOOBIG ? "skipping a listed %s with a name, "
		    "uid or resourceVersion too long" :
		    "skipping a listed %s without name or resourceVersion",
		    r->res.plural);
		return RS_OK;
	}
	if (!shard_keep(r, t))
		return RS_OK;
	return list_object(r, t, &id);
}

/* The kind of the items: "PodList" gives "Pod". */
static void
learn_kind(struct reflector *r, const char *body, struct rs_jspan kind)
{
	char k[sizeof r->kind + 4];
	size_t n;

	if (r->kind[0] || rs_jscan_type(body, kind) != RS_JSTRING ||
	    rs_jscan_unescape(body, kind, k, sizeof k, NULL) != RS_OK ||
	    (n = strlen(k)) <= 4 || strcmp(k + n - 4, "List") != 0)
		return;
	memcpy(r->kind, k, n - 4);
	r->kind[n - 4] = '\0';
}

static rs_code
list_done(struct reflector *r, const char *rv)
{
	char how[32], drop[64] = "";
	rs_code rc;

	if ((rc = seen_sweep(&r->seen, r->ls.pass, emit_gone, r)) != RS_OK)
		return rc;
	out_flush();
	snprintf(r->rv, sizeof r->rv, "%s", rv);
	r->ls.active = 0;
	free(r->ls.cont);
	r->ls.cont = NULL;
	if (r->ls.streaming)
		snprintf(how, sizeof how, "1 stream");
	else
		snprintf(how, sizeof how, "%ld page%s", r->ls.pages,
		    r->ls.pages == 1 ? "" : "s");
	if (r->o->shard_said)
		snprintf(drop, sizeof drop, " (%ld out of the shard dropped)",
		    r->ls.dropped);
	rs_info(1, "listed %ld %s%s in %s at resourceVersion %s in %.2f s",
	    r->ls.items, r->res.plural, drop, how, r->rv,
	    (rs_mono_ns() - r->ls.t0) / 1e9);
	shard_tell(r);
	return RS_OK;
}

rs_code
list_complete(struct reflector *r, const char *rv)
{
	const char *type = !r->synced || r->ls.snap_from ? "SYNCED" :
	    "BOOKMARK";
	rs_code rc;

	if ((rc = list_done(r, rv)) != RS_OK)
		return rc;
	/* a relist printed only the difference, maybe nothing at all: either
	 * way the consumer's position reaches the list's resourceVersion, and
	 * its BOOKMARK says that every object was listed again, changed or
	 * not, as client-go's Replace hands each to the update handler */
	if ((rc = event_emit_rv(&r->buf, type, r->res.plural, r->rv,
	    type[0] == 'B', 1)) != RS_OK)
		return rc;
	r->synced = 1;
	return RS_OK;
}

/* The parts of a list response, each the first member of its name. */
struct listparts {
	struct rs_jspan kind, rv, cont;
	int shard_info;
};

static void
list_parts(const char *body, struct rs_jspan list, struct listparts *lp)
{
	struct rs_jspan md, si;

	memset(lp, 0, sizeof *lp);
	rs_jscan_find(body, list, "kind", &lp->kind);
	if (rs_jscan_find(body, list, "metadata", &md) != RS_OK)
		return;
	lp->shard_info = rs_jscan_find(body, md, "shardInfo", &si) == RS_OK;
	if (rs_jscan_find(body, md, "resourceVersion", &lp->rv) != RS_OK ||
	    rs_jscan_type(body, lp->rv) != RS_JSTRING)
		lp->rv.off = lp->rv.end = 0;
	if (rs_jscan_find(body, md, "continue", &lp->cont) != RS_OK ||
	    rs_jscan_type(body, lp->cont) != RS_JSTRING)
		lp->cont.off = lp->cont.end = 0;
}

/* The items, to be walked in place (the array is not skipped over first
 * to find its end): the first member named items, when an array. */
static int
list_items(const char *body, struct rs_jspan list, struct rs_jiter *items)
{
	struct rs_jiter it;
	struct rs_jspan k, v;

	if (rs_jscan_iter(&it, body, list) != RS_OK)
		return 0;
	while (rs_jscan_key(&it, &k) == RS_OK) {
		if (rs_jscan_keyeq(body, k, "items"))
			return rs_jscan_enter(&it, items) == RS_OK &&
			    body[items->start] == '[';
		if (rs_jscan_elem(&it, &v) != RS_OK)
			return 0;
	}
	return 0;
}

/* The continue token, unescaped into a string of its own; NULL when none
 * or empty, *rc set on failure. */
static char *
list_cont(const char *body, struct rs_jspan cont, rs_code *rc)
{
	size_t n = cont.end - cont.off;
	char *c;

	*rc = RS_OK;
	if (n <= 2)
		return NULL;
	/* unescaped, a string is never longer than its text */
	if ((c = malloc(n)) == NULL) {
		*rc = RS_ENOMEM;
		return NULL;
	}
	if ((*rc = rs_jscan_unescape(body, cont, c, n, NULL)) != RS_OK ||
	    c[0] == '\0') {
		free(c);
		return NULL;
	}
	return c;
}

/* The next page, in JSON or (pb) protobuf. */
static rs_code
page_get(struct reflector *r, struct rs_kresp *resp, int pb)
{
	char *url;
	rs_code rc;

	if ((url = page_url(r)) == NULL)
		return RS_ENOMEM;
	rs_info(4, "GET %s%s", url, pb ? " (protobuf)" : "");
	rc = pb ? rs_kube_get_pb(r->o->kube, url, resp) :
	    rs_kube_do(r->o->kube, "GET", url, NULL, NULL, 0, resp);
	free(url);
	return rc;
}

/* A page is printed: cont (owned, NULL for none) is where the next one
 * starts; without one the list is complete at rv. */
static rs_code
page_end(struct reflector *r, char *cont, const char *rv, int *more)
{
	r->ls.pages++;
	free(r->ls.cont);
	r->ls.cont = cont;
	*more = cont != NULL;
	if (*more) {
		out_flush();
		return RS_OK;
	}
	return list_complete(r, rv);
}

/* One page: fetch, print, remember where the next one starts. *more is
 * set when there is a next page. The body is checked whole before any
 * item of it is printed; then the items are read from it one by one. */
static rs_code
list_page(struct reflector *r, struct rs_kresp *resp, int *more)
{
	struct listparts lp;
	struct rs_jspan list;
	struct rs_jiter items;
	struct objtext t;
	char rv[sizeof r->rv], *cont;
	rs_code rc;

	if ((rc = page_get(r, resp, 0)) != RS_OK)
		return rc;
	if (resp->body == NULL ||
	    rs_jscan_doc(resp->body, resp->len, &list, NULL) != RS_OK) {
		snprintf(resp->status.message, sizeof resp->status.message,
		    "the list response is not JSON");
		return RS_EPARSE;
	}
	list_parts(resp->body, list, &lp);
	rc = lp.rv.off == lp.rv.end ? RS_EPARSE :
	    rs_jscan_unescape(resp->body, lp.rv, rv, sizeof rv, NULL);
	if (rc != RS_OK || rv[0] == '\0') {
		snprintf(resp->status.message, sizeof resp->status.message,
		    rc == RS_ETOOBIG ? "the list response's resourceVersion is "
		    "too long" : "the list response has no resourceVersion");
		return RS_EPARSE;
	}
	learn_kind(r, resp->body, lp.kind);
	shard_echo(r, lp.shard_info);
	if (list_items(resp->body, list, &items))
		while (event_scan_next(&t, resp->body, &items, r->o->trim,
		    r->api_version, r->kind[0] ? r->kind : NULL) == RS_OK)
			if ((rc = list_item(r, &t)) != RS_OK)
				return rc;
	cont = list_cont(resp->body, lp.cont, &rc);
	if (rc != RS_OK)
		return rc;
	return page_end(r, cont, rv, more);
}

/* A page in protobuf: a PodList, whose ListMeta (1) has the
 * resourceVersion (2) and continue token (3), and whose items (2) are
 * pods. The list's own fields are checked before any item is printed;
 * an item that is no pod stops the page after the items before it, which
 * the page's next attempt does not print again (they are seen). */
struct pbpage {
	struct rs_pbspan list, rv, cont, shard_info;
};

static rs_code
pb_page_parts(const struct rs_kresp *resp, struct pbpage *pg)
{
	/* ListMeta: resourceVersion 2, continue 3, shardInfo 5 */
	static const uint32_t list_meta[] = { 1 }, rv_cont[] = { 2, 3, 5 };
	struct rs_pbspan body = { (const unsigned char *)resp->body,
	    resp->len }, meta, f[3];
	struct rs_pbunknown u;

	memset(pg, 0, sizeof *pg);
	if (resp->body == NULL || rs_pb_unknown(body, &u) != RS_OK ||
	    !rs_pb_eq(u.kind, "PodList") ||
	    rs_pb_pick(u.raw, list_meta, &meta, 1) != RS_OK ||
	    rs_pb_pick(meta, rv_cont, f, 3) != RS_OK)
		return RS_EPARSE;
	pg->list = u.raw;
	pg->rv = f[0];
	pg->cont = f[1];
	pg->shard_info = f[2];
	return RS_OK;
}

static rs_code
pb_item(struct reflector *r, struct rs_pbspan pod)
{
	static const struct rs_pbspan none;
	struct rs_jspan obj;
	struct objtext t;
	rs_code rc;

	r->pbtext.len = 0;
	if ((rc = pbpod_json(&r->pbtext, pod, none, none, r->o->trim)) != RS_OK)
		return rc;
	obj.off = 0;
	obj.end = r->pbtext.len;
	event_scan(&t, r->pbtext.p, obj, r->o->trim, r->api_version, "Pod");
	return list_item(r, &t);
}

static rs_code
list_page_pb(struct reflector *r, struct rs_kresp *resp, int *more)
{
	struct pbpage pg;
	struct rs_pbiter it;
	struct rs_pbfield f;
	char rv[sizeof r->rv], *cont = NULL;
	rs_code rc;

	if ((rc = page_get(r, resp, 1)) != RS_OK)
		return rc;
	if (pb_page_parts(resp, &pg) != RS_OK) {
		snprintf(resp->status.message, sizeof resp->status.message,
		    "the list response is not a PodList in protobuf");
		return RS_EPARSE;
	}
	if (pg.rv.len == 0 || pg.rv.len >= sizeof rv) {
		snprintf(resp->status.message, sizeof resp->status.message,
		    pg.rv.len ? "the list response's resourceVersion is too "
		    "long" : "the list response has no resourceVersion");
		return RS_EPARSE;
	}
	memcpy(rv, pg.rv.p, pg.rv.len);
	rv[pg.rv.len] = '\0';
	if (r->kind[0] == '\0')
		snprintf(r->kind, sizeof r->kind, "Pod");
	shard_echo(r, pg.shard_info.p != NULL);
	rs_pb_iter(&it, pg.list);
	while (rs_pb_next(&it, &f) == RS_OK) {
		if (f.num != 2 || f.wire != RS_PB_BYTES)
			continue;
		if ((rc = pb_item(r, f.s)) == RS_EPARSE) {
			snprintf(resp->status.message, sizeof
			    resp->status.message, "an item of the list "
			    "response is not a pod in protobuf");
			return rc;
		}
		if (rc != RS_OK)
			return rc;
	}
	if (pg.cont.len > 0 &&
	    (cont = strndup((const char *)pg.cont.p, pg.cont.len)) == NULL)
		return RS_ENOMEM;
	return page_end(r, cont, rv, more);
}

rs_code
list_run(struct reflector *r, struct rs_kresp *resp)
{
	int more = 1;
	rs_code rc;

	while (more) {
		rc = (r->pb ? list_page_pb : list_page)(r, resp, &more);
		if (rc == RS_EAPI && resp->code == 410 && r->ls.cont) {
			rs_info(1, "the continue token of the %s list expired "
			    "after %ld pages (%s); listing again from the start%s",
			    r->res.plural, r->ls.pages, resp->status.message,
			    r->ls.expired >= LIST_EXPIRED_PAGED ?
			    ", in one request" : "");
			rs_kresp_free(resp);
			memset(resp, 0, sizeof *resp);
			list_restart(r, 1, 0);
			more = 1;
			continue;
		}
		if (rc != RS_OK)
			return rc;
		rs_kresp_free(resp);
		memset(resp, 0, sizeof *resp);
	}
	/* A page's body took megabytes that the watch never needs again:
	 * hand them back rather than keep them resident for good. Not under
	 * a sanitizer: its allocator is not glibc's, whose arenas the first
	 * malloc_trim would set up, racing the other threads' (a crash). */
#ifndef RS_ASAN
	malloc_trim(0);
#endif
	return RS_OK;
}
