/* protobuf.h: the protobuf wire format, read in place; it builds nothing.
 *
 * Kubernetes serves its built-in types in protobuf as well as JSON, at a
 * fraction of the server's CPU (kube-controller-manager's informers use
 * it). A reader of a few fields needs no schema and no generated code:
 * it walks a message's fields by number and takes the ones it knows,
 * as rs_jscan does for JSON. Every read is bounded by its span: hostile
 * input is refused (RS_EPARSE), never read past. */
#ifndef RS_PROTOBUF_H
#define RS_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#include "code.h"

enum rs_pbwire {
	RS_PB_VARINT = 0,
	RS_PB_FIXED64 = 1,
	RS_PB_BYTES = 2,     /* strings, bytes, messages, packed lists */
	RS_PB_FIXED32 = 5,
};

struct rs_pbspan {
	const unsigned char *p;
	size_t len;
};

/* One field: its number and wire type; a varint's or fixed value in v,
 * a length-delimited one's bytes in s. */
struct rs_pbfield {
	uint32_t num;
	enum rs_pbwire wire;
	uint64_t v;
	struct rs_pbspan s;
};

struct rs_pbiter {
	const unsigned char *p, *end;
};

void rs_pb_iter(struct rs_pbiter *it, struct rs_pbspan msg);
/* The next field: RS_OK, RS_EEOF after the last, RS_EPARSE when the
 * bytes are no message (a group, a length past the end, field 0). */
rs_code rs_pb_next(struct rs_pbiter *it, struct rs_pbfield *f);
/* The length-delimited fields numbered nums[0..n) of msg, the last of
 * each, into out[0..n) (empty, p NULL, when absent): RS_OK, or RS_EPARSE
 * when msg is no message (out then holds what came before the fault). */
rs_code rs_pb_pick(struct rs_pbspan msg, const uint32_t *nums,
    struct rs_pbspan *out, size_t n);

/* A Kubernetes object as the server sends it: "k8s\0", then a
 * runtime.Unknown holding its apiVersion and kind (typeMeta) and the
 * object's own message (raw). RS_EPARSE without the magic, or with a
 * content encoding (none is defined). */
struct rs_pbunknown {
	struct rs_pbspan api_version, kind, raw;
};
rs_code rs_pb_unknown(struct rs_pbspan body, struct rs_pbunknown *u);

/* Whether s holds exactly the string lit. */
int rs_pb_eq(struct rs_pbspan s, const char *lit);

#endif
