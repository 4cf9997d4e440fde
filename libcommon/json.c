#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "utf8.h"

/* JSON text is UTF-8 (RFC 8259) and cJSON passes any byte through: check
 * it here, so that a name or label of invalid bytes is bad input, not a key.
 * Returns len when valid, else the offset of the first bad byte. */
static size_t
utf8_check(const unsigned char *p, size_t len)
{
	size_t i = 0, n;

	while (i < len) {
		if ((n = rs_utf8_seq(p + i, len - i)) == 0)
			return i;
		i += n;
	}
	return len;
}

rs_code
rs_json_parse(const char *buf, size_t len, cJSON **out, size_t *where)
{
	const char *end = NULL;
	size_t bad;
	cJSON *o;

	*out = NULL;
	if ((bad = utf8_check((const unsigned char *)buf, len)) != len) {
		if (where)
			*where = bad;
		return RS_EPARSE;
	}
	/* cJSON answers NULL alike for bad text and for a failed allocation;
	 * only the latter leaves ENOMEM (malloc's), and cJSON's hooks stay
	 * malloc's own, so that its printing keeps using realloc */
	errno = 0;
	o = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (o == NULL && errno == ENOMEM) {
		if (where)
			*where = 0;
		return RS_ENOMEM;
	}
	if (o == NULL) {
		const char *e = cJSON_GetErrorPtr();

		if (where)
			*where = (e && e >= buf && e <= buf + len) ? (size_t)(e - buf) : 0;
		return RS_EPARSE;
	}
	while (end && end < buf + len && (*end == ' ' || *end == '\t' ||
	    *end == '\r' || *end == '\n' || *end == '\0'))
		end++;
	if (end && end < buf + len) {
		if (where)
			*where = end - buf;
		cJSON_Delete(o);
		return RS_EPARSE;
	}
	*out = o;
	return RS_OK;
}

static const cJSON *
json_vget(const cJSON *o, va_list ap)
{
	const char *k;

	while (o && (k = va_arg(ap, const char *)) != NULL)
		o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	return o;
}

const cJSON *
rs_json_get(const cJSON *o, ...)
{
	va_list ap;

	va_start(ap, o);
	o = json_vget(o, ap);
	va_end(ap);
	return o;
}

const char *
rs_json_str(const cJSON *o, ...)
{
	va_list ap;

	va_start(ap, o);
	o = json_vget(o, ap);
	va_end(ap);
	return cJSON_IsString(o) ? o->valuestring : NULL;
}

long long
rs_json_int(const cJSON *o, long long dflt, ...)
{
	va_list ap;

	va_start(ap, dflt);
	o = json_vget(o, ap);
	va_end(ap);
	if (!cJSON_IsNumber(o))
		return dflt;
	return rs_json_ll(o->valuedouble, dflt);
}

long long
rs_json_ll(double d, long long dflt)
{
	if (isnan(d))
		return dflt;
	/* converting a double out of range is undefined: 1e400 is inf */
	if (d >= 9223372036854775807.0)
		return LLONG_MAX;
	if (d <= -9223372036854775808.0)
		return LLONG_MIN;
	return (long long)d;
}

char *
rs_json_print(const cJSON *o)
{
	return cJSON_PrintUnformatted(o);
}

rs_code
rs_json_load(const char *path, cJSON **out)
{
	char buf[65536];
	ssize_t n;
	int fd;

	*out = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return RS_ENOTFOUND;
	n = read(fd, buf, sizeof buf);
	close(fd);
	if (n < 0)
		return RS_EIO;
	if (n == 0)
		return RS_EPARSE;
	return rs_json_parse(buf, (size_t)n, out, NULL);
}
