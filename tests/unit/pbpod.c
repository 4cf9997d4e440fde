/* Unit tests of the protobuf reader (libcommon/protobuf.c) and of the pod
 * it reads as JSON (bin/rs-watch/pbpod.c), on messages built here field by
 * field: varints up to ten bytes and no more, lengths past the end, groups
 * and field 0 refused; the envelope; a pod with every field printed, each
 * as the server's JSON has it (empty strings left out where JSON omits
 * them, the zero time null, strings escaped, bad UTF-8 as U+FFFD, the last
 * of a repeated scalar); trimmed, of managedFields only the entries that
 * may own the owners (and those whose escapes might spell them); every
 * cut of a pod either refused or printed as valid JSON; any time printed
 * as Go prints it, none refused; a fieldsV1 too deep for the scanner left
 * out; a Status read from protobuf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../bin/rs-watch/linebuf.c"
#include "../../bin/rs-watch/pbpod.c"
#include "kube.h"

/* A message being built. */
struct msg {
	unsigned char b[8192];
	size_t n;
};

static void
put_varint(struct msg *m, uint64_t v)
{
	do {
		m->b[m->n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void
vfield(struct msg *m, uint32_t num, uint64_t v)
{
	put_varint(m, (uint64_t)num << 3 | RS_PB_VARINT);
	put_varint(m, v);
}

static void
bfield(struct msg *m, uint32_t num, const void *p, size_t len)
{
	put_varint(m, (uint64_t)num << 3 | RS_PB_BYTES);
	put_varint(m, len);
	memcpy(m->b + m->n, p, len);
	m->n += len;
}

static void
sfield(struct msg *m, uint32_t num, const char *s)
{
	bfield(m, num, s, strlen(s));
}

static void
mfield(struct msg *m, uint32_t num, const struct msg *sub)
{
	bfield(m, num, sub->b, sub->n);
}

static struct rs_pbspan
span(const struct msg *m)
{
	struct rs_pbspan s = { m->b, m->n };

	return s;
}

static void
varints_and_refusals(void **state)
{
	static const unsigned char max[] = { 0x08, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	static const unsigned char over[] = { 0x08, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
	static const unsigned char eleven[] = { 0x08, 0x80, 0x80, 0x80, 0x80,
	    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	static const unsigned char past[] = { 0x0a, 0x05, 'a', 'b' };
	static const unsigned char group[] = { 0x0b, 0x0c };
	static const unsigned char zero[] = { 0x00, 0x01 };
	static const unsigned char cut[] = { 0x08, 0x80 };
	struct rs_pbspan s;
	struct rs_pbiter it;
	struct rs_pbfield f;

	(void)state;
	s.p = max; s.len = sizeof max;
	rs_pb_iter(&it, s);
	assert_int_equal(rs_pb_next(&it, &f), RS_OK);
	assert_int_equal(f.num, 1);
	assert_true(f.v == UINT64_MAX);
	assert_int_equal(rs_pb_next(&it, &f), RS_EEOF);
#define REFUSED(a) do { s.p = a; s.len = sizeof a; rs_pb_iter(&it, s); \
	assert_int_equal(rs_pb_next(&it, &f), RS_EPARSE); } while (0)
	REFUSED(over);
	REFUSED(eleven);
	REFUSED(past);
	REFUSED(group);
	REFUSED(zero);
	REFUSED(cut);
}

static void
envelope(void **state)
{
	struct msg tm = {0}, u = {0}, body = {0};
	struct rs_pbunknown un;
	struct rs_pbspan s;

	(void)state;
	sfield(&tm, 1, "v1");
	sfield(&tm, 2, "Pod");
	mfield(&u, 1, &tm);
	bfield(&u, 2, "\x0a\x00", 2);
	sfield(&u, 3, "");
	sfield(&u, 4, "");
	memcpy(body.b, "k8s", 4);
	memcpy(body.b + 4, u.b, u.n);
	body.n = 4 + u.n;
	assert_int_equal(rs_pb_unknown(span(&body), &un), RS_OK);
	assert_true(rs_pb_eq(un.api_version, "v1"));
	assert_true(rs_pb_eq(un.kind, "Pod"));
	assert_int_equal(un.raw.len, 2);
	/* no magic */
	s.p = u.b; s.len = u.n;
	assert_int_equal(rs_pb_unknown(s, &un), RS_EPARSE);
	/* a content encoding */
	sfield(&u, 3, "gzip");
	memcpy(body.b + 4, u.b, u.n);
	body.n = 4 + u.n;
	assert_int_equal(rs_pb_unknown(span(&body), &un), RS_EPARSE);
}

static void
timestamp_msg(struct msg *t, int64_t sec)
{
	memset(t, 0, sizeof *t);
	vfield(t, 1, (uint64_t)sec);
	vfield(t, 2, 0);
}

/* A pod with something in every field pbpod prints. */
static void
rich_pod(struct msg *pod)
{
	struct msg md = {0}, e = {0}, ref = {0}, mf = {0}, fv = {0}, t = {0};
	struct msg spec = {0}, ic = {0}, st = {0}, c = {0}, cs = {0};

	sfield(&md, 1, "p1");
	sfield(&md, 2, "");             /* generateName: empty, left out */
	sfield(&md, 3, "ns");
	sfield(&md, 4, "");
	sfield(&md, 5, "u-1");
	sfield(&md, 6, "10");
	vfield(&md, 7, 3);
	timestamp_msg(&t, 1795658168);  /* 2026-11-26T01:56:08Z */
	mfield(&md, 8, &t);
	timestamp_msg(&t, 1795658169);
	mfield(&md, 9, &t);
	vfield(&md, 10, 30);
	sfield(&e, 1, "app");
	sfield(&e, 2, "x");
	mfield(&md, 11, &e);
	memset(&e, 0, sizeof e);
	sfield(&e, 1, "note");
	sfield(&e, 2, "q\"\\\n\x01 \xff!");
	mfield(&md, 12, &e);
	sfield(&ref, 1, "ReplicaSet");
	sfield(&ref, 3, "rs1");
	sfield(&ref, 4, "u-0");
	sfield(&ref, 5, "apps/v1");
	vfield(&ref, 6, 1);
	mfield(&md, 13, &ref);
	sfield(&md, 14, "f/1");
	sfield(&mf, 1, "rs-apply");
	sfield(&mf, 2, "Update");
	memset(&t, 0, sizeof t);
	mfield(&mf, 4, &t);             /* the zero time */
	sfield(&fv, 1, "{\"f:metadata\":{\"f:ownerReferences\":{}}}");
	mfield(&mf, 7, &fv);
	mfield(&md, 17, &mf);
	memset(&mf, 0, sizeof mf);
	sfield(&mf, 1, "bad");
	memset(&fv, 0, sizeof fv);
	sfield(&fv, 1, "{not json");
	mfield(&mf, 7, &fv);
	mfield(&md, 17, &mf);
	mfield(pod, 1, &md);

	sfield(&c, 1, "c");
	sfield(&spec, 1, "ignored");
	mfield(&spec, 2, &c);
	sfield(&spec, 10, "n1");
	sfield(&ic, 1, "side");
	sfield(&ic, 24, "Always");
	mfield(&spec, 20, &ic);
	mfield(pod, 2, &spec);

	sfield(&st, 1, "Pending");
	sfield(&st, 1, "Running");      /* the last one counts */
	memset(&c, 0, sizeof c);
	sfield(&c, 1, "Ready");
	sfield(&c, 2, "True");
	timestamp_msg(&t, 0);
	mfield(&c, 4, &t);
	mfield(&st, 2, &c);
	sfield(&cs, 1, "c");
	vfield(&cs, 4, 1);
	vfield(&cs, 5, 7);
	mfield(&st, 8, &cs);
	memset(&cs, 0, sizeof cs);
	sfield(&cs, 1, "side");
	mfield(&st, 10, &cs);
	mfield(pod, 3, &st);
}

static const char rich_json[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\","
    "\"namespace\":\"ns\",\"uid\":\"u-1\",\"resourceVersion\":\"10\","
    "\"generation\":3,\"creationTimestamp\":\"2026-11-26T01:56:08Z\","
    "\"deletionTimestamp\":\"2026-11-26T01:56:09Z\","
    "\"deletionGracePeriodSeconds\":30,\"labels\":{\"app\":\"x\"},"
    "\"annotations\":{\"note\":\"q\\\"\\\\\\n\\u0001 \\ufffd!\"},"
    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
    "\"name\":\"rs1\",\"uid\":\"u-0\",\"controller\":true}],"
    "\"finalizers\":[\"f/1\"],\"managedFields\":[{\"manager\":\"rs-apply\","
    "\"operation\":\"Update\",\"time\":null,\"fieldsV1\":"
    "{\"f:metadata\":{\"f:ownerReferences\":{}}}},{\"manager\":\"bad\"}]},"
    "\"spec\":{\"nodeName\":\"n1\",\"initContainers\":[{\"name\":\"side\","
    "\"restartPolicy\":\"Always\"}]},\"status\":{\"phase\":\"Running\","
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
    "\"lastTransitionTime\":\"1970-01-01T00:00:00Z\"}],"
    "\"containerStatuses\":[{\"name\":\"c\",\"ready\":true,"
    "\"restartCount\":7}],\"initContainerStatuses\":[{\"name\":\"side\","
    "\"ready\":false,\"restartCount\":0}]}}";

static void
pod_as_json(void **state)
{
	struct msg pod = {0};
	struct linebuf b = {0};
	struct rs_pbspan av = { (const unsigned char *)"v1", 2 };
	struct rs_pbspan kind = { (const unsigned char *)"Pod", 3 };
	struct rs_jspan v;

	(void)state;
	rich_pod(&pod);
	assert_int_equal(pbpod_json(&b, span(&pod), av, kind, 0), RS_OK);
	assert_int_equal(rs_jscan_doc(b.p, b.len, &v, NULL), RS_OK);
	assert_int_equal(b.len, strlen(rich_json));
	assert_memory_equal(b.p, rich_json, b.len);
	linebuf_free(&b);
}

/* The JSON of pod, without apiVersion and kind, checked as strict JSON;
 * the caller frees it. */
static char *
pod_json(const struct msg *pod, int trim)
{
	struct linebuf b = {0};
	struct rs_pbspan none = { NULL, 0 };
	struct rs_jspan v;
	char *text;

	assert_int_equal(pbpod_json(&b, span(pod), none, none, trim), RS_OK);
	assert_int_equal(rs_jscan_doc(b.p, b.len, &v, NULL), RS_OK);
	text = strndup(b.p, b.len);
	linebuf_free(&b);
	return text;
}

/* Trimmed: of managedFields, the entries that may own the owners, with
 * their manager and fieldsV1; the rest is the same. */
static void
pod_trimmed(void **state)
{
	static const char want[] = "\"managedFields\":[{\"manager\":"
	    "\"rs-apply\",\"fieldsV1\":{\"f:metadata\":"
	    "{\"f:ownerReferences\":{}}}}]},\"spec\"";
	struct msg pod = {0};
	char *text;

	(void)state;
	rich_pod(&pod);
	text = pod_json(&pod, 1);
	assert_non_null(strstr(text, want));
	assert_null(strstr(text, "\"bad\""));
	assert_null(strstr(text, "Update"));
	assert_non_null(strstr(text, "\"restartCount\":7"));
	free(text);
}

/* Every prefix of a pod: refused, or JSON (a cut between fields is a
 * shorter pod). Nothing is read past the cut (ASan builds say so). */
static void
every_cut(void **state)
{
	struct msg pod = {0};
	struct linebuf b = {0};
	struct rs_pbspan none = { NULL, 0 }, s;
	struct rs_jspan v;
	unsigned char *copy;
	rs_code rc;
	int ok = 0;

	(void)state;
	rich_pod(&pod);
	for (size_t n = 0; n < pod.n; n++) {
		copy = malloc(n ? n : 1);
		memcpy(copy, pod.b, n);
		s.p = copy;
		s.len = n;
		for (int trim = 0; trim < 2; trim++) {
			b.len = 0;
			rc = pbpod_json(&b, s, none, none, trim);
			assert_true(rc == RS_OK || rc == RS_EPARSE);
			if (rc == RS_OK) {
				assert_int_equal(rs_jscan_doc(b.p, b.len, &v,
				    NULL), RS_OK);
				ok++;
			}
		}
		free(copy);
	}
	assert_true(ok >= 2);   /* the empty pod, and whole messages */
	linebuf_free(&b);
}

/* The JSON of a pod whose only field is metadata md. */
static char *
meta_json(const struct msg *md, int trim)
{
	struct msg pod = {0};

	mfield(&pod, 1, md);
	return pod_json(&pod, trim);
}

/* Times as Go writes any: years past 9999 and before 1, Go's zero as
 * null, the extremes of int64 without failing. */
static void
any_time(void **state)
{
	static const struct { int64_t sec; const char *want; } cases[] = {
		{ 0, "\"1970-01-01T00:00:00Z\"" },
		{ -1, "\"1969-12-31T23:59:59Z\"" },
		{ 951782400, "\"2000-02-29T00:00:00Z\"" },
		{ 253402300800LL, "\"10000-01-01T00:00:00Z\"" },
		{ -62135596800LL, "null" },
		{ -62135596801LL, "\"0000-12-31T23:59:59Z\"" },
		{ -62198755200LL, "\"-0001-01-01T00:00:00Z\"" },
		{ INT64_MAX, NULL },
		{ INT64_MIN, NULL },
	};
	char want[96], *text;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct msg md = {0}, t = {0};

		timestamp_msg(&t, cases[i].sec);
		mfield(&md, 8, &t);
		text = meta_json(&md, 0);
		if (cases[i].want) {
			snprintf(want, sizeof want, "\"creationTimestamp\":%s}",
			    cases[i].want);
			assert_non_null(strstr(text, want));
		}
		free(text);
	}
}

/* fieldsV1 nested past what the scanner takes, once in the pod, is left
 * out; one that may spell f:ownerReferences with an escape is kept for
 * the scanner to judge. */
static void
fields_v1_depth_and_escapes(void **state)
{
	static char deep[2 * RS_JSCAN_DEPTH + 1];
	struct msg md = {0}, mf = {0}, fv = {0};
	char *text;

	(void)state;
	for (int i = 0; i < RS_JSCAN_DEPTH - 2; i++) {
		deep[i] = '[';
		deep[RS_JSCAN_DEPTH - 2 + i] = ']';
	}
	sfield(&md, 1, "p");
	sfield(&mf, 1, "deep");
	sfield(&fv, 1, deep);
	mfield(&mf, 7, &fv);
	mfield(&md, 17, &mf);
	memset(&mf, 0, sizeof mf);
	memset(&fv, 0, sizeof fv);
	sfield(&mf, 1, "esc");
	sfield(&fv, 1, "{\"f:metadata\":{\"f:owner\\u0052eferences\":{}}}");
	mfield(&mf, 7, &fv);
	mfield(&md, 17, &mf);
	text = meta_json(&md, 0);
	assert_non_null(strstr(text, "{\"manager\":\"deep\"}"));
	free(text);
	text = meta_json(&md, 1);
	assert_null(strstr(text, "\"deep\""));
	assert_non_null(strstr(text, "{\"manager\":\"esc\",\"fieldsV1\":"));
	free(text);
}

static void
status_from_pb(void **state)
{
	struct msg st = {0}, d = {0}, cause = {0};
	struct rs_kstatus ks;

	(void)state;
	memset(&ks, 0, sizeof ks);
	sfield(&st, 2, "Failure");
	sfield(&st, 3, "too old resource version: 1 (200)");
	sfield(&st, 4, "Expired");
	sfield(&cause, 1, "FieldValueInvalid");
	sfield(&cause, 3, "spec");
	mfield(&d, 4, &cause);
	vfield(&d, 5, 3);
	mfield(&st, 5, &d);
	vfield(&st, 6, 410);
	assert_int_equal(rs_kstatus_from_pb(&ks, 0, span(&st)), RS_OK);
	assert_int_equal(ks.code, 410);
	assert_string_equal(ks.reason, "Expired");
	assert_string_equal(ks.message, "too old resource version: 1 (200)");
	assert_int_equal(ks.retry_after, 3);
	assert_int_equal(cJSON_GetArraySize(ks.causes), 1);
	rs_kstatus_clear(&ks);
	/* no reason: from the code */
	memset(&st, 0, sizeof st);
	vfield(&st, 6, 404);
	assert_int_equal(rs_kstatus_from_pb(&ks, 0, span(&st)), RS_OK);
	assert_string_equal(ks.reason, "NotFound");
	rs_kstatus_clear(&ks);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(varints_and_refusals),
		cmocka_unit_test(envelope),
		cmocka_unit_test(pod_as_json),
		cmocka_unit_test(pod_trimmed),
		cmocka_unit_test(every_cut),
		cmocka_unit_test(any_time),
		cmocka_unit_test(fields_v1_depth_and_escapes),
		cmocka_unit_test(status_from_pb),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
