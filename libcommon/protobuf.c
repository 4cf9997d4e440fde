/* protobuf.c: the wire format (varints, tags, lengths) and Kubernetes'
 * envelope around it. */
#include <string.h>

#include "protobuf.h"

/* "k8s" and a NUL: what the server writes before an object in protobuf. */
static const unsigned char pb_magic[4] = { 'k', '8', 's', 0 };

void
rs_pb_iter(struct rs_pbiter *it, struct rs_pbspan msg)
{
	it->p = msg.p;
	it->end = msg.p ? msg.p + msg.len : msg.p;
}

/* At most ten bytes; the tenth may carry one bit only. */
static rs_code
varint(struct rs_pbiter *it, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (it->p == it->end)
			return RS_EPARSE;
		unsigned char c = *it->p++;

		if (shift == 63 && c > 1)
			return RS_EPARSE;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (c < 0x80) {
			*v = x;
			return RS_OK;
		}
	}
	return RS_EPARSE;
}

static rs_code
fixed(struct rs_pbiter *it, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	if ((size_t)(it->end - it->p) < n)
		return RS_EPARSE;
	for (size_t i = 0; i < n; i++)
		x |= (uint64_t)it->p[i] << (8 * i);
	it->p += n;
	*v = x;
	return RS_OK;
}

rs_code
rs_pb_next(struct rs_pbiter *it, struct rs_pbfield *f)
{
	uint64_t tag, len;
	rs_code rc;

	if (it->p == it->end)
		return RS_EEOF;
	if ((rc = varint(it, &tag)) != RS_OK)
		return rc;
	if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
		return RS_EPARSE;
	f->num = (uint32_t)(tag >> 3);
	f->wire = (enum rs_pbwire)(tag & 7);
	f->v = 0;
	f->s.p = NULL;
	f->s.len = 0;
	switch (tag & 7) {
	case RS_PB_VARINT:
		return varint(it, &f->v);
	case RS_PB_FIXED64:
		return fixed(it, 8, &f->v);
	case RS_PB_FIXED32:
		return fixed(it, 4, &f->v);
	case RS_PB_BYTES:
		if ((rc = varint(it, &len)) != RS_OK)
			return rc;
		if (len > (uint64_t)(it->end - it->p))
			return RS_EPARSE;
		f->s.p = it->p;
		f->s.len = (size_t)len;
		it->p += len;
		return RS_OK;
	default:
		/* groups (3, 4) are gone from every schema the server has */
		return RS_EPARSE;
	}
}

rs_code
rs_pb_pick(struct rs_pbspan msg, const uint32_t *nums, struct rs_pbspan *out,
    size_t n)
{
	struct rs_pbiter it;
	struct rs_pbfield f;
	rs_code rc;

	memset(out, 0, n * sizeof *out);
	rs_pb_iter(&it, msg);
	while ((rc = rs_pb_next(&it, &f)) == RS_OK)
		for (size_t i = 0; i < n; i++)
			if (f.wire == RS_PB_BYTES && f.num == nums[i])
				out[i] = f.s;
	return rc == RS_EEOF ? RS_OK : rc;
}

rs_code
rs_pb_unknown(struct rs_pbspan body, struct rs_pbunknown *u)
{
	static const uint32_t unknown[] = { 1, 2, 3 }, type_meta[] = { 1, 2 };
	struct rs_pbspan rest, f[3], tm[2];
	rs_code rc;

	memset(u, 0, sizeof *u);
	if (body.len < sizeof pb_magic ||
	    memcmp(body.p, pb_magic, sizeof pb_magic) != 0)
		return RS_EPARSE;
	rest.p = body.p + sizeof pb_magic;
	rest.len = body.len - sizeof pb_magic;
	if ((rc = rs_pb_pick(rest, unknown, f, 3)) != RS_OK)
		return rc;
	if (f[2].len > 0)
		return RS_EPARSE;       /* contentEncoding: none known */
	/* a typeMeta cut short still names what it had before the cut */
	rs_pb_pick(f[0], type_meta, tm, 2);
	u->api_version = tm[0];
	u->kind = tm[1];
	u->raw = f[1];
	return RS_OK;
}

int
rs_pb_eq(struct rs_pbspan s, const char *lit)
{
	size_t n = strlen(lit);

	return s.len == n && memcmp(s.p, lit, n) == 0;
}
