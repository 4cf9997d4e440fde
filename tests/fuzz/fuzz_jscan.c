/* fuzz_jscan: libcommon/jscan.c, and rs-watch's rendering of an object
 * from its text (bin/rs-watch/event.c). The first byte picks rs-watch's
 * options: bit 0 trims managedFields, bit 1 adds apiVersion "v1", bit 2
 * adds kind "Pod"; the rest is the JSON text.
 * Oracle: no crash, sanitizer report or leak, and
 *  - a text the scanner takes, cJSON (rs_json_parse) takes too, and the
 *    scanner's walkers see the same tree: types, members in order, keys
 *    and strings unescaped, numbers (rs_jscan_double too), first-of-a-name
 *    look-ups (rs_jscan_find and rs_jscan_pick);
 *  - a text it refuses, the walkers still read within bounds;
 *  - an object rendered as rs-watch prints it parses, and is the input
 *    with its first metadata.managedFields removed (when trimming) and
 *    apiVersion and kind first when it had none; its identity is what
 *    cJSON's look-ups give (a text with a \u0000 is left out of this
 *    check: cJSON cuts a key at it, the scanner and Go do not), and its
 *    envelope carries the time "at" and, as "ref_managers", the managers
 *    of the managedFields entries whose fieldsV1 has f:metadata with
 *    f:ownerReferences (as a set, at most EVENT_MANAGERS_MAX of them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "jscan.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* out.c's, which the target replaces: the line is kept to be checked. */
static const char *line;
static size_t line_len;

void
out_line(const char *s, size_t len, int flush)
{
	(void)flush;
	line = s;
	line_len = len;
}

#define CHECK(c) do { if (!(c)) { \
	fprintf(stderr, "fuzz_jscan: %s:%d: %s\n", __FILE__, __LINE__, #c); \
	abort(); } } while (0)

/* s unescaped, malloc'd; *n its length. */
static char *
unesc(const char *buf, struct rs_jspan s, size_t *n)
{
	char *out = malloc(s.end - s.off);

	CHECK(out != NULL);
	CHECK(rs_jscan_unescape(buf, s, out, s.end - s.off, n) == RS_OK);
	return out;
}

/* What a pick finds for names[i] is what find finds (an empty span
 * where find finds none). */
static int
pick_agrees(const char *buf, struct rs_jspan obj, const char *const *names,
    const struct rs_jspan *out, size_t i)
{
	struct rs_jspan f;

	if (rs_jscan_find(buf, obj, names[i], &f) != RS_OK)
		return out[i].off == out[i].end;
	return out[i].off == f.off && out[i].end == f.end;
}

/* A pick of name between two other names finds what find found. */
static int
pick_is(const char *buf, struct rs_jspan obj, const char *name,
    struct rs_jspan want)
{
	const char *names[] = { "metadata", name, "" };
	struct rs_jspan out[3];

	if (strcmp(name, names[0]) == 0 || strcmp(name, names[2]) == 0)
		return 1;
	return rs_jscan_pick(buf, obj, names, out, 3) == RS_OK &&
	    pick_agrees(buf, obj, names, out, 0) &&
	    pick_agrees(buf, obj, names, out, 2) &&
	    out[1].off == want.off && out[1].end == want.end;
}

static void
same(const char *buf, struct rs_jspan v, const cJSON *node)
{
	struct rs_jiter it;
	struct rs_jspan k, e, f;
	const cJSON *c;
	char *s, num[512];
	size_t n;

	switch (rs_jscan_type(buf, v)) {
	case RS_JOBJECT:
		CHECK(cJSON_IsObject(node));
		CHECK(rs_jscan_iter(&it, buf, v) == RS_OK);
		cJSON_ArrayForEach(c, node) {
			CHECK(rs_jscan_member(&it, &k, &e) == RS_OK);
			s = unesc(buf, k, &n);
			CHECK(strcmp(s, c->string) == 0);
			if (strlen(s) == n) {
				CHECK(rs_jscan_keyeq(buf, k, c->string));
				CHECK(rs_jscan_find(buf, v, c->string, &f) == RS_OK);
				CHECK(pick_is(buf, v, c->string, f));
				if (cJSON_GetObjectItemCaseSensitive(node,
				    c->string) == c)
					CHECK(f.off == e.off && f.end == e.end);
			}
			free(s);
			same(buf, e, c);
		}
		CHECK(rs_jscan_member(&it, &k, &e) == RS_EEOF);
		break;
	case RS_JARRAY:
		CHECK(cJSON_IsArray(node));
		CHECK(rs_jscan_iter(&it, buf, v) == RS_OK);
		cJSON_ArrayForEach(c, node) {
			CHECK(rs_jscan_elem(&it, &e) == RS_OK);
			same(buf, e, c);
		}
		CHECK(rs_jscan_elem(&it, &e) == RS_EEOF);
		break;
	case RS_JSTRING:
		CHECK(cJSON_IsString(node));
		s = unesc(buf, v, &n);
		CHECK(strcmp(s, node->valuestring) == 0);
		free(s);
		break;
	case RS_JNUMBER:
		CHECK(cJSON_IsNumber(node));
		if (v.end - v.off < sizeof num) {
			memcpy(num, buf + v.off, v.end - v.off);
			num[v.end - v.off] = '\0';
			CHECK(strtod(num, NULL) == node->valuedouble);
		}
		{
			double d;

			CHECK(rs_jscan_double(buf, v, &d) == RS_OK);
			CHECK(d == node->valuedouble);
		}
		break;
	case RS_JTRUE: CHECK(cJSON_IsTrue(node)); break;
	case RS_JFALSE: CHECK(cJSON_IsFalse(node)); break;
	case RS_JNULL: CHECK(cJSON_IsNull(node)); break;
	default: CHECK(!"a value of no type");
	}
}

/* The walkers on text the scanner refused: anything, within bounds. */
static void
walk_raw(const char *buf, struct rs_jspan v, int depth)
{
	struct rs_jiter it;
	struct rs_jspan k, e;
	char out[64];
	int n = 0;

	if (depth > 32 || rs_jscan_iter(&it, buf, v) != RS_OK)
		return;
	while (n++ < 1000 && (buf[v.off] == '{' ?
	    rs_jscan_member(&it, &k, &e) : rs_jscan_elem(&it, &e)) == RS_OK) {
		CHECK(e.off >= v.off && e.end <= v.end && e.off <= e.end);
		rs_jscan_unescape(buf, e, out, sizeof out, NULL);
		if (buf[v.off] == '{') {
			rs_jscan_keyeq(buf, k, "metadata");
			rs_jscan_unescape(buf, k, out, sizeof out, NULL);
		}
		walk_raw(buf, e, depth + 1);
	}
}

/* Two trees alike, members in order. */
static int
equal(const cJSON *a, const cJSON *b)
{
	const cJSON *x, *y;

	if ((a->type & 0xff) != (b->type & 0xff))
		return 0;
	if (cJSON_IsString(a))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (cJSON_IsNumber(a))
		return a->valuedouble == b->valuedouble;
	if (!cJSON_IsArray(a) && !cJSON_IsObject(a))
		return 1;
	for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
		if ((cJSON_IsObject(a) && strcmp(x->string, y->string) != 0) ||
		    !equal(x, y))
			return 0;
	return x == NULL && y == NULL;
}

/* The input as rs-watch should print it. */
static cJSON *
expected(const cJSON *in, int trim, const char *av, const char *kind)
{
	cJSON *o = cJSON_Duplicate(in, 1), *md, *c;
	cJSON *x = cJSON_CreateObject();

	CHECK(o != NULL && x != NULL);
	md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
	if (trim && cJSON_IsObject(md))
		cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
	if (av && !cJSON_GetObjectItemCaseSensitive(o, "apiVersion"))
		cJSON_AddStringToObject(x, "apiVersion", av);
	if (kind && !cJSON_GetObjectItemCaseSensitive(o, "kind"))
		cJSON_AddStringToObject(x, "kind", kind);
	while ((c = o->child) != NULL) {
		cJSON_DetachItemViaPointer(o, c);
		/* keeps the key it has, duplicates and all */
		cJSON_AddItemToArray(x, c);
	}
	cJSON_Delete(o);
	return x;
}

/* Whether the entry of managedFields e owns metadata.ownerReferences. */
static int
owns_refs(const cJSON *e)
{
	const cJSON *md = rs_json_get(e, "fieldsV1", "f:metadata", NULL);

	return cJSON_IsObject(md) &&
	    cJSON_GetObjectItemCaseSensitive(md, "f:ownerReferences") != NULL;
}

static int
in_array(const cJSON *a, const char *s)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, a)
		if (cJSON_IsString(x) && strcmp(x->valuestring, s) == 0)
			return 1;
	return 0;
}

/* ref_managers against cJSON's reading of managedFields: the same set of
 * names, or (past the bound) as many as the bound, all of them right. */
static void
check_managers(const cJSON *in, const cJSON *out)
{
	const cJSON *mf = rs_json_get(in, "metadata", "managedFields", NULL);
	const cJSON *got = cJSON_GetObjectItemCaseSensitive(out,
	    "ref_managers"), *e, *m, *x;
	cJSON *want = cJSON_CreateArray();
	int nwant, ngot = 0;

	CHECK(want != NULL);
	if (cJSON_IsArray(mf) && cJSON_IsObject(
	    cJSON_GetObjectItemCaseSensitive(in, "metadata")))
		cJSON_ArrayForEach(e, mf) {
			m = cJSON_GetObjectItemCaseSensitive(e, "manager");
			if (cJSON_IsObject(e) && cJSON_IsString(m) &&
			    owns_refs(e) && !in_array(want, m->valuestring))
				cJSON_AddItemToArray(want,
				    cJSON_CreateString(m->valuestring));
		}
	nwant = cJSON_GetArraySize(want);
	CHECK((got == NULL) == (nwant == 0));
	if (got != NULL) {
		CHECK(cJSON_IsArray(got));
		cJSON_ArrayForEach(x, got) {
			CHECK(cJSON_IsString(x) && in_array(want, x->valuestring));
			ngot++;
		}
		CHECK(ngot <= EVENT_MANAGERS_MAX);
		/* values the scanner tells apart by their escapes, cJSON not */
		if (nwant <= EVENT_MANAGERS_MAX)
			cJSON_ArrayForEach(x, want)
				CHECK(in_array(got, x->valuestring));
	}
	cJSON_Delete(want);
}

/* The unescaped length of s, a NUL inside counted; 0 when absent. */
static size_t
ulen(const char *buf, struct rs_jspan s)
{
	size_t n = 0;

	if (s.off != s.end)
		free(unesc(buf, s, &n));
	return n;
}

/* The identity against cJSON's look-ups. */
static void
check_id(const struct objtext *t, const cJSON *in)
{
	const char *ns = rs_json_str(in, "metadata", "namespace", NULL);
	const char *name = rs_json_str(in, "metadata", "name", NULL);
	const char *rv = rs_json_str(in, "metadata", "resourceVersion", NULL);
	const char *uid = rs_json_str(in, "metadata", "uid", NULL);
	struct objid id;
	char key[1024];
	rs_code rc = event_objid(t, &id);
	int n;

	if (name == NULL || rv == NULL) {
		CHECK(rc == RS_EPARSE);
		return;
	}
	n = ns && ns[0] ? snprintf(key, sizeof key, "%s/%s", ns, name) :
	    snprintf(key, sizeof key, "%s", name);
	if (rc == RS_OK) {
		CHECK(strcmp(id.key, key) == 0);
		CHECK(strcmp(id.rv, rv) == 0);
		CHECK(strcmp(id.uid, uid ? uid : "") == 0);
		return;
	}
	CHECK(rc == RS_ETOOBIG);
	/* too long as C strings, or counted whole by the scanner where a
	 * \u0000 ended cJSON's string early */
	CHECK(n >= 512 || strlen(rv) >= 256 || (uid && strlen(uid) >= 256) ||
	    ulen(t->buf, t->ns) != (ns ? strlen(ns) : 0) ||
	    ulen(t->buf, t->name) != strlen(name) ||
	    ulen(t->buf, t->rv) != strlen(rv) ||
	    ulen(t->buf, t->uid) != (uid ? strlen(uid) : 0));
}

/* A line less its "at" member, which holds the clock and so differs from
 * one rendering to the next: n is set to the length left. The envelope
 * puts it after type and resource, before anything of the object. */
static void
cut_at(char *p, size_t *n)
{
	char *at = memmem(p, *n, ",\"at\":", 6), *end;

	CHECK(at != NULL);
	end = at + 6;
	while (end < p + *n && (*end == '.' || (*end >= '0' && *end <= '9')))
		end++;
	memmove(at, end, p + *n - end);
	*n -= (size_t)(end - at);
}

/* The object as the item of a list, walked once in place: the same line
 * as from the object's span (but for the time it was made). */
static void
as_list_item(const char *buf, struct rs_jspan v, unsigned opt,
    const char *av, const char *kind)
{
	static struct linebuf lb;
	size_t n = v.end - v.off, want_len = line_len;
	char *want = malloc(line_len), *list = malloc(n + 4);
	struct rs_jspan all = { 0, n + 4 };
	struct objtext t;
	struct rs_jiter items;

	CHECK(want != NULL && list != NULL);
	memcpy(want, line, line_len);
	memcpy(list, "[", 1);
	memcpy(list + 1, buf + v.off, n);
	memcpy(list + 1 + n, ",1]", 3);
	CHECK(rs_jscan_iter(&items, list, all) == RS_OK);
	CHECK(event_scan_next(&t, list, &items, opt & 1, av, kind) == RS_OK);
	CHECK(t.obj.off == 1 && t.obj.end == n + 1);
	CHECK(event_emit(&lb, "ADDED", "pods", opt & 8, &t, 0) == RS_OK);
	cut_at(want, &want_len);
	cut_at((char *)line, &line_len);
	CHECK(line_len == want_len && memcmp(line, want, want_len) == 0);
	/* a scalar item: no identity, and the walk goes on to the end */
	CHECK(event_scan_next(&t, list, &items, opt & 1, av, kind) == RS_OK);
	CHECK(t.name.off == t.name.end && t.obj.off == n + 2);
	CHECK(event_scan_next(&t, list, &items, opt & 1, av, kind) == RS_EEOF);
	free(want);
	free(list);
}

static void
render(const char *buf, struct rs_jspan v, const cJSON *in, unsigned opt)
{
	static struct linebuf lb;
	const char *av = (opt & 2) ? "v1" : NULL, *kind = (opt & 4) ? "Pod" : NULL;
	struct objtext t;
	cJSON *out = NULL, *want;
	const cJSON *obj;

	event_scan(&t, buf, v, opt & 1, av, kind);
	check_id(&t, in);
	line = NULL;
	if (event_emit(&lb, "ADDED", "pods", opt & 8, &t, 0) != RS_OK)
		return;
	CHECK(line != NULL);
	CHECK(memchr(line, '\n', line_len) == NULL);
	CHECK(rs_json_parse(line, line_len, &out, NULL) == RS_OK);
	CHECK(strcmp(rs_json_str(out, "type", NULL), "ADDED") == 0);
	CHECK(strcmp(rs_json_str(out, "resource", NULL), "pods") == 0);
	CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(out, "at")) &&
	    cJSON_GetObjectItemCaseSensitive(out, "at")->valuedouble > 1e9);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out,
	    "final_state_unknown")) == !!(opt & 8));
	obj = cJSON_GetObjectItemCaseSensitive(out, "object");
	want = expected(in, opt & 1, av, kind);
	CHECK(obj != NULL && equal(want, obj));
	check_managers(in, out);
	cJSON_Delete(want);
	cJSON_Delete(out);
	as_list_item(buf, v, opt, av, kind);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf;
	struct rs_jspan v;
	cJSON *tree = NULL;
	unsigned opt;
	char out[64];

	if (size < 1)
		return 0;
	opt = data[0];
	/* a copy of its own, so that ASan sees any read past the end */
	size--;
	buf = malloc(size ? size : 1);
	if (buf == NULL)
		return 0;
	memcpy((char *)buf, data + 1, size);
	if (rs_jscan_doc(buf, size, &v, NULL) == RS_OK) {
		CHECK(rs_json_parse(buf, size, &tree, NULL) == RS_OK);
		same(buf, v, tree);
		/* cJSON's keys end at a \u0000, the scanner's do not (as Go's
		 * do not): no comparing the two views of such a key */
		if (cJSON_IsObject(tree) && !memmem(buf, size, "\\u0000", 6))
			render(buf, v, tree, opt);
		cJSON_Delete(tree);
	} else {
		CHECK(rs_jscan_str(buf, size, out, sizeof out, "metadata",
		    NULL) == RS_EPARSE);
		v.off = 0;
		v.end = size;
		if (size > 0)
			walk_raw(buf, v, 0);
	}
	free((char *)buf);
	return 0;
}
