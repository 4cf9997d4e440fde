#include <stdarg.h>
#include <string.h>

#include "json.h"

rs_code
rs_json_parse(const char *buf, size_t len, cJSON **out, size_t *where)
{
	const char *end = NULL;
	cJSON *o;

	*out = NULL;
	o = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
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
	return cJSON_IsNumber(o) ? (long long)o->valuedouble : dflt;
}

char *
rs_json_print(const cJSON *o)
{
	return cJSON_PrintUnformatted(o);
}
