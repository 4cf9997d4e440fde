/* resourceversion.h: resource versions compared as the API server's
 * clients may (apimachinery's resourceversion.CompareResourceVersion). */
#ifndef RS_RESOURCEVERSION_H
#define RS_RESOURCEVERSION_H

#include "code.h"

/* *cmp < 0, 0 or > 0 as a is older, the same or newer than b. RS_EPARSE
 * when either is not well formed: a decimal number without leading zero. */
rs_code rs_rv_compare(const char *a, const char *b, int *cmp);

#endif
