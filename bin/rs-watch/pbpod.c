/* pbpod.c: the fields of a pod that the controller reads, from protobuf
 * to JSON. Field numbers are those of k8s.io/api/core/v1 and
 * k8s.io/apimachinery/pkg/apis/meta/v1 (generated.proto): fixed for
 * good, as protobuf's compatibility rules require. A field that comes
 * twice counts as protobuf has a scalar's: the last one, whole (an
 * embedded message's are not merged, and a map's keys not made one: the
 * server writes neither twice). */
#include <stdio.h>
#include <string.h>

#include "jscan.h"
#include "pbpod.h"
#include "utf8.h"

/* The JSON being written; the first failure sticks and ends every write
 * after it. */
struct jw {
	struct linebuf *b;
	rs_code rc;
	int first;               /* no member yet in the innermost container */
	int trim;                /* managedFields will be cut: only what says
	                            who set the owners is needed of it */
};

static void
raw(struct jw *w, const char *s, size_t n)
{
	if (w->rc == RS_OK && (w->rc = linebuf_reserve(w->b, n)) == RS_OK)
		linebuf_put(w->b, s, n);
}

/* As Go's encoder writes a string: each byte that is not valid UTF-8
 * becomes U+FFFD, so that the text is JSON that a strict reader takes. */
static void
str(struct jw *w, struct rs_pbspan s)
{
	const unsigned char *p = s.p, *end = s.p + s.len;
	size_t n, run;

	raw(w, "\"", 1);
	while (w->rc == RS_OK && p < end) {
		for (run = 0; p + run < end; run += n)
			if ((n = rs_utf8_seq(p + run, end - p - run)) == 0)
				break;
		if (run > 0 && (w->rc = linebuf_reserve(w->b,
		    linebuf_quoted_max(run))) == RS_OK)
			linebuf_put_escaped(w->b, (const char *)p, run);
		p += run;
		if (p < end) {
			raw(w, "\\ufffd", 6);
			p++;
		}
	}
	raw(w, "\"", 1);
}

/* A member or an element of a list: its comma. */
static void
elem(struct jw *w)
{
	if (!w->first)
		raw(w, ",", 1);
	w->first = 0;
}

static void
key(struct jw *w, const char *name)
{
	elem(w);
	raw(w, "\"", 1);
	raw(w, name, strlen(name));
	raw(w, "\":", 2);
}

/* Opens a container; what it returns goes to close_. */
static int
open_(struct jw *w, const char *bracket)
{
	int outer = w->first;

	raw(w, bracket, 1);
	w->first = 1;
	return outer;
}

static void
close_(struct jw *w, const char *bracket, int outer)
{
	raw(w, bracket, 1);
	w->first = outer;
}

static void
num(struct jw *w, long long v)
{
	char buf[24];
	int n = snprintf(buf, sizeof buf, "%lld", v);

	raw(w, buf, (size_t)n);
}

static void
boolean(struct jw *w, uint64_t v)
{
	if (v)
		raw(w, "true", 4);
	else
		raw(w, "false", 5);
}

static void
str_member(struct jw *w, const char *name, struct rs_pbspan s)
{
	key(w, name);
	str(w, s);
}

/* A string member that JSON leaves out when empty (omitempty). */
static void
str_omitempty(struct jw *w, const char *name, struct rs_pbspan s)
{
	if (s.len > 0)
		str_member(w, name, s);
}

/* The fields numbered below FIELDS_MAX of a message, the last of each
 * number, and how many of each are length-delimited (the elements of a
 * repeated field); bad: the message does not parse. */
#define FIELDS_MAX 32
struct fields {
	struct rs_pbspan msg;
	struct rs_pbfield f[FIELDS_MAX];
	uint32_t n[FIELDS_MAX];
	uint32_t have;           /* bit n: field n came */
	int bad;
};

static void
fields_read(struct fields *fs, struct rs_pbspan m)
{
	struct rs_pbiter it;
	struct rs_pbfield f;
	rs_code rc;

	fs->msg = m;
	fs->have = 0;
	memset(fs->n, 0, sizeof fs->n);
	rs_pb_iter(&it, m);
	while ((rc = rs_pb_next(&it, &f)) == RS_OK)
		if (f.num < FIELDS_MAX) {
			fs->f[f.num] = f;
			fs->have |= 1u << f.num;
			fs->n[f.num] += f.wire == RS_PB_BYTES;
		}
	fs->bad = rc != RS_EEOF;
}

/* fields_read, a fault in m being the whole rendering's: 0 then. */
static int
read_msg(struct jw *w, struct fields *fs, struct rs_pbspan m)
{
	fields_read(fs, m);
	if (fs->bad)
		w->rc = RS_EPARSE;
	return !fs->bad;
}

/* Field n, when it came with wire type wire. */
static int
has(const struct fields *fs, uint32_t n, enum rs_pbwire wire)
{
	return (fs->have >> n & 1) && fs->f[n].wire == wire;
}

/* Field n's bytes; none (empty, not NULL: a span is never NULL). */
static struct rs_pbspan
bytes_of(const struct fields *fs, uint32_t n)
{
	static const unsigned char nothing[1];
	struct rs_pbspan none = { nothing, 0 };

	return has(fs, n, RS_PB_BYTES) ? fs->f[n].s : none;
}

static uint64_t
varint_of(const struct fields *fs, uint32_t n)
{
	return has(fs, n, RS_PB_VARINT) ? fs->f[n].v : 0;
}

/* The proleptic Gregorian date of a day counted from 1970-01-01 (Howard
 * Hinnant's civil_from_days), for any day an int64_t of seconds can
 * name: no table, no libc range. */
static void
civil(int64_t days, int64_t *y, int *m, int *d)
{
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;

	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* Seconds before the epoch of Go's zero time, 0001-01-01T00:00:00Z. */
#define GO_ZERO_TIME (-62135596800LL)

/* metav1.Time: seconds and nanos since the epoch; an empty message is
 * the zero time, as is Go's own zero, which JSON writes null. JSON has
 * seconds only, in RFC 3339 as Go formats any year: at least four
 * digits, a minus before a negative one. Any value is a time: a pod is
 * never refused for its times, as the server's JSON never is. */
static void
timestamp(struct jw *w, struct rs_pbspan m)
{
	struct fields fs;
	int64_t sec, days, rem, y;
	int mon, day, n;
	char buf[64];

	if (!read_msg(w, &fs, m))
		return;
	sec = (int64_t)varint_of(&fs, 1);
	if (m.len == 0 || (sec == GO_ZERO_TIME && (int32_t)varint_of(&fs, 2)
	    == 0)) {
		raw(w, "null", 4);
		return;
	}
	days = sec / 86400;
	rem = sec % 86400;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	civil(days, &y, &mon, &day);
	n = snprintf(buf, sizeof buf, "\"%s%04lld-%02d-%02dT%02d:%02d:%02dZ\"",
	    y < 0 ? "-" : "", (long long)(y < 0 ? -y : y), mon, day,
	    (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
	raw(w, buf, (size_t)n);
}

/* Calls fn for each field number n of m, in order. */
static void
each(struct jw *w, struct rs_pbspan m, uint32_t n,
    void (*fn)(struct jw *, struct rs_pbspan))
{
	struct rs_pbiter it;
	struct rs_pbfield f;

	rs_pb_iter(&it, m);
	while (w->rc == RS_OK && rs_pb_next(&it, &f) == RS_OK)
		if (f.num == n && f.wire == RS_PB_BYTES)
			fn(w, f.s);
}

/* name: fn(each field n) in brackets ("[]" or "{}"), left out when there
 * is none. */
static void
container(struct jw *w, const char *name, const struct fields *fs,
    uint32_t n, const char *brackets, void (*fn)(struct jw *, struct rs_pbspan))
{
	int outer;

	if (fs->n[n] == 0)
		return;
	key(w, name);
	outer = open_(w, brackets);
	each(w, fs->msg, n, fn);
	close_(w, brackets + 1, outer);
}

static void
list(struct jw *w, const char *name, const struct fields *fs, uint32_t n,
    void (*fn)(struct jw *, struct rs_pbspan))
{
	container(w, name, fs, n, "[]", fn);
}

/* A map<string,string> entry: key 1, value 2, as a member. */
static void
map_entry(struct jw *w, struct rs_pbspan m)
{
	struct fields fs;

	if (!read_msg(w, &fs, m))
		return;
	elem(w);
	str(w, bytes_of(&fs, 1));
	raw(w, ":", 1);
	str(w, bytes_of(&fs, 2));
}

static void
map(struct jw *w, const char *name, const struct fields *fs, uint32_t n)
{
	container(w, name, fs, n, "{}", map_entry);
}

static void
string_elem(struct jw *w, struct rs_pbspan s)
{
	elem(w);
	str(w, s);
}

/* Reads m into fs and opens its object: the member name, or (NULL) an
 * element of a list. 0 when m is bad. */
static int
open_msg(struct jw *w, struct fields *fs, struct rs_pbspan m,
    const char *name, int *outer)
{
	if (!read_msg(w, fs, m))
		return 0;
	if (name)
		key(w, name);
	else
		elem(w);
	*outer = open_(w, "{");
	return 1;
}

static void
owner_ref(struct jw *w, struct rs_pbspan m)
{
	struct fields fs;
	int outer;

	if (!open_msg(w, &fs, m, NULL, &outer))
		return;
	str_member(w, "apiVersion", bytes_of(&fs, 5));
	str_member(w, "kind", bytes_of(&fs, 1));
	str_member(w, "name", bytes_of(&fs, 3));
	str_member(w, "uid", bytes_of(&fs, 4));
	if (has(&fs, 6, RS_PB_VARINT)) {
		key(w, "controller");
		boolean(w, fs.f[6].v);
	}
	if (has(&fs, 7, RS_PB_VARINT)) {
		key(w, "blockOwnerDeletion");
		boolean(w, fs.f[7].v);
	}
	close_(w, "}", outer);
}

/* The containers fieldsV1 sits in: the pod, metadata, managedFields, an
 * entry. */
#define FIELDS_V1_OUTER 4

/* An entry's fieldsV1 (field 7), a message whose field 1 holds JSON as
 * bytes: that JSON, empty when there is none; bad: the message is not. */
static struct rs_pbspan
fields_v1_json(const struct fields *entry, int *bad)
{
	struct fields fv;

	fields_read(&fv, bytes_of(entry, 7));
	*bad = fv.bad;
	return bytes_of(&fv, 1);
}

/* fieldsV1 written as it is when it is JSON that leaves the pod within
 * the scanner's depth, else left out; null when empty. */
static void
fields_v1(struct jw *w, struct rs_pbspan json, int bad)
{
	struct rs_jspan v;

	if (bad || (json.len > 0 && rs_jscan_doc_within((const char *)json.p,
	    json.len, RS_JSCAN_DEPTH - FIELDS_V1_OUTER, &v, NULL) != RS_OK))
		return;
	key(w, "fieldsV1");
	if (json.len == 0)
		raw(w, "null", 4);
	else
		raw(w, (const char *)json.p + v.off, v.end - v.off);
}

/* Whether a fieldsV1 may own ownerReferences: without the name anywhere
 * in it, nor an escape that could spell it, it surely does not; whether
 * it does is the scanner's to say (event.c), as for a pod in JSON. */
static int
may_own_refs(struct rs_pbspan json)
{
	static const char name[] = "\"f:ownerReferences\"";

	return json.len > 0 && (memmem(json.p, json.len, name, sizeof name - 1)
	    || memchr(json.p, '\\', json.len));
}

/* An entry of managedFields; trimmed, only its manager and fieldsV1, and
 * only when that may own the owners: all the cut leaves of it is who set
 * them (event.h, ref_managers). */
static void
managed_entry(struct jw *w, struct rs_pbspan m)
{
	struct fields fs;
	struct rs_pbspan json;
	int outer, bad;

	if (w->trim) {
		fields_read(&fs, m);
		json = fields_v1_json(&fs, &bad);
		if (fs.bad || bad || !has(&fs, 7, RS_PB_BYTES) ||
		    !may_own_refs(json))
			return;
		elem(w);
		outer = open_(w, "{");
		str_omitempty(w, "manager", bytes_of(&fs, 1));
		fields_v1(w, json, bad);
		close_(w, "}", outer);
		return;
	}
	if (!open_msg(w, &fs, m, NULL, &outer))
		return;
	str_omitempty(w, "manager", bytes_of(&fs, 1));
	str_omitempty(w, "operation", bytes_of(&fs, 2));
	str_omitempty(w, "apiVersion", bytes_of(&fs, 3));
	if (has(&fs, 4, RS_PB_BYTES)) {
		key(w, "time");
		timestamp(w, fs.f[4].s);
	}
	str_omitempty(w, "fieldsType", bytes_of(&fs, 6));
	if (has(&fs, 7, RS_PB_BYTES)) {
		json = fields_v1_json(&fs, &bad);
		fields_v1(w, json, bad);
	}
	str_omitempty(w, "subresource", bytes_of(&fs, 8));
	close_(w, "}", outer);
}

/* ObjectMeta, whole. */
static void
metadata(struct jw *w, struct rs_pbspan m)
{
	static const char *const strs[] = { NULL, "name", "generateName",
	    "namespace", "selfLink", "uid", "resourceVersion" };
	struct fields fs;
	int outer;

	if (!open_msg(w, &fs, m, "metadata", &outer))
		return;
	for (uint32_t n = 1; n <= 6; n++)
		str_omitempty(w, strs[n], bytes_of(&fs, n));
	if (varint_of(&fs, 7) != 0) {
		key(w, "generation");
		num(w, (long long)(int64_t)varint_of(&fs, 7));
	}
	/* a struct, not a pointer: JSON always has it, null when zero */
	key(w, "creationTimestamp");
	timestamp(w, bytes_of(&fs, 8));
	if (has(&fs, 9, RS_PB_BYTES)) {
		key(w, "deletionTimestamp");
		timestamp(w, fs.f[9].s);
	}
	if (has(&fs, 10, RS_PB_VARINT)) {
		key(w, "deletionGracePeriodSeconds");
		num(w, (long long)(int64_t)fs.f[10].v);
	}
	map(w, "labels", &fs, 11);
	map(w, "annotations", &fs, 12);
	list(w, "ownerReferences", &fs, 13, owner_ref);
	list(w, "finalizers", &fs, 14, string_elem);
	list(w, "managedFields", &fs, 17, managed_entry);
	close_(w, "}", outer);
}

static void
init_container(struct jw *w, struct rs_pbspan m)
{
	struct fields fs;
	int outer;

	if (!open_msg(w, &fs, m, NULL, &outer))
		return;
	str_member(w, "name", bytes_of(&fs, 1));
	if (has(&fs, 24, RS_PB_BYTES))
		str_member(w, "restartPolicy", fs.f[24].s);
	close_(w, "}", outer);
}

static void
spec(struct jw *w, struct rs_pbspan m)
{
	struct fields fs;
	int outer;

	if (!open_msg(w, &fs, m, "spec", &outer))
		return;
	str_omitempty(w, "nodeName", bytes_of(&fs, 10));
	list(w, "initContainers", &fs, 20, init_container);
	close_(w, "}", outer);
}

static void
condition(struct jw *w, struct rs_pbspan m)
{
	struct fields fs;
	int outer;

	if (!open_msg(w, &fs, m, NULL, &outer))
		return;
	str_member(w, "type", bytes_of(&fs, 1));
	str_member(w, "status", bytes_of(&fs, 2));
	key(w, "lastTransitionTime");
	timestamp(w, bytes_of(&fs, 4));
	close_(w, "}", outer);
}

static void
container_status(struct jw *w, struct rs_pbspan m)
{
	struct fields fs;
	int outer;

	if (!open_msg(w, &fs, m, NULL, &outer))
		return;
	str_member(w, "name", bytes_of(&fs, 1));
	key(w, "ready");
	boolean(w, varint_of(&fs, 4));
	key(w, "restartCount");
	num(w, (int32_t)varint_of(&fs, 5));
	close_(w, "}", outer);
}

static void
status(struct jw *w, struct rs_pbspan m)
{
	struct fields fs;
	int outer;

	if (!open_msg(w, &fs, m, "status", &outer))
		return;
	str_omitempty(w, "phase", bytes_of(&fs, 1));
	list(w, "conditions", &fs, 2, condition);
	list(w, "containerStatuses", &fs, 8, container_status);
	list(w, "initContainerStatuses", &fs, 10, container_status);
	close_(w, "}", outer);
}

rs_code
pbpod_json(struct linebuf *b, struct rs_pbspan pod,
    struct rs_pbspan api_version, struct rs_pbspan kind, int trim)
{
	struct jw w = { b, RS_OK, 1, trim };
	struct fields fs;

	fields_read(&fs, pod);
	if (fs.bad)
		return RS_EPARSE;
	raw(&w, "{", 1);
	/* omitempty, as JSON: an empty one is added from what rs-watch knows */
	if (api_version.len > 0)
		str_member(&w, "apiVersion", api_version);
	if (kind.len > 0)
		str_member(&w, "kind", kind);
	if (has(&fs, 1, RS_PB_BYTES))
		metadata(&w, fs.f[1].s);
	if (has(&fs, 2, RS_PB_BYTES))
		spec(&w, fs.f[2].s);
	if (has(&fs, 3, RS_PB_BYTES))
		status(&w, fs.f[3].s);
	raw(&w, "}", 1);
	return w.rc;
}
