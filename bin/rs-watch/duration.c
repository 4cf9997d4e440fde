#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

static const struct unit {
	const char *name;
	double ns;
} units[] = {   /* longest names first: "ms" before "m" */
	{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	{ "m", 60e9 }, { "h", 3600e9 },
};

int
duration_parse(const char *s, int64_t *ns)
{
	double total = 0, v;
	char *end;
	size_t i;

	if (s == NULL || *s == '\0')
		return -1;
	v = strtod(s, &end);
	if (end != s && *end == '\0') {
		total = v * 1e9;
		goto done;
	}
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
