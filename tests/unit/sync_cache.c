/* Unit tests of rs-sync's pod cache: what a pod keeps of its object, the
 * values pods share (one copy in the intern pool), a replaced pod that
 * stays whole until its own free, and the podlists (owned by controller
 * UID, orphans by namespace) against a model under random puts and
 * deletes. */
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

/* pod_decode of a JSON text, validated first as rs-sync does. */
static rs_code
decode(const char *json, struct pod **p, char *why, size_t len)
{
	struct rs_jspan v;

	assert_int_equal(rs_jscan_doc(json, strlen(json), &v, NULL), RS_OK);
	return pod_decode(json, v, p, why, len);
}

/* A pod named NAME in NS; OWNER is a ReplicaSet's name (its UID is
 * "uid-" OWNER) or NULL; EXTRA is more metadata, or "". */
static struct pod *
mkpod(const char *ns, const char *name, const char *owner, const char *labels,
    const char *extra)
{
	char json[2048], ref[256] = "", why[128];
	struct pod *p = NULL;

	if (owner)
		snprintf(ref, sizeof ref, ",\"ownerReferences\":[{\"apiVersion\":"
		    "\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"%s\","
		    "\"uid\":\"uid-%s\",\"controller\":true}]", owner, owner);
	snprintf(json, sizeof json, "{\"metadata\":{\"namespace\":\"%s\","
	    "\"name\":\"%s\",\"uid\":\"uid-pod-%s\",\"resourceVersion\":\"7\","
	    "\"labels\":%s%s%s},\"spec\":{\"nodeName\":\"node-1\"}}",
	    ns, name, name, labels, ref, extra);
	assert_int_equal(decode(json, &p, why, sizeof why), RS_OK);
	return p;
}

static void
decoded(void **state)
{
	const char *json = "{\"metadata\":{\"namespace\":\"prod\",\"name\":\"web-1\","
	    "\"uid\":\"u-1\",\"resourceVersion\":\"42\","
	    "\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
	    "\"deletionTimestamp\":\"not a time\","
	    "\"annotations\":{\"controller.kubernetes.io/pod-deletion-cost\":\"-5\"},"
	    "\"labels\":{\"app\":\"web\",\"tier\":\"fe\"},"
	    "\"ownerReferences\":[{\"kind\":\"Deployment\",\"name\":\"d\",\"uid\":\"u-d\"},"
	    "{\"kind\":\"ReplicaSet\",\"name\":\"web\",\"uid\":\"u-rs\",\"controller\":true}]},"
	    "\"spec\":{\"nodeName\":\"n-3\"},"
	    "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\","
	    "\"status\":\"True\",\"lastTransitionTime\":\"2026-01-01T00:00:10Z\"}],"
	    "\"containerStatuses\":[{\"restartCount\":2},{\"restartCount\":5}]}}";
	char why[128];
	struct pod *p;

	assert_int_equal(decode(json, &p, why, sizeof why), RS_OK);
	assert_string_equal(p->key, "prod/web-1");
	assert_string_equal(p->ns, "prod");
	assert_string_equal(p->name, "web-1");
	assert_ptr_equal(p->name, p->key + 5);
	assert_string_equal(p->uid, "u-1");
	assert_string_equal(p->rv, "42");
	assert_string_equal(p->ctrl_kind, "ReplicaSet");
	assert_string_equal(p->ctrl_name, "web");
	assert_string_equal(p->ctrl_uid, "u-rs");
	assert_string_equal(p->node, "n-3");
	assert_int_equal(p->labels->n, 2);
	assert_string_equal(rs_labels_get(p->labels, "tier"), "fe");
	assert_true(p->created == 1767225600.0);
	assert_true(p->ready_since == 1767225610.0);
	assert_true(p->deleted);   /* unparsable, but there */
	assert_true(p->ready);
	assert_int_equal(p->phase_rank, 2);
	assert_int_equal(p->restarts, 5);
	assert_int_equal(p->cost, -5);
	assert_false(pod_active(p));
	pod_free(p);
	assert_int_equal(intern_count(), 0);
}

static void
no_ref_no_time(void **state)
{
	struct pod *p = mkpod("ns", "a", NULL, "null", "");
	struct pod *q = mkpod("ns", "b", NULL, "{}",
	    ",\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"x\","
	    "\"controller\":true}]");

	assert_null(p->ctrl_kind);
	assert_null(p->ctrl_uid);
	/* a controllerRef without a UID is no controllerRef */
	assert_null(q->ctrl_kind);
	assert_null(q->ctrl_name);
	assert_null(q->ctrl_uid);
	assert_false(p->deleted);
	assert_true(p->created == 0);
	assert_true(pod_active(p));
	assert_ptr_equal(p->labels, q->labels);   /* null and {}: both empty */
	pod_free(p);
	pod_free(q);
	assert_int_equal(intern_count(), 0);
}

/* A pod refused for its labels takes no reference with it. */
static void
refused(void **state)
{
	const char *json = "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\","
	    "\"labels\":{\"app\":1}}}";
	struct pod *p = NULL;
	char why[128] = "";

	assert_int_equal(decode(json, &p, why, sizeof why), RS_EPARSE);
	assert_non_null(strstr(why, "app"));
	assert_null(p);
	assert_int_equal(intern_count(), 0);
}

/* The text is read as the tree was: the first member of a name, lists
 * walked over an object's values too, a step that is no object absent,
 * strings only where strings are wanted, numbers as doubles, escapes
 * read as their text. */
static void
read_as_the_tree_did(void **state)
{
	const char *json = "{\"metadata\":{\"namespace\":\"ns\",\"name\":"
	    "\"na\\u006de-1\",\"name\":\"second\",\"uid\":7,"
	    "\"deletionTimestamp\":null,\"labels\":null,"
	    "\"ownerReferences\":{\"x\":{\"kind\":\"ReplicaSet\",\"name\":\"r\","
	    "\"uid\":\"u\\/1\",\"controller\":true}}},"
	    "\"metadata\":{\"namespace\":\"other\"},"
	    "\"spec\":{\"nodeName\":\"n\\/1\",\"initContainers\":[{\"name\":"
	    "\"side\",\"restartPolicy\":\"Always\"},{\"name\":\"once\"}]},"
	    "\"status\":{\"phase\":\"Failed\",\"conditions\":[{\"type\":"
	    "\"PodScheduled\",\"status\":\"True\"},{\"type\":\"Ready\","
	    "\"status\":\"False\"},{\"type\":\"Ready\",\"status\":\"True\"}],"
	    "\"containerStatuses\":{\"a\":{\"restartCount\":2.9},"
	    "\"b\":{\"restartCount\":\"7\"},\"c\":{\"restartCount\":1}},"
	    "\"initContainerStatuses\":[{\"name\":\"side\",\"restartCount\":4},"
	    "{\"name\":\"once\",\"restartCount\":9}]}}";
	char why[128], key[64];
	struct rs_jspan v;
	struct pod *p;

	assert_int_equal(decode(json, &p, why, sizeof why), RS_OK);
	assert_string_equal(p->key, "ns/name-1");
	assert_string_equal(p->uid, "");          /* not a string */
	assert_true(p->deleted);                  /* null, but there */
	assert_int_equal(p->labels->n, 0);
	assert_string_equal(p->ctrl_kind, "ReplicaSet");
	assert_string_equal(p->ctrl_uid, "u/1");
	assert_string_equal(p->node, "n/1");
	assert_true(p->terminal);
	assert_false(p->ready);                   /* the first Ready */
	assert_int_equal(p->restarts, 2);
	assert_int_equal(p->sidecar_restarts, 4);
	pod_free(p);
	assert_int_equal(rs_jscan_doc(json, strlen(json), &v, NULL), RS_OK);
	assert_int_equal(pod_key(json, v, key, sizeof key), RS_OK);
	assert_string_equal(key, "ns/name-1");
	assert_int_equal(pod_key(json, v, key, 4), RS_ETOOBIG);

	json = "{\"metadata\":[],\"spec\":{\"nodeName\":\"n\"}}";
	assert_int_equal(decode(json, &p, why, sizeof why), RS_EPARSE);
	assert_string_equal(why, "pod without metadata.namespace or metadata.name");
	json = "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"b\"},\"spec\":[1],"
	    "\"status\":{\"phase\":\"Unknown\",\"conditions\":{\"x\":{\"type\":"
	    "\"PodScheduled\",\"status\":\"False\"},\"y\":{\"type\":\"Ready\","
	    "\"status\":\"True\",\"lastTransitionTime\":\"2026-01-01T00:00:10Z\"}}}}";
	assert_int_equal(decode(json, &p, why, sizeof why), RS_OK);
	assert_string_equal(p->node, "");
	assert_null(p->ctrl_kind);
	assert_int_equal(p->phase_rank, 1);
	assert_false(p->terminal);
	assert_true(p->ready);                    /* conditions as an object */
	assert_true(p->ready_since == 1767225610.0);
	pod_free(p);
	assert_int_equal(intern_count(), 0);
}

static void
shared(void **state)
{
	struct pod *a = mkpod("ns", "web-1", "web", "{\"app\":\"web\"}", "");
	struct pod *b = mkpod("ns", "web-2", "web", "{\"app\":\"web\"}", "");
	struct pod *c = mkpod("ns", "db-1", "db", "{\"app\":\"db\"}", "");

	assert_ptr_equal(a->ns, b->ns);
	assert_ptr_equal(a->node, b->node);
	assert_ptr_equal(a->ctrl_kind, b->ctrl_kind);
	assert_ptr_equal(a->ctrl_uid, b->ctrl_uid);
	assert_ptr_equal(a->labels, b->labels);
	assert_ptr_not_equal(a->ctrl_uid, c->ctrl_uid);
	assert_ptr_not_equal(a->labels, c->labels);
	assert_string_equal(c->ctrl_name, "db");
	assert_string_equal(c->ctrl_uid, "uid-db");
	assert_ptr_not_equal(a->uid, b->uid);
	/* ns, node, two controllerRefs, two label sets */
	assert_int_equal(intern_count(), 6);
	pod_free(a);
	pod_free(c);
	assert_int_equal(intern_count(), 4);
	assert_string_equal(b->ctrl_uid, "uid-web");
	pod_free(b);
	assert_int_equal(intern_count(), 0);
}

/* The pod a put replaces is whole until the caller frees it, even when
 * it held the last reference to its values and its podlist is gone. */
static void
old_survives(void **state)
{
	struct pod *a0 = mkpod("ns", "x", "web", "{\"app\":\"web\"}", "");
	struct pod *a = mkpod("ns", "x", "web", "{\"app\":\"web\"}", "");
	struct pod *b = mkpod("ns", "x", NULL, "{\"app\":\"other\"}", "");
	struct pod *old = NULL;
	struct cache c;

	cache_init(&c, &kind_replicaset);
	assert_int_equal(cache_put_pod(&c, a0, &old), RS_OK);
	assert_null(old);
	/* the only pod of its list, replaced: the list must stay */
	assert_int_equal(cache_put_pod(&c, a, &old), RS_OK);
	assert_ptr_equal(old, a0);
	pod_free(old);
	assert_int_equal(cache_owned(&c, "uid-web")->n, 1);
	assert_ptr_equal(cache_owned(&c, "uid-web")->head, a);
	assert_null(a->next);
	assert_int_equal(cache_put_pod(&c, b, &old), RS_OK);
	assert_ptr_equal(old, a);
	assert_ptr_equal(cache_pod(&c, "ns/x"), b);
	assert_null(cache_owned(&c, "uid-web"));
	assert_ptr_equal(cache_orphans(&c, "ns")->head, b);
	assert_ptr_equal(cache_del_pod(&c, "ns/x"), b);
	pod_free(b);
	cache_free(&c);
	/* old alone holds its controllerRef and labels now */
	assert_int_equal(intern_count(), 4);
	assert_string_equal(old->key, "ns/x");
	assert_string_equal(old->ctrl_kind, "ReplicaSet");
	assert_string_equal(old->ctrl_name, "web");
	assert_string_equal(old->ctrl_uid, "uid-web");
	assert_string_equal(rs_labels_get(old->labels, "app"), "web");
	pod_free(old);
	assert_int_equal(intern_count(), 0);
}

#define NPODS 300
#define NOWNERS 4   /* owner NOWNERS - 1 is none: an orphan */

static const char *const owners[NOWNERS] = { "a", "b", "c", NULL };
static const char *const nss[2] = { "ns1", "ns2" };

/* Every podlist holds exactly the pods the model puts there. */
static void
check_lists(const struct cache *c, const int *owner, const int *nsof)
{
	size_t want[NOWNERS - 1][2] = { { 0 } }, orphans[2] = { 0, 0 }, len = 0;
	char uid[32];

	for (int i = 0; i < NPODS; i++) {
		if (owner[i] < 0)
			continue;
		len++;
		if (owners[owner[i]])
			want[owner[i]][nsof[i]]++;
		else
			orphans[nsof[i]]++;
	}
	assert_int_equal(c->pods.len, len);
	for (int o = 0; o < NOWNERS - 1; o++) {
		const struct podlist *l;
		size_t n = 0, w = want[o][0] + want[o][1];

		snprintf(uid, sizeof uid, "uid-%s", owners[o]);
		l = cache_owned(c, uid);
		if (w == 0) {
			assert_null(l);
			continue;
		}
		assert_non_null(l);
		for (const struct pod *p = l->head; p; p = p->next) {
			assert_string_equal(p->ctrl_uid, uid);
			assert_true(p->next == NULL || p->next->prev == p);
			n++;
		}
		assert_int_equal(n, w);
		assert_int_equal(l->n, w);
	}
	for (int s = 0; s < 2; s++) {
		const struct podlist *l = cache_orphans(c, nss[s]);
		size_t n = 0;

		if (orphans[s] == 0) {
			assert_null(l);
			continue;
		}
		assert_non_null(l);
		assert_null(l->head->prev);
		for (const struct pod *p = l->head; p; p = p->next) {
			assert_null(p->ctrl_uid);
			assert_string_equal(p->ns, nss[s]);
			n++;
		}
		assert_int_equal(n, orphans[s]);
	}
}

/* Random puts (changing owner, orphaned, adopted) and deletes. */
static void
lists_model(void **state)
{
	static int owner[NPODS], nsof[NPODS];
	unsigned seed = 3;
	struct cache c;
	char name[32];

	cache_init(&c, &kind_replicaset);
	for (int i = 0; i < NPODS; i++)
		owner[i] = -1;
	for (int step = 0; step < 20000; step++) {
		struct pod *p, *old = NULL;
		int i, o;

		seed = seed * 1103515245 + 12345;
		i = (seed >> 8) % NPODS;
		o = (seed >> 20) % NOWNERS;
		nsof[i] = i % 2;
		snprintf(name, sizeof name, "pod-%d", i);
		if ((seed >> 4) % 4 == 0) {
			char key[48];

			snprintf(key, sizeof key, "%s/%s", nss[nsof[i]], name);
			p = cache_del_pod(&c, key);
			assert_true((p != NULL) == (owner[i] >= 0));
			pod_free(p);
			owner[i] = -1;
		} else {
			p = mkpod(nss[nsof[i]], name, owners[o], "{\"app\":\"x\"}", "");
			assert_int_equal(cache_put_pod(&c, p, &old), RS_OK);
			assert_true((old != NULL) == (owner[i] >= 0));
			if (old)
				assert_int_equal(strcmp(old->key, p->key), 0);
			pod_free(old);
			owner[i] = o;
		}
		check_lists(&c, owner, nsof);
	}
	cache_free(&c);
	assert_int_equal(intern_count(), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decoded),
		cmocka_unit_test(no_ref_no_time),
		cmocka_unit_test(refused),
		cmocka_unit_test(read_as_the_tree_did),
		cmocka_unit_test(shared),
		cmocka_unit_test(old_survives),
		cmocka_unit_test(lists_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
