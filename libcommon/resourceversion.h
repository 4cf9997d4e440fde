/* resourceversion.h: resourceVersions as the API server writes them, and
 * their order.
 *
 * A resourceVersion is opaque to clients, with one exception that the
 * stale-cache guard (KEP-5647) relies on: apimachinery's
 * CompareResourceVersion orders those that are well-formed, decimal
 * integers without sign or leading zero ("0" included, which is not one).
 * Any other text compares to nothing: the caller decides what an
 * unordered pair means (upstream's guard then skips its check). */
#ifndef RS_RESOURCEVERSION_H
#define RS_RESOURCEVERSION_H

#include "code.h"

/* Room for the longest resourceVersion the tools carry, NUL included:
 * rs-watch refuses an object or list whose resourceVersion is longer. */
#define RS_RV_MAX 256

/* Whether rv is well-formed: non-empty, ASCII digits only, no leading
 * zero. */
int rs_rv_well_formed(const char *rv);

/* Orders a and b: *cmp < 0, 0 or > 0 as a is older than, the same as, or
 * newer than b. RS_EPARSE (*cmp untouched) when either is not
 * well-formed. */
rs_code rs_rv_compare(const char *a, const char *b, int *cmp);

#endif
