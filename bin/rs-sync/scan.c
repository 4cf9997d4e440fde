#include <stdlib.h>

#include "json.h"
#include "log.h"
#include "scan.h"

static struct {
	char *buf;
	size_t len, cap;
} scratch;

rs_code
scan_reset(size_t need)
{
	char *b;

	scratch.len = 0;
	if (need <= scratch.cap)
		return RS_OK;
	if ((b = realloc(scratch.buf, need)) == NULL)
		return RS_ENOMEM;
	scratch.buf = b;
	scratch.cap = need;
	return RS_OK;
}

/* A string read twice could outgrow the scratch: a field then read as
 * absent could make an owned pod an orphan, so that is fatal. */
const char *
scan_str(const char *buf, struct rs_jspan v)
{
	char *out = scratch.buf + scratch.len;
	size_t n;

	if (rs_jscan_type(buf, v) != RS_JSTRING)
		return NULL;
	if (rs_jscan_unescape(buf, v, out, scratch.cap - scratch.len, &n) !=
	    RS_OK)
		rs_fatal(111, "unable to read an object: its strings outgrew "
		    "the decode buffer (a bug)");
	scratch.len += n + 1;
	return out;
}

long long
scan_int(const char *buf, struct rs_jspan v, long long dflt)
{
	double d;

	if (rs_jscan_double(buf, v, &d) != RS_OK)
		return dflt;
	return rs_json_ll(d, dflt);
}

int
scan_values(struct rs_jiter *it, const char *buf, struct rs_jspan v)
{
	enum rs_jtype t = rs_jscan_type(buf, v);

	return (t == RS_JOBJECT || t == RS_JARRAY) &&
	    rs_jscan_iter(it, buf, v) == RS_OK;
}

enum { R_CONTROLLER, R_KIND, R_NAME, R_UID, R_N };
static const char *const ref_names[R_N] = { "controller", "kind", "name",
    "uid" };

void
scan_controller_ref(const char *buf, struct rs_jspan owners, const char *r[3])
{
	struct rs_jspan ref, f[R_N];
	struct rs_jiter it;

	r[0] = r[1] = r[2] = NULL;
	if (!scan_values(&it, buf, owners))
		return;
	while (rs_jscan_value_next(&it, &ref) == RS_OK) {
		if (rs_jscan_pick(buf, ref, ref_names, f, R_N) != RS_OK ||
		    rs_jscan_type(buf, f[R_CONTROLLER]) != RS_JTRUE)
			continue;
		r[0] = scan_str(buf, f[R_KIND]);
		r[1] = scan_str(buf, f[R_NAME]);
		r[2] = scan_str(buf, f[R_UID]);
		return;
	}
}
