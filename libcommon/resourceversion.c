#include <string.h>

#include "resourceversion.h"

int
rs_rv_well_formed(const char *rv)
{
	const char *p;

	if (rv == NULL || rv[0] < '1' || rv[0] > '9')
		return 0;
	for (p = rv + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

/* Well-formed numbers have no leading zero, so the longer is the greater
 * and, at equal lengths, byte order is numeric order: no length limit,
 * no conversion that could overflow. */
rs_code
rs_rv_compare(const char *a, const char *b, int *cmp)
{
	size_t la, lb;
	int c;

	if (!rs_rv_well_formed(a) || !rs_rv_well_formed(b))
		return RS_EPARSE;
	la = strlen(a);
	lb = strlen(b);
	if (la != lb) {
		*cmp = la < lb ? -1 : 1;
		return RS_OK;
	}
	c = memcmp(a, b, la);
	*cmp = (c > 0) - (c < 0);
	return RS_OK;
}
