/* scan.h: reading an object of the API from its JSON text in place, as
 * pod.c and cache.c do, the text validated once by rs_jscan (jscan.h).
 *
 * What they read is what a tree gave: the first member of a name; a path
 * whose step is no object is absent; a list walked over the values of an
 * object too (cJSON_ArrayForEach); a string where a string is wanted,
 * else absent; numbers as doubles. But for \u0000: a tree cut a string
 * (and a member's name) at it, and one is now compared whole (as Go
 * compares it), though kept cut (a C string). The API server admits no
 * NUL in the names and fields read. */
#ifndef RS_SYNC_SCAN_H
#define RS_SYNC_SCAN_H

#include <stddef.h>

#include "code.h"
#include "jscan.h"

/* Makes the strings of one object room: a string is never longer than
 * its span, so a buffer as long as the object holds all that are read
 * once each. One buffer, reused: rs-sync decodes one object at a time. */
rs_code scan_reset(size_t need);
/* The string v unescaped into that buffer, NULL when v is no string. */
const char *scan_str(const char *buf, struct rs_jspan v);
/* rs_json_int's reading of v: dflt unless a number, clamped to long long. */
long long scan_int(const char *buf, struct rs_jspan v, long long dflt);
/* Walks the values of v, a list or an object (as cJSON_ArrayForEach):
 * 0 when v is neither. */
int scan_values(struct rs_jiter *it, const char *buf, struct rs_jspan v);
/* metav1.GetControllerOf over owners (metadata.ownerReferences): the
 * first reference with controller: true. Its kind, name and UID in r,
 * NULL where absent. */
void scan_controller_ref(const char *buf, struct rs_jspan owners,
    const char *r[3]);

#endif
