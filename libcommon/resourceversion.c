/* resourceversion.c: comparing resource versions. They are opaque to
 * clients in general, but etcd-backed ones are decimal revisions, which
 * upstream's controllers compare; anything else does not compare. */
#include <string.h>

#include "resourceversion.h"

static int
well_formed(const char *s, size_t *len)
{
	size_t i;

	if (s == NULL || s[0] == '\0' || s[0] == '0')
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	*len = i;
	return 1;
}

rs_code
rs_rv_compare(const char *a, const char *b, int *cmp)
{
	size_t la, lb;
	int c;

	*cmp = 0;
	if (!well_formed(a, &la) || !well_formed(b, &lb))
		return RS_EPARSE;
	if (la != lb) {
		*cmp = la < lb ? -1 : 1;
		return RS_OK;
	}
	c = memcmp(a, b, la);
	*cmp = (c > 0) - (c < 0);
	return RS_OK;
}
