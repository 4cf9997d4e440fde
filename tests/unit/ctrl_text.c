/* Unit tests of a controller's cache entry read from its text in place
 * (bin/rs-sync/cache.c): ctrl_strip takes out the status and
 * metadata.managedFields, the first of each name only, wherever they
 * stand, and keeps the rest as a tree of the whole object has it; and
 * ctrl_decode gives what the tree of the whole object gave (the text and
 * status as printed from it, fields, refusals and their words), and
 * ctrl_template the template from the text kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-sync/cache.c"
#include "../../bin/rs-sync/pod.c"
#include "../../bin/rs-sync/scan.c"
#include "../../bin/rs-sync/intern.c"
#include "../../bin/rs-sync/kind.c"

static const char *const strip_names[] = { "status", "metadata",
    "managedFields", NULL };

/* ctrl_strip of json, NUL-terminated in out; *st the status's text or "" */
static void
strip(const char *json, char *out, char *st)
{
	struct rs_jspan v, dropped = { 0, 0 };
	char *end;

	assert_int_equal(rs_jscan_doc(json, strlen(json), &v, NULL), RS_OK);
	end = ctrl_strip(out, json, v, strip_names, &dropped);
	assert_true((size_t)(end - out) <= v.end - v.off);
	*end = '\0';
	memcpy(st, json + dropped.off, dropped.end - dropped.off);
	st[dropped.end - dropped.off] = '\0';
}

static void
stripped(void **state)
{
	static const struct {
		const char *in, *text, *status;
	} cases[] = {
		{ "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"x\":1}],"
		  "\"uid\":\"u\"},\"spec\":{},\"status\":{\"replicas\":1}}",
		  "{\"metadata\":{\"name\":\"a\",\"uid\":\"u\"},\"spec\":{}}",
		  "{\"replicas\":1}" },
		/* status first, managedFields first */
		{ "{\"status\":{\"replicas\":2},\"metadata\":{\"managedFields\":"
		  "[],\"name\":\"a\"},\"spec\":{\"status\":1}}",
		  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"status\":1}}",
		  "{\"replicas\":2}" },
		/* status the only member */
		{ "{\"status\":{}}", "{}", "{}" },
		{ "{}", "{}", "" },
		/* names escaped are the same names; strings that look like them
		 * are not members */
		{ "{\"metadata\":{\"managed\\u0046ields\":1,\"n\":"
		  "\"\\\"managedFields\\\":2\"},\"stat\\u0075s\":null,"
		  "\"k\":\"\\\"status\\\":{}\"}",
		  "{\"metadata\":{\"n\":\"\\\"managedFields\\\":2\"},"
		  "\"k\":\"\\\"status\\\":{}\"}", "null" },
		/* the first of each name only, as the tree's look-ups */
		{ "{\"status\":1,\"status\":2,\"metadata\":{\"managedFields\":1,"
		  "\"managedFields\":2},\"metadata\":{\"managedFields\":3}}",
		  "{\"status\":2,\"metadata\":{\"managedFields\":2},"
		  "\"metadata\":{\"managedFields\":3}}", "1" },
		/* managedFields elsewhere stays; metadata no object stays */
		{ "{\"managedFields\":1,\"spec\":{\"metadata\":"
		  "{\"managedFields\":1}},\"metadata\":[\"managedFields\"]}",
		  "{\"managedFields\":1,\"spec\":{\"metadata\":"
		  "{\"managedFields\":1}},\"metadata\":[\"managedFields\"]}", "" },
		/* whitespace between members goes, inside values it stays */
		{ " { \"metadata\" : { \"name\" : \"a b\" , \"managedFields\" :"
		  " [ 1 , 2 ] } ,\n\"spec\" : [ 1 , { } ] , \"status\" : { } } ",
		  "{\"metadata\":{\"name\":\"a b\"},\"spec\":[ 1 , { } ]}",
		  "{ }" },
	};
	char out[512], st[512];

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		strip(cases[i].in, out, st);
		assert_string_equal(out, cases[i].text);
		assert_string_equal(st, cases[i].status);
	}
}

/* What the tree of the whole object made of it: managedFields deleted,
 * status detached, both printed. */
static void
tree_texts(const char *json, char **text, char **status)
{
	cJSON *o = cJSON_Parse(json), *st;

	assert_non_null(o);
	cJSON_DeleteItemFromObjectCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(o, "metadata"), "managedFields");
	st = cJSON_DetachItemFromObjectCaseSensitive(o, "status");
	*status = cJSON_IsObject(st) ? cJSON_PrintUnformatted(st) : NULL;
	*text = cJSON_PrintUnformatted(o);
	cJSON_Delete(st);
	cJSON_Delete(o);
}

static rs_code
decode(const struct kind *k, const char *json, struct ctrl **r, char *why,
    size_t len)
{
	struct rs_jspan v;

	assert_int_equal(rs_jscan_doc(json, strlen(json), &v, NULL), RS_OK);
	return ctrl_decode(k, json, v, r, why, len);
}

#define META "\"metadata\":{\"namespace\":\"ns\",\"name\":\"web\"," \
	"\"uid\":\"u-1\",\"resourceVersion\":\"42\",\"generation\":3," \
	"\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":{\"f:spec\":{}}}]," \
	"\"ownerReferences\":[{\"uid\":\"d-0\"},{\"controller\":true," \
	"\"kind\":\"Deployment\",\"name\":\"d\",\"uid\":\"d-1\"}]}"

static void
as_the_tree(void **state)
{
	static const char *const objs[] = {
		"{\"kind\":\"ReplicaSet\"," META ",\"spec\":{\"replicas\":5,"
		"\"minReadySeconds\":7,\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
		"\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\",\"c\":\"d\"}}}},"
		"\"status\":{\"replicas\":2,\"readyReplicas\":1.0,"
		"\"observedGeneration\":3}}",
		/* numbers printed anew by the tree, strings escaped, spaces */
		"{ \"status\" : { \"replicas\" : 2e0 , \"x\" : \"\\u00e9\\/\" } ,"
		META " , \"spec\" : { \"replicas\" : 4294967299 } }",
		"{" META ",\"status\":null,\"spec\":{\"replicas\":-3}}",
		"{" META ",\"status\":[1],\"spec\":{\"replicas\":\"2\"}}",
	};
	char why[128];
	struct ctrl *r;
	char *text, *status;
	cJSON *tmpl;

	(void)state;
	for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
		assert_int_equal(decode(&kind_replicaset, objs[i], &r, why,
		    sizeof why), RS_OK);
		tree_texts(objs[i], &text, &status);
		cJSON *mine = cJSON_Parse(r->text);
		char *printed = cJSON_PrintUnformatted(mine);
		assert_string_equal(printed, text);
		if (status == NULL)
			assert_null(r->status);
		else
			assert_string_equal(r->status, status);
		assert_string_equal(r->key, "ns/web");
		assert_string_equal(r->uid, "u-1");
		assert_string_equal(r->rv, "42");
		assert_string_equal(r->owner_uid, "d-1");
		assert_int_equal(r->generation, 3);
		assert_int_equal(r->deleting, 0);
		cJSON_free(printed);
		cJSON_Delete(mine);
		cJSON_free(text);
		cJSON_free(status);
		assert_int_equal(ctrl_template(r, &tmpl), RS_OK);
		if (i == 0) {
			assert_true(cJSON_IsObject(tmpl));
			assert_string_equal(rs_json_str(tmpl, "metadata", "labels",
			    "c", NULL), "d");
		} else
			assert_null(tmpl);
		cJSON_Delete(tmpl);
		if (i == 0) {
			assert_int_equal(r->replicas, 5);
			assert_int_equal(r->min_ready, 7);
			assert_non_null(r->sel);
			assert_int_equal(r->tmpl_labels->n, 2);
			assert_true(r->counts.plain);
			assert_int_equal(r->counts.present, 1u << SC_REPLICAS |
			    1u << SC_READY | 1u << SC_OBSERVED);
			assert_int_equal(r->counts.v[SC_READY], 1);
		}
		if (i == 1)
			assert_int_equal(r->replicas, INT32_MAX);
		if (i == 2 || i == 3) {
			assert_int_equal(r->replicas, i == 2 ? 0 : 1);
			assert_false(r->counts.plain);
		}
		ctrl_free(r);
	}
}

static void
fields(void **state)
{
	char why[128] = "";
	struct ctrl *r;

	(void)state;
	/* no spec: one replica; deletionTimestamp null is none */
	assert_int_equal(decode(&kind_replicationcontroller,
	    "{\"metadata\":{\"namespace\":\"n\",\"name\":\"r\","
	    "\"deletionTimestamp\":null}}", &r, why, sizeof why), RS_OK);
	assert_int_equal(r->replicas, 1);
	assert_int_equal(r->deleting, 0);
	assert_string_equal(r->uid, "");
	assert_null(r->owner_uid);
	assert_null(r->status);
	assert_true(r->counts.plain);
	ctrl_free(r);
	assert_int_equal(decode(&kind_replicationcontroller,
	    "{\"metadata\":{\"namespace\":\"n\",\"name\":\"r\","
	    "\"deletionTimestamp\":\"x\"},\"spec\":{\"selector\":{\"a\":\"b\"},"
	    "\"minReadySeconds\":1e400}}", &r, why, sizeof why), RS_OK);
	assert_int_equal(r->deleting, 1);
	assert_int_equal(r->min_ready, INT32_MAX);
	assert_non_null(r->sel);
	ctrl_free(r);
	/* an invalid selector keeps the object, and says why */
	assert_int_equal(decode(&kind_replicaset,
	    "{\"metadata\":{\"namespace\":\"n\",\"name\":\"r\"},\"spec\":"
	    "{\"selector\":{\"matchLabels\":[]}}}", &r, why, sizeof why), RS_OK);
	assert_null(r->sel);
	assert_true(why[0] != '\0');
	ctrl_free(r);
}

static void
refused(void **state)
{
	char why[128];
	struct ctrl *r = NULL;
	const char *uid;
	char key[512];
	struct rs_jspan v;
	const char *del = "{\"metadata\":{\"name\":\"r\",\"namespace\":\"n\","
	    "\"uid\":\"u\"}}";

	(void)state;
	assert_int_equal(decode(&kind_replicaset, "{\"metadata\":{\"name\":"
	    "\"r\"}}", &r, why, sizeof why), RS_EPARSE);
	assert_string_equal(why, "ReplicaSet without metadata.namespace or "
	    "metadata.name");
	assert_int_equal(decode(&kind_replicaset, "{\"metadata\":{\"name\":"
	    "\"r\",\"namespace\":\"n\"},\"spec\":{\"template\":{\"metadata\":"
	    "{\"labels\":{\"a\":1}}}}}", &r, why, sizeof why), RS_EPARSE);
	assert_string_equal(why, "label \"a\": value is not a string");
	assert_int_equal(decode(&kind_replicaset, "[]", &r, why, sizeof why),
	    RS_EPARSE);
	assert_int_equal(rs_jscan_doc(del, strlen(del), &v, NULL), RS_OK);
	assert_int_equal(ctrl_key(&kind_replicaset, del, v, key, sizeof key,
	    &uid), RS_OK);
	assert_string_equal(key, "n/r");
	assert_string_equal(uid, "u");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stripped),
		cmocka_unit_test(as_the_tree),
		cmocka_unit_test(fields),
		cmocka_unit_test(refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
