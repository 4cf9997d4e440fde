#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flag.h"
#include "log.h"

static const char *flag_usage = "";

void
rs_flag_set_usage(const char *usage)
{
	flag_usage = usage;
}

void
rs_flag_fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: fatal: %s\n%sTry '%s --help' for more information.\n",
	    rs_log_prog(), msg, flag_usage, rs_log_prog());
	fflush(NULL);
	_exit(100);
}

long
rs_flag_long(const char *s, long lo, long hi, const char *flag)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		rs_flag_fail("invalid value for %s: '%s' (want %ld to %ld)", flag,
		    s, lo, hi);
	return v;
}

double
rs_flag_double(const char *s, double lo, double hi, const char *flag)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		rs_flag_fail("invalid value for %s: '%s' (want %g to %g)", flag, s,
		    lo, hi);
	return v;
}

static const struct unit {
	const char *name;
	double ns;
} units[] = {   /* "ms" before "m" */
	{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	{ "m", 60e9 }, { "h", 3600e9 },
};

int
rs_duration_parse(const char *s, int64_t *ns)
{
	double total = 0, v;
	char *end;
	size_t i;

	if (s == NULL || *s == '\0')
		return -1;
	if (strcmp(s, "0") == 0)   /* as Go: the only number without a unit */
		goto done;
	while (*s) {
		if (!((*s >= '0' && *s <= '9') || *s == '.'))
			return -1;
		v = strtod(s, &end);
		if (end == s)
			return -1;
		for (i = 0; i < sizeof units / sizeof units[0]; i++)
			if (strncmp(end, units[i].name, strlen(units[i].name)) == 0)
				break;
		if (i == sizeof units / sizeof units[0])
			return -1;
		total += v * units[i].ns;
		s = end + strlen(units[i].name);
	}
done:
	if (!isfinite(total) || total < 0 || total > 9e18)
		return -1;
	*ns = (int64_t)total;
	return 0;
}

int64_t
rs_flag_duration(const char *s, const char *flag)
{
	int64_t ns;

	if (rs_duration_parse(s, &ns) < 0)
		rs_flag_fail("invalid duration for %s: '%s' (examples: 800ms, 30s, 2m)",
		    flag, s);
	return ns;
}

long
rs_flag_batch_ms(const char *s, const char *flag)
{
	long ms = rs_flag_duration(s, flag) / 1000000;

	if (ms > 1000)
		rs_flag_fail("%s must be at most 1s", flag);
	return ms;
}

void
rs_flag_log_format(const char *s)
{
	if (rs_log_set_format(s) < 0)
		rs_flag_fail("unknown log format '%s' (text or json)", s);
}
