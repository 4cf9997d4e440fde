/* An object's text with members changed (libcommon/jsplice.c), as rs-apply
 * writes a status and rs-sync strips one: a table of edits (in place, last,
 * added, dropped, nested, the first of a name only, escaped names,
 * whitespace, values that are no object), and agreement with cJSON on
 * generated objects: the splice of a compact text is, byte for byte, the
 * print of the tree edited the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jscan.h"
#include "json.h"
#include "jsplice.h"

/* rs_jsplice of json with e, NUL-terminated in a buffer of the room it
 * asks for (checked to be enough) */
static char *
splice(const char *json, const struct rs_jsplice *e)
{
	struct rs_jspan v;
	size_t room;
	char *out, *end;

	assert_int_equal(rs_jscan_doc(json, strlen(json), &v, NULL), RS_OK);
	room = rs_jsplice_room(v, e);
	assert_non_null(out = malloc(room + 1));
	end = rs_jsplice(out, json, v, e);
	assert_true((size_t)(end - out) <= room);
	*end = '\0';
	return out;
}

enum how { SET, LAST, DROP, RV };

static void
edits(enum how how, const char *val, struct rs_jsplice *e,
    struct rs_jsplice *meta)
{
	memset(e, 0, 2 * sizeof *e);
	memset(meta, 0, 2 * sizeof *meta);
	if (how == RV) {
		meta[0].name = "resourceVersion";
		meta[0].val = val;
		meta[0].len = strlen(val);
		e[0].name = "metadata";
		e[0].in = meta;
		return;
	}
	e[0].name = "status";
	if (how != DROP) {
		e[0].val = val;
		e[0].len = strlen(val);
		e[0].last = how == LAST;
	}
}

static void
table(void **state)
{
	static const struct {
		enum how how;
		const char *in, *val, *out;
	} cases[] = {
		{ SET, "{\"a\":1,\"status\":{\"x\":1},\"b\":2}", "{\"y\":2}",
		  "{\"a\":1,\"status\":{\"y\":2},\"b\":2}" },
		{ LAST, "{\"a\":1,\"status\":{\"x\":1},\"b\":2}", "{\"y\":2}",
		  "{\"a\":1,\"b\":2,\"status\":{\"y\":2}}" },
		/* missing: added last, in an empty object alone */
		{ SET, "{\"a\":1}", "{}", "{\"a\":1,\"status\":{}}" },
		{ SET, "{}", "{}", "{\"status\":{}}" },
		{ LAST, "{}", "{}", "{\"status\":{}}" },
		{ DROP, "{\"status\":1}", NULL, "{}" },
		{ DROP, "{\"a\":1}", NULL, "{\"a\":1}" },
		/* the first of a name only, as a tree's look-ups */
		{ SET, "{\"status\":1,\"status\":2}", "3",
		  "{\"status\":3,\"status\":2}" },
		{ LAST, "{\"status\":1,\"status\":2}", "3",
		  "{\"status\":2,\"status\":3}" },
		{ DROP, "{\"status\":1,\"a\":0,\"status\":2}", NULL,
		  "{\"a\":0,\"status\":2}" },
		/* an escaped name is the name; its key keeps its text; a
		 * string that looks like a member is none */
		{ SET, "{\"stat\\u0075s\":1,\"k\":\"\\\"status\\\":1\"}", "2",
		  "{\"stat\\u0075s\":2,\"k\":\"\\\"status\\\":1\"}" },
		/* whitespace between members goes, inside values it stays */
		{ SET, " { \"a\" : [ 1 , 2 ] ,\n\"status\" : { } } ", "{}",
		  "{\"a\":[ 1 , 2 ],\"status\":{}}" },
		/* nested: the first metadata's first resourceVersion; another
		 * object's metadata stays */
		{ RV, "{\"spec\":{\"metadata\":{\"resourceVersion\":\"9\"}},"
		  "\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\","
		  "\"resourceVersion\":\"3\"},\"metadata\":{\"resourceVersion\":"
		  "\"4\"}}", "\"2\"",
		  "{\"spec\":{\"metadata\":{\"resourceVersion\":\"9\"}},"
		  "\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"2\","
		  "\"resourceVersion\":\"3\"},\"metadata\":{\"resourceVersion\":"
		  "\"4\"}}" },
		{ RV, "{\"metadata\":{\"name\":\"a\"}}", "\"2\"",
		  "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"2\"}}" },
		/* metadata no object, or missing: nothing to go into */
		{ RV, "{\"metadata\":[\"resourceVersion\"]}", "\"2\"",
		  "{\"metadata\":[\"resourceVersion\"]}" },
		{ RV, "{\"a\":1}", "\"2\"", "{\"a\":1}" },
		/* no object: copied as it is */
		{ SET, "[1,{\"status\":1}]", "2", "[1,{\"status\":1}]" },
		{ SET, "\"status\"", "2", "\"status\"" },
	};
	struct rs_jsplice e[2], meta[2];
	char *out;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		edits(cases[i].how, cases[i].val ? cases[i].val : "", e, meta);
		out = splice(cases[i].in, e);
		if (strcmp(out, cases[i].out) != 0)
			fail_msg("case %zu: %s, not %s", i, out, cases[i].out);
		free(out);
	}
}

static void
was(void **state)
{
	const char *json = "{\"a\":1,\"status\": {\"x\":[1]} ,\"b\":2}";
	struct rs_jspan st = { 7, 7 }, md = { 7, 7 };
	struct rs_jsplice e[] = { { .name = "status", .was = &st },
	    { .name = "metadata", .was = &md }, { .name = NULL } };
	char *out;

	(void)state;
	out = splice(json, e);
	assert_string_equal(out, "{\"a\":1,\"b\":2}");
	assert_int_equal(st.end - st.off, strlen("{\"x\":[1]}"));
	assert_memory_equal(json + st.off, "{\"x\":[1]}", st.end - st.off);
	/* none: an empty span */
	assert_int_equal(md.off, md.end);
	free(out);
}

/* A random small tree: objects whose members are often named status,
 * metadata or resourceVersion, twice at times. */
static cJSON *
gen(unsigned *seed, int depth)
{
	static const char *const names[] = { "status", "metadata",
	    "resourceVersion", "a", "spec" };
	int kind = depth > 3 ? rand_r(seed) % 3 : rand_r(seed) % 5, n;
	cJSON *o;

	switch (kind) {
	case 0: return cJSON_CreateNumber(rand_r(seed) % 1000);
	case 1: return cJSON_CreateString(rand_r(seed) % 2 ? "x y" : "\"q\"");
	case 2: return cJSON_CreateNull();
	case 3:
		o = cJSON_CreateArray();
		for (n = rand_r(seed) % 3; n > 0; n--)
			cJSON_AddItemToArray(o, gen(seed, depth + 1));
		return o;
	default:
		o = cJSON_CreateObject();
		for (n = rand_r(seed) % 5; n > 0; n--)
			cJSON_AddItemToObject(o, names[rand_r(seed) % 5],
			    gen(seed, depth + 1));
		return o;
	}
}

/* The tree's edit for how; val a tree, taken. */
static void
tree_edit(cJSON *o, enum how how, cJSON *val)
{
	cJSON *md;

	switch (how) {
	case SET:
		if (cJSON_GetObjectItemCaseSensitive(o, "status") != NULL)
			cJSON_ReplaceItemInObjectCaseSensitive(o, "status", val);
		else
			cJSON_AddItemToObject(o, "status", val);
		break;
	case LAST:
		cJSON_DeleteItemFromObjectCaseSensitive(o, "status");
		cJSON_AddItemToObject(o, "status", val);
		break;
	case DROP:
		cJSON_DeleteItemFromObjectCaseSensitive(o, "status");
		cJSON_Delete(val);
		break;
	case RV:
		md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
		if (!cJSON_IsObject(md))
			cJSON_Delete(val);
		else if (cJSON_GetObjectItemCaseSensitive(md,
		    "resourceVersion") != NULL)
			cJSON_ReplaceItemInObjectCaseSensitive(md,
			    "resourceVersion", val);
		else
			cJSON_AddItemToObject(md, "resourceVersion", val);
		break;
	}
}

static void
agrees_with_cjson(void **state)
{
	unsigned seed = 33;
	struct rs_jsplice e[2], meta[2];

	(void)state;
	for (int i = 0; i < 4000; i++) {
		enum how how = (enum how)(i % 4);
		cJSON *o = cJSON_CreateObject(), *val = gen(&seed, 2);
		char *text, *vtext, *want, *got;
		int n;

		for (n = rand_r(&seed) % 6; n > 0; n--) {
			static const char *const top[] = { "status",
			    "metadata", "a" };
			cJSON *m = gen(&seed, 1);

			cJSON_AddItemToObject(o, top[rand_r(&seed) % 3], m);
		}
		assert_non_null(text = rs_json_print(o));
		assert_non_null(vtext = rs_json_print(val));
		edits(how, vtext, e, meta);
		got = splice(text, e);
		tree_edit(o, how, val);
		assert_non_null(want = rs_json_print(o));
		if (strcmp(got, want) != 0)
			fail_msg("%s, edit %d with %s: %s, not %s", text, how,
			    vtext, got, want);
		cJSON_free(text);
		cJSON_free(vtext);
		cJSON_free(want);
		free(got);
		cJSON_Delete(o);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table),
		cmocka_unit_test(was),
		cmocka_unit_test(agrees_with_cjson),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
