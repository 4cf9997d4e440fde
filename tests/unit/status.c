/* Unit tests of the status a sync writes (bin/rs-sync/status.c): the check
 * without trees (status_unchanged) never calls a status unchanged that
 * the trees call changed, and for the usual statuses (counts as whole
 * numbers, no ReplicaFailure) it says what the trees say; the status
 * built keeps the other members, drops ReplicaFailure, and follows Go's
 * omitempty. Every cached status below against every set of counts, for
 * both kinds, at generations 0 to 2 (0: observedGeneration omitted). */
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
#include "../../bin/rs-sync/status.c"

/* cached statuses: "" is none; plain says whether the counts tell all */
static const struct {
	const char *status;
	int plain;
} cached[] = {
	{ "", 1 },
	{ "{}", 1 },
	{ "{\"replicas\":3}", 1 },
	{ "{\"replicas\":3,\"fullyLabeledReplicas\":3,\"readyReplicas\":3,"
	  "\"availableReplicas\":3,\"observedGeneration\":2}", 1 },
	{ "{\"replicas\":3,\"fullyLabeledReplicas\":3,\"readyReplicas\":2,"
	  "\"availableReplicas\":1,\"observedGeneration\":2,"
	  "\"terminatingReplicas\":0}", 1 },
	{ "{\"replicas\":3,\"fullyLabeledReplicas\":3,\"readyReplicas\":3,"
	  "\"availableReplicas\":3,\"observedGeneration\":2,"
	  "\"terminatingReplicas\":1}", 1 },
	{ "{\"replicas\":0,\"observedGeneration\":2}", 1 },
	{ "{\"replicas\":0,\"fullyLabeledReplicas\":0,\"observedGeneration\":2}",
	  1 },
	{ "{\"replicas\":3,\"fullyLabeledReplicas\":3,\"readyReplicas\":3,"
	  "\"availableReplicas\":3,\"observedGeneration\":2,"
	  "\"conditions\":[{\"type\":\"Other\",\"status\":\"True\"}]}", 1 },
	{ "{\"replicas\":3,\"fullyLabeledReplicas\":3,\"readyReplicas\":3,"
	  "\"availableReplicas\":3,\"observedGeneration\":2,"
	  "\"conditions\":[{\"type\":\"ReplicaFailure\",\"status\":\"True\"}]}",
	  0 },
	{ "{\"replicas\":3.5,\"observedGeneration\":2}", 0 },
	{ "{\"replicas\":\"3\",\"observedGeneration\":2}", 0 },
	{ "{\"replicas\":1e300,\"observedGeneration\":2}", 0 },
	{ "{\"replicas\":3,\"observedGeneration\":2,\"selector\":\"a=b\"}", 1 },
	{ "[]", 0 },
	{ "null", 0 },
	/* a name twice: a sync's new value brings the other one forward */
	{ "{\"replicas\":1,\"replicas\":2}", 0 },
	{ "{\"replicas\":1,\"replicas\":\"x\"}", 0 },
	{ "{\"replicas\":3,\"readyReplicas\":3,\"readyReplicas\":0}", 0 },
	{ "{\"replicas\":3,\"conditions\":[{\"type\":\"Other\"}],"
	  "\"conditions\":[]}", 0 },
	/* conditions a sync changes (an empty list goes), or may */
	{ "{\"replicas\":1,\"conditions\":[]}", 0 },
	{ "{\"replicas\":1,\"conditions\":{}}", 0 },
	{ "{\"replicas\":1,\"conditions\":null}", 0 },
	{ "{\"replicas\":1,\"conditions\":[{\"status\":\"True\"}]}", 0 },
	{ "{\"replicas\":1,\"observedGeneration\":0}", 1 },
};

static struct ctrl *
mkctrl(const struct kind *k, const char *status, long long generation)
{
	char json[1024], why[128];
	struct ctrl *r = NULL;
	struct rs_jspan o;

	snprintf(json, sizeof json, "{\"apiVersion\":\"%s\","
	    "\"kind\":\"%s\",\"metadata\":{\"name\":\"r\","
	    "\"namespace\":\"ns\",\"uid\":\"u\",\"resourceVersion\":\"1\","
	    "\"generation\":%lld},\"spec\":{\"replicas\":3,\"selector\":"
	    "%s,\"template\":{\"metadata\":"
	    "{\"labels\":{\"a\":\"b\"}}}}%s%s}", k->api_version, k->kind,
	    generation, k->map_selector ? "{\"a\":\"b\"}" :
	    "{\"matchLabels\":{\"a\":\"b\"}}",
	    status[0] ? ",\"status\":" : "", status);
	assert_int_equal(rs_jscan_doc(json, strlen(json), &o, NULL), RS_OK);
	assert_int_equal(ctrl_decode(k, json, o, &r, why, sizeof why), RS_OK);
	return r;
}

/* the trees' answer: does the built status equal the cached one? */
static int
trees_unchanged(const struct sync *s, const struct ctrl *r,
    const struct counts *c)
{
	cJSON *old = status_old(r), *now;
	int same;

	assert_non_null(old);
	now = status_build(s, r, c, old);
	assert_non_null(now);
	same = cJSON_Compare(old, now, 1);
	cJSON_Delete(old);
	cJSON_Delete(now);
	return same;
}

static void
fast_check_agrees_with_trees(void **state)
{
	static const int vals[] = { 0, 1, 2, 3 };
	static const struct kind *const kinds[] = { &kind_replicaset,
	    &kind_replicationcontroller };
	struct sync s = { 0 };
	size_t i;
	int n = 4, agreed_same = 0;

	(void)state;
	for (i = 0; i < sizeof cached / sizeof cached[0] * 2; i++) {
		s.kind = kinds[i % 2];
		for (long long gen = 0; gen <= 2; gen++) {
			struct ctrl *r = mkctrl(s.kind, cached[i / 2].status,
			    gen);

			assert_int_equal(r->counts.plain, cached[i / 2].plain);
			for (int term = 0; term <= 1; term++) {
				s.terminating = term;
				for (int k = 0; k < n * n * n * n * n; k++) {
					struct counts c = {
						.replicas = vals[k % n],
						.fully = vals[k / n % n],
						.ready = vals[k / (n * n) % n],
						.available = vals[k / (n * n * n) % n],
						.terminating = vals[k / (n * n * n * n) % n],
					};
					int fast = status_unchanged(&s, r, &c);
					int slow = trees_unchanged(&s, r, &c);

					if (fast)
						assert_true(slow);
					if (cached[i / 2].plain)
						assert_int_equal(fast, slow);
					agreed_same += fast;
				}
			}
			ctrl_free(r);
		}
	}
	/* the check did find unchanged statuses, not only refuse */
	assert_true(agreed_same > 0);
}

static void
built_status(void **state)
{
	struct sync s = { .kind = &kind_replicaset, .terminating = 1 };
	struct counts c = { .replicas = 2, .fully = 0, .ready = 1,
	    .available = 0, .terminating = 0 };
	struct ctrl *r = mkctrl(&kind_replicaset, "{\"replicas\":3,\"fullyLabeledReplicas\":3,"
	    "\"selector\":\"a=b\",\"conditions\":[{\"type\":\"ReplicaFailure\"},"
	    "{\"type\":\"Other\"}]}", 4);
	cJSON *old = status_old(r), *now = status_build(&s, r, &c, old);
	char *text = cJSON_PrintUnformatted(now);

	(void)state;
	assert_string_equal(text, "{\"selector\":\"a=b\",\"conditions\":"
	    "[{\"type\":\"Other\"}],\"replicas\":2,\"readyReplicas\":1,"
	    "\"terminatingReplicas\":0,\"observedGeneration\":4}");
	cJSON_free(text);
	cJSON_Delete(old);
	cJSON_Delete(now);
	ctrl_free(r);

	/* Go's omitempty: at generation 0 and no pod, replicas alone (and
	 * terminatingReplicas where the kind reports it) */
	for (int i = 0; i < 2; i++) {
		const struct kind *k = i ? &kind_replicationcontroller :
		    &kind_replicaset;
		struct counts none = { 0 };

		s.kind = k;
		r = mkctrl(k, "{}", 0);
		old = status_old(r);
		now = status_build(&s, r, &none, old);
		text = cJSON_PrintUnformatted(now);
		assert_string_equal(text, k->terminating ?
		    "{\"replicas\":0,\"terminatingReplicas\":0}" :
		    "{\"replicas\":0}");
		cJSON_free(text);
		cJSON_Delete(old);
		cJSON_Delete(now);
		ctrl_free(r);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fast_check_agrees_with_trees),
		cmocka_unit_test(built_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
