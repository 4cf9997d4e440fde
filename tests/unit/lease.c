/* Unit tests of rs-lease's election decision (decide.c) with a made-up
 * clock, and of the Lease object it reads and writes (lease.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-lease/decide.c"
#include "../../bin/rs-lease/lease.c"

#define S 1000000000LL

static struct lease_rec
rec(const char *holder, long dur, long trans, const char *renew)
{
	struct lease_rec r;

	memset(&r, 0, sizeof r);
	snprintf(r.holder, sizeof r.holder, "%s", holder);
	r.duration_s = dur;
	r.transitions = trans;
	snprintf(r.acquire, sizeof r.acquire, "2026-01-01T00:00:00.000000Z");
	snprintf(r.renew, sizeof r.renew, "%s", renew);
	return r;
}

/* Held by another: wait a full duration from the local observation,
 * whatever renewTime says; a change restarts the clock. */
static void
test_wait_then_acquire(void **state)
{
	struct elector e;
	struct lease_rec r = rec("other", 15, 3, "2000-01-01T00:00:00.000000Z");

	elector_init(&e, "me", 15);
	lease_observe(&e, &r, 100 * S);
	assert_int_equal(lease_decide(&e, 100 * S), LEASE_WAIT);
	assert_int_equal(lease_decide(&e, 114 * S), LEASE_WAIT);
	/* The same record seen again does not restart the clock. */
	lease_observe(&e, &r, 110 * S);
	assert_int_equal(lease_decide(&e, 115 * S), LEASE_ACQUIRE);
	/* A renewal seen at 112 s: valid until 127 s. */
	r = rec("other", 15, 3, "2000-01-01T00:00:02.000000Z");
	lease_observe(&e, &r, 112 * S);
	assert_int_equal(lease_decide(&e, 126 * S), LEASE_WAIT);
	assert_int_equal(lease_decide(&e, 127 * S), LEASE_ACQUIRE);
	assert_int_equal(lease_expiry(&e), 127 * S);
}

/* The record's own duration counts: a released lease (1 s) or a free one
 * (no holder) is taken at once. */
static void
test_free_and_released(void **state)
{
	struct elector e;
	struct lease_rec r = rec("", 1, 4, "2026-01-01T00:00:00.000000Z");

	elector_init(&e, "me", 15);
	lease_observe(&e, &r, 50 * S);
	assert_int_equal(lease_decide(&e, 50 * S), LEASE_ACQUIRE);
	r = rec("other", 0, 4, "2026-01-01T00:00:00.000000Z");
	lease_observe(&e, &r, 60 * S);
	assert_int_equal(lease_decide(&e, 60 * S), LEASE_ACQUIRE);
}

static void
test_next_records(void **state)
{
	struct elector e;
	struct lease_rec r = rec("other", 15, 3, "x"), out;

	elector_init(&e, "me", 15);
	/* Creating: no transition. */
	lease_next(&e, LEASE_ACQUIRE, 1, 1700000000.25, &out);
	assert_string_equal(out.holder, "me");
	assert_int_equal(out.duration_s, 15);
	assert_int_equal(out.transitions, 0);
	assert_string_equal(out.renew, "2023-11-14T22:13:20.250000Z");
	assert_string_equal(out.acquire, out.renew);
	/* Taking it from another: one more transition, acquireTime now. */
	lease_observe(&e, &r, 0);
	lease_next(&e, LEASE_ACQUIRE, 0, 1700000000.0, &out);
	assert_int_equal(out.transitions, 4);
	assert_string_equal(out.acquire, "2023-11-14T22:13:20.000000Z");
	/* Renewing: acquireTime and transitions kept. */
	r = rec("me", 15, 4, "y");
	lease_wrote(&e, &r, 1);
	assert_true(lease_is_leader(&e));
	assert_int_equal(lease_decide(&e, 1000 * S), LEASE_RENEW);
	lease_next(&e, LEASE_RENEW, 0, 1700000005.0, &out);
	assert_int_equal(out.transitions, 4);
	assert_string_equal(out.acquire, "2026-01-01T00:00:00.000000Z");
	assert_string_equal(out.renew, "2023-11-14T22:13:25.000000Z");
	/* Release: no holder, 1 s, transitions kept. */
	lease_release_rec(&e, 1700000006.0, &out);
	assert_string_equal(out.holder, "");
	assert_int_equal(out.duration_s, 1);
	assert_int_equal(out.transitions, 4);
}

/* The object: parse, and a PUT body that keeps the resourceVersion and
 * fields this tool does not know. */
static void
test_object(void **state)
{
	const char *in = "{\"apiVersion\":\"coordination.k8s.io/v1\","
	    "\"kind\":\"Lease\",\"metadata\":{\"name\":\"l\",\"namespace\":"
	    "\"n\",\"resourceVersion\":\"42\"},\"spec\":{\"holderIdentity\":"
	    "\"a\",\"leaseDurationSeconds\":15,\"leaseTransitions\":2,"
	    "\"renewTime\":\"2026-01-01T00:00:01.000000Z\","
	    "\"preferredHolder\":\"b\"}}";
	struct lease_rec r, w = rec("me", 15, 3, "2026-01-01T00:00:05.000000Z");
	cJSON *o, *back;
	char *body;

	o = cJSON_Parse(in);
	assert_non_null(o);
	assert_int_equal(lease_parse(o, &r), RS_OK);
	assert_string_equal(r.holder, "a");
	assert_int_equal(r.duration_s, 15);
	assert_int_equal(r.transitions, 2);
	assert_string_equal(r.acquire, "");
	assert_string_equal(r.renew, "2026-01-01T00:00:01.000000Z");
	body = lease_body(o, "n", "l", &w);
	assert_non_null(body);
	back = cJSON_Parse(body);
	assert_string_equal(rs_json_str(back, "metadata", "resourceVersion",
	    (char *)NULL), "42");
	assert_string_equal(rs_json_str(back, "spec", "preferredHolder",
	    (char *)NULL), "b");
	assert_string_equal(rs_json_str(back, "spec", "holderIdentity",
	    (char *)NULL), "me");
	assert_int_equal(rs_json_int(back, 0, "spec", "leaseTransitions",
	    (char *)NULL), 3);
	cJSON_free(body);
	cJSON_Delete(back);
	/* A new Lease carries no resourceVersion. */
	body = lease_body(NULL, "n", "l", &w);
	back = cJSON_Parse(body);
	assert_null(rs_json_get(back, "metadata", "resourceVersion",
	    (char *)NULL));
	assert_string_equal(rs_json_str(back, "kind", (char *)NULL), "Lease");
	cJSON_free(body);
	cJSON_Delete(back);
	cJSON_Delete(o);
	o = cJSON_Parse("{\"kind\":\"Pod\"}");
	assert_int_equal(lease_parse(o, &r), RS_EPARSE);
	cJSON_Delete(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_then_acquire),
		cmocka_unit_test(test_free_and_released),
		cmocka_unit_test(test_next_records),
		cmocka_unit_test(test_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
