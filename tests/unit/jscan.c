/* The JSON scanner: RFC 8259 strictly (tables of valid and invalid texts,
 * every escape, surrogates, UTF-8 as json.c checks it, the depth bound),
 * the walkers, the unescaping into a bounded buffer, and agreement with
 * cJSON (through rs_json_parse) on generated documents: every member the
 * tree has, the scanner finds with the same value, and a text the scanner
 * accepts cJSON accepts too. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "jscan.h"
#include "json.h"

struct doc {
	const char *text;
	size_t len;             /* 0: strlen */
	long where;             /* invalid: the bad byte's offset; -1: any */
};

static size_t
doclen(const struct doc *d)
{
	return d->len ? d->len : strlen(d->text);
}

static const char *valid[] = {
	"{}", "[]", " { } ", "\t\r\n[ ]\n",
	"0", "-0", "1e5", "1E5", "1e+5", "1e-5",
	"-0.0e0", "0.5", "123456789", "-1.25E+300",
	"1e400", "true", "false", "null", "\"\"",
	"\"a b\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
	"\"\\u0000\\u001f\\u0041\\u00e9\\u20AC\\uFFFF\"",
	"\"\\ud83d\\ude00\"", "\"\\uDBFF\\uDFFF\"",
	"\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"",
	"\"\x7f\"", "\"\xef\xbf\xbf\"", "\"\xed\x9f\xbf\"",
	"{\"a\":1,\"b\":[true,false,null,{\"c\":\"d\"}],\"e\":{}}",
	"{ \"a\" : 1 , \"b\" : [ 1 , 2 ] }",
	"[[[[[[[[[[]]]]]]]]]]", "{\"\":\"\"}",
	"{\"a\":1,\"a\":2}",
	"[1,-1,1.5,-1.5e10,0e0,0.0,10,100e-2]",
};

static const struct doc invalid[] = {
	{ "", 0, 0 }, { " ", 0, 1 }, { "{", 0, 1 }, { "[", 0, 1 },
	{ "}", 0, 0 }, { "{]", 0, 1 }, { "[}", 0, 1 }, { "[1}", 0, 2 },
	{ "{\"a\":1]", 0, 6 }, { "[1,]", 0, 3 }, { "{\"a\":1,}", 0, 7 },
	{ "[,1]", 0, 1 }, { "[1 2]", 0, 3 }, { "{\"a\" 1}", 0, 5 },
	{ "{\"a\":}", 0, 5 }, { "{a:1}", 0, 1 }, { "{'a':1}", 0, 1 },
	{ "{\"a\":1 \"b\":2}", 0, 7 }, { "{1:2}", 0, 1 },
	{ "01", 0, 1 }, { "-01", 0, 2 }, { "00", 0, 1 }, { "+1", 0, 0 },
	{ "1.", 0, 2 }, { ".5", 0, 0 }, { "-", 0, 1 }, { "1e", 0, 2 },
	{ "1e+", 0, 3 }, { "0x1", 0, 1 }, { "NaN", 0, 0 },
	{ "Infinity", 0, 0 }, { "-Infinity", 0, 1 }, { "1.5.5", 0, 3 },
	{ "tru", 0, 0 }, { "truex", 0, 4 }, { "nul", 0, 0 }, { "True", 0, 0 },
	{ "\"abc", 0, 4 }, { "\"\\\"", 0, 3 }, { "\"\\x\"", 0, 1 },
	{ "\"\\u12\"", 0, 1 }, { "\"\\u12g4\"", 0, 1 }, { "\"\\U0041\"", 0, 1 },
	{ "\"\\'\"", 0, 1 }, { "\"\\\"", 0, -1 },
	/* control characters raw in a string */
	{ "\"a\tb\"", 0, 2 }, { "\"a\nb\"", 0, 2 }, { "\"\x01\"", 0, 1 },
	{ "\"\x1f\"", 0, 1 }, { "\"a\0b\"", 5, 2 },
	/* surrogates alone, swapped, or not followed by a low one */
	{ "\"\\ud83d\"", 0, 1 }, { "\"\\ude00\"", 0, 1 },
	{ "\"\\ude00\\ud83d\"", 0, 1 }, { "\"\\ud83dx\"", 0, 1 },
	{ "\"\\ud83d\\u0041\"", 0, 1 }, { "\"\\ud83d\\ud83d\"", 0, 1 },
	{ "\"\\ud83d\\n\"", 0, 1 }, { "\"\\uDFFF\"", 0, 1 },
	/* UTF-8: overlong, surrogates, above U+10FFFF, truncated, stray */
	{ "\"\xc0\x80\"", 0, 1 }, { "\"\xc1\xbf\"", 0, 1 },
	{ "\"\xe0\x80\x80\"", 0, 1 }, { "\"\xe0\x9f\xbf\"", 0, 1 },
	{ "\"\xf0\x80\x80\x80\"", 0, 1 }, { "\"\xf0\x8f\xbf\xbf\"", 0, 1 },
	{ "\"\xed\xa0\x80\"", 0, 1 }, { "\"\xed\xbf\xbf\"", 0, 1 },
	{ "\"\xf4\x90\x80\x80\"", 0, 1 }, { "\"\xf5\x80\x80\x80\"", 0, 1 },
	{ "\"\xff\"", 0, 1 }, { "\"\x80\"", 0, 1 }, { "\"\xc3\"", 0, 1 },
	{ "\"\xe2\x82\"", 0, 1 }, { "\"\xc3\x28\"", 0, 1 },
	{ "\xc3\xa9", 0, 0 },
	/* trailing garbage, comments, two documents */
	{ "{}x", 0, 2 }, { "{} {}", 0, 3 }, { "[]]", 0, 2 },
	{ "1 2", 0, 2 }, { "{}\0", 3, 2 }, { "// c\n{}", 0, 0 },
	{ "{/* c */}", 0, 1 }, { "[1,/*x*/2]", 0, 3 },
};

static void
valid_documents(void **state)
{
	struct rs_jspan v;
	size_t i, where;

	for (i = 0; i < sizeof valid / sizeof valid[0]; i++) {
		const char *d = valid[i];
		size_t len = strlen(d);
		cJSON *o = NULL;

		where = 9999;
		if (rs_jscan_doc(d, len, &v, &where) != RS_OK)
			fail_msg("refused valid #%zu %s at %zu", i, d, where);
		/* the span is the value without the whitespace around it */
		assert_true(v.off < v.end && v.end <= len);
		assert_null(memchr(" \t\r\n", d[v.off], 4));
		assert_null(memchr(" \t\r\n", d[v.end - 1], 4));
		/* cJSON takes it too */
		assert_int_equal(rs_json_parse(d, len, &o, NULL), RS_OK);
		cJSON_Delete(o);
	}
}

static void
invalid_documents(void **state)
{
	struct rs_jspan v;
	size_t i, where;

	for (i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
		const struct doc *d = &invalid[i];

		where = 9999;
		if (rs_jscan_doc(d->text, doclen(d), &v, &where) != RS_EPARSE)
			fail_msg("took invalid #%zu '%s'", i, d->text);
		if (d->where >= 0 && where != (size_t)d->where)
			fail_msg("invalid #%zu '%s': error at %zu, not %ld",
			    i, d->text, where, d->where);
		/* no where asked for: no write through NULL */
		assert_int_equal(rs_jscan_doc(d->text, doclen(d), &v, NULL),
		    RS_EPARSE);
	}
}

/* A value inside a larger buffer ends where it ends: what follows is not
 * its business. */
static void
value_at_offset(void **state)
{
	const char *s = "xx  {\"a\":[1,2]} ,garbage";
	struct rs_jspan v;

	assert_int_equal(rs_jscan_value(s, strlen(s), 2, &v, NULL), RS_OK);
	assert_int_equal(v.off, 4);
	assert_int_equal(v.end, 15);
	assert_int_equal(rs_jscan_value(s, 8, 2, &v, NULL), RS_EPARSE);
}

static char *
nested(size_t depth, const char *open, const char *close, const char *mid)
{
	size_t lo = strlen(open), lc = strlen(close), lm = strlen(mid), i;
	char *s = malloc(depth * (lo + lc) + lm + 1), *p = s;

	assert_non_null(s);
	for (i = 0; i < depth; i++, p += lo)
		memcpy(p, open, lo);
	memcpy(p, mid, lm);
	p += lm;
	for (i = 0; i < depth; i++, p += lc)
		memcpy(p, close, lc);
	*p = '\0';
	return s;
}

static void
depth_bound(void **state)
{
	struct rs_jspan v;
	size_t where;
	char *s;

	s = nested(RS_JSCAN_DEPTH, "[", "]", "1");
	assert_int_equal(rs_jscan_doc(s, strlen(s), &v, NULL), RS_OK);
	free(s);
	s = nested(RS_JSCAN_DEPTH, "{\"k\":", "}", "[]");
	assert_int_equal(rs_jscan_doc(s, strlen(s), &v, NULL), RS_EPARSE);
	free(s);
	s = nested(RS_JSCAN_DEPTH - 1, "{\"k\":", "}", "[]");
	assert_int_equal(rs_jscan_doc(s, strlen(s), &v, NULL), RS_OK);
	free(s);
	s = nested(RS_JSCAN_DEPTH + 1, "[", "]", "");
	assert_int_equal(rs_jscan_doc(s, strlen(s), &v, &where), RS_EPARSE);
	assert_int_equal(where, RS_JSCAN_DEPTH);
	free(s);
	/* hostile: a million brackets cost no stack */
	s = nested(1000000, "[", "]", "");
	assert_int_equal(rs_jscan_doc(s, strlen(s), &v, &where), RS_EPARSE);
	assert_int_equal(where, RS_JSCAN_DEPTH);
	free(s);
	/* depth goes down as containers close: many, each shallow */
	s = malloc(5 * 100000 + 2);
	assert_non_null(s);
	s[0] = '[';
	for (size_t i = 0; i < 100000; i++)
		memcpy(s + 1 + 5 * i, "[[]],", 5);
	strcpy(s + 5 * 100000, "]");
	assert_int_equal(rs_jscan_doc(s, strlen(s), &v, NULL), RS_OK);
	free(s);
}

static void
types(void **state)
{
	static const struct { const char *t; enum rs_jtype want; } c[] = {
		{ "{}", RS_JOBJECT }, { "[]", RS_JARRAY }, { "\"\"", RS_JSTRING },
		{ "-1", RS_JNUMBER }, { "0", RS_JNUMBER }, { "true", RS_JTRUE },
		{ "false", RS_JFALSE }, { "null", RS_JNULL },
	};
	struct rs_jspan v;
	size_t i;

	for (i = 0; i < sizeof c / sizeof c[0]; i++) {
		assert_int_equal(rs_jscan_doc(c[i].t, strlen(c[i].t), &v, NULL),
		    RS_OK);
		assert_int_equal(rs_jscan_type(c[i].t, v), c[i].want);
	}
	v.off = v.end = 0;
	assert_int_equal(rs_jscan_type("x", v), RS_JNONE);
}

static struct rs_jspan
doc(const char *s)
{
	struct rs_jspan v;

	assert_int_equal(rs_jscan_doc(s, strlen(s), &v, NULL), RS_OK);
	return v;
}

static void
span_is(const char *buf, struct rs_jspan v, const char *want)
{
	assert_int_equal(v.end - v.off, strlen(want));
	assert_memory_equal(buf + v.off, want, strlen(want));
}

static void
members_and_elements(void **state)
{
	const char *s = "{ \"a\" : 1 ,\"b\\n\":[ 1, \"x]\" ,{\"c\":{}} ],"
	    "\"d\":\"}\\\"\" , \"e\":-1.5e3,\"f\":{}}";
	struct rs_jspan o = doc(s), k, v, e;
	struct rs_jiter it, ai;

	assert_int_equal(rs_jscan_iter(&it, s, o), RS_OK);
	assert_int_equal(rs_jscan_member(&it, &k, &v), RS_OK);
	span_is(s, k, "\"a\"");
	span_is(s, v, "1");
	assert_int_equal(rs_jscan_member(&it, &k, &v), RS_OK);
	span_is(s, k, "\"b\\n\"");
	span_is(s, v, "[ 1, \"x]\" ,{\"c\":{}} ]");
	assert_int_equal(rs_jscan_iter(&ai, s, v), RS_OK);
	assert_int_equal(rs_jscan_elem(&ai, &e), RS_OK);
	span_is(s, e, "1");
	assert_int_equal(rs_jscan_elem(&ai, &e), RS_OK);
	span_is(s, e, "\"x]\"");
	assert_int_equal(rs_jscan_elem(&ai, &e), RS_OK);
	span_is(s, e, "{\"c\":{}}");
	assert_int_equal(rs_jscan_elem(&ai, &e), RS_EEOF);
	assert_int_equal(rs_jscan_elem(&ai, &e), RS_EEOF);
	assert_int_equal(rs_jscan_member(&it, &k, &v), RS_OK);
	span_is(s, v, "\"}\\\"\"");
	assert_int_equal(rs_jscan_member(&it, &k, &v), RS_OK);
	span_is(s, v, "-1.5e3");
	assert_int_equal(rs_jscan_member(&it, &k, &v), RS_OK);
	span_is(s, k, "\"f\"");
	span_is(s, v, "{}");
	assert_int_equal(rs_jscan_member(&it, &k, &v), RS_EEOF);

	/* empty containers, and what is not one */
	o = doc(" { } ");
	assert_int_equal(rs_jscan_iter(&it, " { } ", o), RS_OK);
	assert_int_equal(rs_jscan_member(&it, &k, &v), RS_EEOF);
	o = doc("[]");
	assert_int_equal(rs_jscan_iter(&it, "[]", o), RS_OK);
	assert_int_equal(rs_jscan_elem(&it, &v), RS_EEOF);
	o = doc("\"{}\"");
	assert_int_equal(rs_jscan_iter(&it, "\"{}\"", o), RS_EPARSE);
}

/* Walked in place: the span given runs past the object, each container
 * is entered and left, its span found by the walk. */
static void
walk_in_place(void **state)
{
	const char *s = "{\"a\":{\"b\":[1,{\"c\":2}] , \"d\":3},\"e\":[ ],"
	    "\"f\":\"x\"}  ,\"after\":1}";
	struct rs_jspan all = { 0, strlen(s) }, k, v;
	struct rs_jiter it, sub, sub2;

	assert_int_equal(rs_jscan_iter(&it, s, all), RS_OK);
	assert_int_equal(rs_jscan_key(&it, &k), RS_OK);
	span_is(s, k, "\"a\"");
	assert_int_equal(rs_jscan_enter(&it, &sub), RS_OK);
	assert_int_equal(rs_jscan_key(&sub, &k), RS_OK);
	span_is(s, k, "\"b\"");
	assert_int_equal(rs_jscan_enter(&sub, &sub2), RS_OK);
	assert_int_equal(rs_jscan_elem(&sub2, &v), RS_OK);
	span_is(s, v, "1");
	assert_int_equal(rs_jscan_elem(&sub2, &v), RS_OK);
	span_is(s, v, "{\"c\":2}");
	assert_int_equal(rs_jscan_elem(&sub2, &v), RS_EEOF);
	assert_int_equal(s[sub2.pos], ']');
	assert_int_equal(rs_jscan_leave(&sub, &sub2, &v), RS_OK);
	span_is(s, v, "[1,{\"c\":2}]");
	assert_int_equal(rs_jscan_member(&sub, &k, &v), RS_OK);
	span_is(s, k, "\"d\"");
	span_is(s, v, "3");
	assert_int_equal(rs_jscan_member(&sub, &k, &v), RS_EEOF);
	assert_int_equal(rs_jscan_member(&sub, &k, &v), RS_EEOF);
	assert_int_equal(rs_jscan_leave(&it, &sub, &v), RS_OK);
	span_is(s, v, "{\"b\":[1,{\"c\":2}] , \"d\":3}");
	assert_int_equal(rs_jscan_key(&it, &k), RS_OK);
	span_is(s, k, "\"e\"");
	assert_int_equal(rs_jscan_enter(&it, &sub), RS_OK);
	assert_int_equal(rs_jscan_elem(&sub, &v), RS_EEOF);
	assert_int_equal(rs_jscan_leave(&it, &sub, &v), RS_OK);
	span_is(s, v, "[ ]");
	assert_int_equal(rs_jscan_key(&it, &k), RS_OK);
	/* a scalar is no container: left for rs_jscan_elem */
	assert_int_equal(rs_jscan_enter(&it, &sub), RS_EPARSE);
	assert_int_equal(rs_jscan_elem(&it, &v), RS_OK);
	span_is(s, v, "\"x\"");
	/* the end of the object, not of the span: what follows is not read */
	assert_int_equal(rs_jscan_key(&it, &k), RS_EEOF);
	assert_int_equal(s[it.pos], '}');
	assert_int_equal(it.pos, strlen(s) - strlen("}  ,\"after\":1}"));
	assert_int_equal(rs_jscan_enter(&it, &sub), RS_EEOF);

	/* leaving a container not walked to its end fails */
	assert_int_equal(rs_jscan_iter(&it, s, all), RS_OK);
	assert_int_equal(rs_jscan_key(&it, &k), RS_OK);
	assert_int_equal(rs_jscan_enter(&it, &sub), RS_OK);
	assert_int_equal(rs_jscan_key(&sub, &k), RS_OK);
	assert_int_equal(rs_jscan_leave(&it, &sub, &v), RS_EPARSE);
}

/* Text the validator did not see: the walkers stop at the bound with an
 * error, never past it and never with a false end. */
static void
walk_unvalidated(void **state)
{
	const char *s = "{\"a\":1,\"b\":[1,2";
	struct rs_jspan all = { 0, strlen(s) }, k, v;
	struct rs_jiter it, sub;

	assert_int_equal(rs_jscan_iter(&it, s, all), RS_OK);
	assert_int_equal(rs_jscan_member(&it, &k, &v), RS_OK);
	assert_int_equal(rs_jscan_key(&it, &k), RS_OK);
	assert_int_equal(rs_jscan_enter(&it, &sub), RS_OK);
	assert_int_equal(rs_jscan_elem(&sub, &v), RS_OK);
	assert_int_equal(rs_jscan_elem(&sub, &v), RS_OK);
	span_is(s, v, "2");
	assert_int_equal(rs_jscan_elem(&sub, &v), RS_EPARSE);
	assert_int_equal(rs_jscan_leave(&it, &sub, &v), RS_EPARSE);
	assert_int_equal(rs_jscan_member(&it, &k, &v), RS_EPARSE);
	all.end = 6;    /* {"a":} */
	assert_int_equal(rs_jscan_iter(&it, "{\"a\":}", all), RS_OK);
	assert_int_equal(rs_jscan_member(&it, &k, &v), RS_EPARSE);
}

/* A string whose quote follows backslashes: escaped or not by their
 * count. */
static void
backslash_runs(void **state)
{
	const char *s = "[\"\\\\\",\"\\\\\\\"\",\"a\\\\\\\\\",2]";
	struct rs_jspan o = doc(s), e;
	struct rs_jiter it;
	char out[8];

	assert_int_equal(rs_jscan_iter(&it, s, o), RS_OK);
	assert_int_equal(rs_jscan_elem(&it, &e), RS_OK);
	assert_int_equal(rs_jscan_unescape(s, e, out, sizeof out, NULL), RS_OK);
	assert_string_equal(out, "\\");
	assert_int_equal(rs_jscan_elem(&it, &e), RS_OK);
	assert_int_equal(rs_jscan_unescape(s, e, out, sizeof out, NULL), RS_OK);
	assert_string_equal(out, "\\\"");
	assert_int_equal(rs_jscan_elem(&it, &e), RS_OK);
	assert_int_equal(rs_jscan_unescape(s, e, out, sizeof out, NULL), RS_OK);
	assert_string_equal(out, "a\\\\");
	assert_int_equal(rs_jscan_elem(&it, &e), RS_OK);
	span_is(s, e, "2");
	assert_int_equal(rs_jscan_elem(&it, &e), RS_EEOF);
}

static void
every_escape(void **state)
{
	const char *s = "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20ac"
	    "\\ud83d\\ude00\\uDBFF\\uDFFF\\u0000z\"";
	const char want[] = "\"\\/\b\f\n\r\tA\xc3\xa9\xe2\x82\xac"
	    "\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\0z";
	struct rs_jspan v = doc(s);
	char out[64];
	size_t n;

	assert_int_equal(rs_jscan_unescape(s, v, out, sizeof out, &n), RS_OK);
	assert_int_equal(n, sizeof want - 1);
	assert_memory_equal(out, want, sizeof want);
}

static void
unescape_bounds(void **state)
{
	const char *s = "\"abc\\u00e9d\"";    /* abc é d: 6 bytes */
	struct rs_jspan v = doc(s), num;
	char out[16];
	size_t n;

	assert_int_equal(rs_jscan_unescape(s, v, out, 7, &n), RS_OK);
	assert_string_equal(out, "abc\xc3\xa9" "d");
	assert_int_equal(n, 6);
	memset(out, 'x', sizeof out);
	assert_int_equal(rs_jscan_unescape(s, v, out, 6, &n), RS_ETOOBIG);
	assert_string_equal(out, "abc\xc3\xa9");
	memset(out, 'x', sizeof out);
	/* é does not fit whole: left out, not cut */
	assert_int_equal(rs_jscan_unescape(s, v, out, 5, &n), RS_ETOOBIG);
	assert_string_equal(out, "abc");
	assert_int_equal(rs_jscan_unescape(s, v, out, 3, &n), RS_ETOOBIG);
	assert_string_equal(out, "ab");
	assert_int_equal(rs_jscan_unescape(s, v, out, 1, &n), RS_ETOOBIG);
	assert_string_equal(out, "");
	assert_int_equal(rs_jscan_unescape(s, v, NULL, 0, &n), RS_ETOOBIG);
	assert_int_equal(rs_jscan_unescape("\"\"", doc("\"\""), out, 1, &n),
	    RS_OK);
	assert_int_equal(n, 0);
	num = doc("12");
	assert_int_equal(rs_jscan_unescape("12", num, out, sizeof out, &n),
	    RS_EPARSE);
}

static void
find_and_get(void **state)
{
	const char *s = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
	    "\"n\\u0061me\":\"second\",\"labels\":{\"x\":\"1\"}},"
	    "\"na\\u0000me\":\"nul\",\"k\\u00e9y\":\"e\",\"num\":5,"
	    "\"metadata\":{\"name\":\"dup\"},\"list\":[{\"name\":\"no\"}]}";
	struct rs_jspan o = doc(s), v;

	assert_int_equal(rs_jscan_find(s, o, "num", &v), RS_OK);
	span_is(s, v, "5");
	/* the first of two members of one name, as cJSON has it */
	assert_int_equal(rs_jscan_get(s, o, &v, "metadata", "name", NULL), RS_OK);
	span_is(s, v, "\"a\"");
	/* keys are compared unescaped */
	assert_int_equal(rs_jscan_find(s, o, "k\xc3\xa9y", &v), RS_OK);
	span_is(s, v, "\"e\"");
	assert_int_equal(rs_jscan_get(s, o, &v, "metadata", "labels", "x",
	    NULL), RS_OK);
	span_is(s, v, "\"1\"");
	/* a NUL inside a key is no end of it */
	assert_int_equal(rs_jscan_find(s, o, "na", &v), RS_ENOTFOUND);
	assert_int_equal(rs_jscan_get(s, o, &v, "metadata", "nam", NULL),
	    RS_ENOTFOUND);
	assert_int_equal(rs_jscan_get(s, o, &v, "metadata", "names", NULL),
	    RS_ENOTFOUND);
	assert_int_equal(rs_jscan_get(s, o, &v, "num", "x", NULL), RS_ENOTFOUND);
	assert_int_equal(rs_jscan_get(s, o, &v, "list", "name", NULL),
	    RS_ENOTFOUND);
	assert_int_equal(rs_jscan_get(s, o, &v, NULL), RS_OK);
	assert_int_equal(v.off, o.off);
	assert_int_equal(v.end, o.end);
	assert_true(rs_jscan_keyeq("\"a\\u0062c\"", doc("\"a\\u0062c\""), "abc"));
	assert_false(rs_jscan_keyeq("\"a\\u0062c\"", doc("\"a\\u0062c\""), "ab"));
	assert_false(rs_jscan_keyeq("\"a\\u0062c\"", doc("\"a\\u0062c\""), "abcd"));
	assert_false(rs_jscan_keyeq("\"abc\"", doc("\"abc\""), "abd"));
	assert_false(rs_jscan_keyeq("1", doc("1"), "1"));
}

static void
str_convenience(void **state)
{
	const char *s = "{\"metadata\":{\"name\":\"web\\u002d1\",\"n\":1},"
	    "\"kind\":\"Pod\"}";
	char out[8];

	assert_int_equal(rs_jscan_str(s, strlen(s), out, sizeof out,
	    "metadata", "name", NULL), RS_OK);
	assert_string_equal(out, "web-1");
	assert_int_equal(rs_jscan_str(s, strlen(s), out, sizeof out, "kind",
	    NULL), RS_OK);
	assert_string_equal(out, "Pod");
	assert_int_equal(rs_jscan_str(s, strlen(s), out, sizeof out,
	    "metadata", "n", NULL), RS_ENOTFOUND);
	assert_int_equal(rs_jscan_str(s, strlen(s), out, sizeof out,
	    "metadata", NULL), RS_ENOTFOUND);
	assert_int_equal(rs_jscan_str(s, strlen(s), out, sizeof out,
	    "spec", "x", NULL), RS_ENOTFOUND);
	assert_int_equal(rs_jscan_str(s, strlen(s), out, 4,
	    "metadata", "name", NULL), RS_ETOOBIG);
	/* the whole text is checked, not only the way to the member */
	assert_int_equal(rs_jscan_str(s, strlen(s) - 1, out, sizeof out,
	    "kind", NULL), RS_EPARSE);
	assert_int_equal(rs_jscan_str("{\"kind\":\"Pod\",}", 15, out,
	    sizeof out, "kind", NULL), RS_EPARSE);
}

/* --- agreement with cJSON ------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned
rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

struct gen {
	char *p;
	size_t len, cap;
};

static void
put(struct gen *g, const char *s)
{
	size_t n = strlen(s);

	if (g->len + n + 1 > g->cap) {
		g->cap = (g->len + n + 1) * 2;
		assert_non_null(g->p = realloc(g->p, g->cap));
	}
	memcpy(g->p + g->len, s, n + 1);
	g->len += n;
}

static void
space(struct gen *g)
{
	static const char *w[] = { "", "", "", " ", "\n", "\t ", "\r\n" };

	put(g, w[rnd(7)]);
}

static void
gen_string(struct gen *g)
{
	/* keys collide often: a few short ones, escaped or not */
	static const char *piece[] = {
		"a", "b", "name", "x y", "\\\"", "\\\\", "\\/", "\\b", "\\f",
		"\\n", "\\r", "\\t", "\\u0041", "\\u00e9", "\\u20ac",
		"\\ud83d\\ude00", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
		"\\u0061", "}", "]", ",", ":", "{", "[", "\x7f",
	};
	unsigned n = rnd(4), i;

	put(g, "\"");
	for (i = 0; i < n; i++)
		put(g, piece[rnd(sizeof piece / sizeof piece[0])]);
	put(g, "\"");
}

static void
gen_value(struct gen *g, int depth)
{
	static const char *num[] = {
		"0", "-0", "1", "-1", "12.5", "1e5", "1E-5", "-0.25e+2",
		"123456789012", "3.14159", "1e300",
	};
	unsigned n, i, kind = rnd(depth > 5 ? 5 : 8);

	switch (kind) {
	case 0: put(g, num[rnd(sizeof num / sizeof num[0])]); break;
	case 1: gen_string(g); break;
	case 2: put(g, "true"); break;
	case 3: put(g, "false"); break;
	case 4: put(g, "null"); break;
	case 5: case 6:
		put(g, "{");
		n = rnd(5);
		for (i = 0; i < n; i++) {
			space(g);
			if (i)
				put(g, ",");
			space(g);
			gen_string(g);
			space(g);
			put(g, ":");
			space(g);
			gen_value(g, depth + 1);
		}
		space(g);
		put(g, "}");
		break;
	default:
		put(g, "[");
		n = rnd(5);
		for (i = 0; i < n; i++) {
			if (i)
				put(g, ",");
			space(g);
			gen_value(g, depth + 1);
			space(g);
		}
		put(g, "]");
		break;
	}
}

/* The scanner's view of v against cJSON's node: same type, strings,
 * numbers, members in order, and first-of-a-name look-ups. */
/* The next member (k set) or element of the walk in place matches k: e,
 * a container entered, walked by its members or elements, and left. */
static void
pulled(struct rs_jiter *pull, struct rs_jspan k, struct rs_jspan e)
{
	struct rs_jiter sub;
	struct rs_jspan pk, pe;
	int obj = pull->buf[pull->start] == '{';

	if (obj) {
		assert_int_equal(rs_jscan_key(pull, &pk), RS_OK);
		assert_int_equal(pk.off, k.off);
		assert_int_equal(pk.end, k.end);
	}
	if (rs_jscan_enter(pull, &sub) != RS_OK) {
		assert_int_equal(rs_jscan_elem(pull, &pe), RS_OK);
	} else {
		while ((sub.buf[sub.start] == '{' ?
		    rs_jscan_member(&sub, &pk, &pe) :
		    rs_jscan_elem(&sub, &pe)) == RS_OK)
			;
		assert_int_equal(rs_jscan_leave(pull, &sub, &pe), RS_OK);
	}
	assert_int_equal(pe.off, e.off);
	assert_int_equal(pe.end, e.end);
}

static void
same(const char *buf, size_t len, struct rs_jspan v, const cJSON *node)
{
	struct rs_jiter it, pull;
	struct rs_jspan k = { 0, 0 }, e, f, whole;
	const cJSON *c, *first;
	char *out, numtext[64];
	size_t n;

	switch (rs_jscan_type(buf, v)) {
	case RS_JOBJECT:
		assert_true(cJSON_IsObject(node));
		assert_int_equal(rs_jscan_iter(&it, buf, v), RS_OK);
		/* the same walk in place, the span running on to the end */
		whole.off = v.off;
		whole.end = len;
		assert_int_equal(rs_jscan_iter(&pull, buf, whole), RS_OK);
		cJSON_ArrayForEach(c, node) {
			assert_int_equal(rs_jscan_member(&it, &k, &e), RS_OK);
			pulled(&pull, k, e);
			/* cJSON's key ends at a NUL: compare what it kept */
			assert_non_null(out = malloc(k.end - k.off));
			assert_int_equal(rs_jscan_unescape(buf, k, out,
			    k.end - k.off, &n), RS_OK);
			assert_string_equal(out, c->string);
			if (strlen(out) == n) {
				assert_true(rs_jscan_keyeq(buf, k, c->string));
				first = cJSON_GetObjectItemCaseSensitive(node,
				    c->string);
				assert_int_equal(rs_jscan_find(buf, v,
				    c->string, &f), RS_OK);
				if (first == c) {
					assert_int_equal(f.off, e.off);
					assert_int_equal(f.end, e.end);
				}
			}
			free(out);
			same(buf, len, e, c);
		}
		assert_int_equal(rs_jscan_member(&it, &k, &e), RS_EEOF);
		assert_int_equal(rs_jscan_key(&pull, &k), RS_EEOF);
		assert_int_equal(pull.pos, v.end - 1);
		break;
	case RS_JARRAY:
		assert_true(cJSON_IsArray(node));
		assert_int_equal(rs_jscan_iter(&it, buf, v), RS_OK);
		whole.off = v.off;
		whole.end = len;
		assert_int_equal(rs_jscan_iter(&pull, buf, whole), RS_OK);
		cJSON_ArrayForEach(c, node) {
			assert_int_equal(rs_jscan_elem(&it, &e), RS_OK);
			pulled(&pull, k, e);
			same(buf, len, e, c);
		}
		assert_int_equal(rs_jscan_elem(&it, &e), RS_EEOF);
		assert_int_equal(rs_jscan_elem(&pull, &e), RS_EEOF);
		assert_int_equal(pull.pos, v.end - 1);
		break;
	case RS_JSTRING:
		assert_true(cJSON_IsString(node));
		assert_non_null(out = malloc(v.end - v.off));
		assert_int_equal(rs_jscan_unescape(buf, v, out, v.end - v.off,
		    &n), RS_OK);
		assert_string_equal(out, node->valuestring);
		free(out);
		break;
	case RS_JNUMBER:
		assert_true(cJSON_IsNumber(node));
		/* the text may go on right after the number: copy it */
		assert_true(v.end - v.off < sizeof numtext);
		memcpy(numtext, buf + v.off, v.end - v.off);
		numtext[v.end - v.off] = '\0';
		if (strtod(numtext, NULL) != node->valuedouble)
			fail_msg("%s is %g", numtext, node->valuedouble);
		break;
	case RS_JTRUE: assert_true(cJSON_IsTrue(node)); break;
	case RS_JFALSE: assert_true(cJSON_IsFalse(node)); break;
	case RS_JNULL: assert_true(cJSON_IsNull(node)); break;
	default: fail_msg("no type at %zu", v.off);
	}
}

static void
mutate(struct gen *g, char *m, size_t *mlen)
{
	static const char ins[] = "{}[],:\"\\0-eE.+tfn \x80\xc0\xed\x01";
	size_t at = g->len ? rnd(g->len) : 0;

	memcpy(m, g->p, g->len);
	*mlen = g->len;
	switch (rnd(3)) {
	case 0:
		if (*mlen)
			m[at] = ins[rnd(sizeof ins - 1)];
		break;
	case 1:
		if (*mlen) {
			memmove(m + at, m + at + 1, *mlen - at - 1);
			(*mlen)--;
		}
		break;
	default:
		memmove(m + at + 1, m + at, *mlen - at);
		m[at] = ins[rnd(sizeof ins - 1)];
		(*mlen)++;
		break;
	}
}

static void
agrees_with_cjson(void **state)
{
	struct gen g;
	struct rs_jspan v;
	unsigned i, j, accepted = 0, refused = 0;
	cJSON *o;
	char *m;
	size_t mlen;

	memset(&g, 0, sizeof g);
	for (i = 0; i < 2000; i++) {
		g.len = 0;
		space(&g);
		gen_value(&g, i % 3);
		space(&g);
		assert_int_equal(rs_jscan_doc(g.p, g.len, &v, NULL), RS_OK);
		o = NULL;
		if (rs_json_parse(g.p, g.len, &o, NULL) != RS_OK)
			fail_msg("cJSON refuses %s", g.p);
		same(g.p, g.len, v, o);
		cJSON_Delete(o);
		/* mutants: what the scanner takes, cJSON must take; the
		 * walkers stay in bounds on what it does not take (ASan) */
		assert_non_null(m = malloc(g.len + 2));
		for (j = 0; j < 20; j++) {
			mutate(&g, m, &mlen);
			o = NULL;
			if (rs_jscan_doc(m, mlen, &v, NULL) == RS_OK) {
				accepted++;
				if (rs_json_parse(m, mlen, &o, NULL) != RS_OK)
					fail_msg("cJSON refuses what the scanner "
					    "took: %.*s", (int)mlen, m);
				same(m, mlen, v, o);
				cJSON_Delete(o);
			} else {
				struct rs_jiter it;
				struct rs_jspan k, e;

				refused++;
				v.off = 0;
				v.end = mlen;
				if (mlen && rs_jscan_iter(&it, m, v) == RS_OK)
					while (rs_jscan_member(&it, &k, &e) ==
					    RS_OK)
						;
			}
		}
		free(m);
	}
	free(g.p);
	/* the mutants were of both kinds */
	assert_true(accepted > 1000);
	assert_true(refused > 10000);
}

/* Strings are crossed a word at a time: a byte that ends the plain run
 * (quote, backslash, control, UTF-8) is found at every offset of strings
 * of every length around the word size, by the validator and the walkers
 * alike, and what the validator answers is what one byte at a time says. */
static void
strings_wordwise(void **state)
{
	static const char *const odd[] = { "\\\"", "\\\\", "\x01", "\xc3\xa9",
	    "\xff", "\x7f", "\x1f", "\x20", "\xe2\x82\xac" };
	static const int ok[] = { 1, 1, 0, 1, 0, 1, 0, 1, 1 };
	char fmt[128], inner[64], *text;
	struct rs_jspan v, e;
	struct rs_jiter it;
	size_t len, pos, k, n, where;

	for (len = 0; len < 40; len++)
		for (pos = 0; pos <= len; pos++)
			for (k = 0; k < sizeof odd / sizeof odd[0]; k++) {
				memset(inner, 'a', len);
				inner[len] = '\0';
				n = snprintf(fmt, sizeof fmt, "[\"%.*s%s%s\",1]",
				    (int)pos, inner, odd[k], inner + pos);
				/* exactly the text, no byte after it: a read
				 * past the end is ASan's to see */
				assert_non_null(text = malloc(n));
				memcpy(text, fmt, n);
				where = 0;
				assert_int_equal(rs_jscan_doc(text, n, &v, &where),
				    ok[k] ? RS_OK : RS_EPARSE);
				if (!ok[k]) {
					assert_int_equal(where, 2 + pos);
				} else {
					assert_int_equal(rs_jscan_iter(&it, text, v),
					    RS_OK);
					assert_int_equal(rs_jscan_elem(&it, &e), RS_OK);
					assert_int_equal(e.off, 1);
					assert_int_equal(e.end, n - 3);
					assert_int_equal(rs_jscan_elem(&it, &e), RS_OK);
					assert_int_equal(text[e.off], '1');
				}
				free(text);
			}
	/* a string cut at the end of the text, plain to its last byte */
	for (len = 0; len < 40; len++) {
		assert_non_null(text = malloc(len + 1));
		text[0] = '"';
		memset(text + 1, 'a', len);
		where = 0;
		assert_int_equal(rs_jscan_doc(text, len + 1, &v, &where),
		    RS_EPARSE);
		assert_int_equal(where, len + 1);
		v.off = 0;
		v.end = len + 1;
		assert_int_equal(rs_jscan_unescape(text, v, inner, sizeof inner,
		    NULL), RS_EPARSE);
		free(text);
	}
}

/* A pick: the first member of each name, in one walk; escaped keys read
 * as their text; absent names an empty span; no object, all empty. */
static void
pick(void **state)
{
	static const char *const names[] = { "a", "name", "zz", "b", "bb" };
	const char *t = "{\"\":0,\"nam\":0,\"z\":0,\"names\":0,\"a\":1,"
	    "\"na\\u006de\":\"x\",\"a\":2,\"b\":[3],\"name\":\"y\"}";
	struct rs_jspan v, out[5];

	assert_int_equal(rs_jscan_doc(t, strlen(t), &v, NULL), RS_OK);
	assert_int_equal(rs_jscan_pick(t, v, names, out, 5), RS_OK);
	assert_int_equal(out[0].end - out[0].off, 1);
	assert_int_equal(t[out[0].off], '1');
	assert_true(rs_jscan_keyeq(t, out[1], "x"));
	/* neither a key that is a name's beginning, nor one that begins
	 * with a name, is that name */
	assert_int_equal(rs_jscan_type(t, out[2]), RS_JNONE);
	assert_int_equal(rs_jscan_type(t, out[3]), RS_JARRAY);
	assert_int_equal(rs_jscan_type(t, out[4]), RS_JNONE);
	t = "[{\"a\":1}]";
	assert_int_equal(rs_jscan_doc(t, strlen(t), &v, NULL), RS_OK);
	assert_int_equal(rs_jscan_pick(t, v, names, out, 4), RS_EPARSE);
	for (int i = 0; i < 4; i++)
		assert_int_equal(rs_jscan_type(t, out[i]), RS_JNONE);
	v.end = v.off;
	assert_int_equal(rs_jscan_pick(t, v, names, out, 4), RS_EPARSE);
}

/* Numbers as strtod reads them, however long; anything else refused. */
static void
doubles(void **state)
{
	char t[256];
	struct rs_jspan v;
	double d;

	size_t n;

	strcpy(t, "[1e2,-0.5,2.9,1e400,\"1\",null,");
	n = strlen(t);
	memset(t + n, '9', 100);
	strcpy(t + n + 100, "]");
	assert_int_equal(rs_jscan_doc(t, strlen(t), &v, NULL), RS_OK);
	struct rs_jiter it;
	struct rs_jspan e;
	const double want[] = { 100, -0.5, 2.9, HUGE_VAL };

	assert_int_equal(rs_jscan_iter(&it, t, v), RS_OK);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(rs_jscan_elem(&it, &e), RS_OK);
		assert_int_equal(rs_jscan_double(t, e, &d), RS_OK);
		assert_true(d == want[i]);
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(rs_jscan_elem(&it, &e), RS_OK);
		assert_int_equal(rs_jscan_double(t, e, &d), RS_EPARSE);
	}
	assert_int_equal(rs_jscan_elem(&it, &e), RS_OK);
	assert_int_equal(e.end - e.off, 100);
	assert_int_equal(rs_jscan_double(t, e, &d), RS_OK);
	assert_true(d > 9.9e99 && d < 1.1e100);
	/* around the copy's stack buffer: 63, 64 and 65 digits, each text
	 * exactly that long (ASan sees a byte too many) */
	for (n = 63; n <= 65; n++) {
		char *x = malloc(n);

		assert_non_null(x);
		memset(x, '1', n);
		e.off = 0;
		e.end = n;
		assert_int_equal(rs_jscan_double(x, e, &d), RS_OK);
		assert_true(d > 1.1e62 * pow(10, n - 63) &&
		    d < 1.2e62 * pow(10, n - 63));
		free(x);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valid_documents),
		cmocka_unit_test(invalid_documents),
		cmocka_unit_test(value_at_offset),
		cmocka_unit_test(depth_bound),
		cmocka_unit_test(types),
		cmocka_unit_test(members_and_elements),
		cmocka_unit_test(walk_in_place),
		cmocka_unit_test(walk_unvalidated),
		cmocka_unit_test(backslash_runs),
		cmocka_unit_test(every_escape),
		cmocka_unit_test(unescape_bounds),
		cmocka_unit_test(find_and_get),
		cmocka_unit_test(str_convenience),
		cmocka_unit_test(agrees_with_cjson),
		cmocka_unit_test(strings_wordwise),
		cmocka_unit_test(pick),
		cmocka_unit_test(doubles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
