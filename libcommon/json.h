/* json.h: JSON over cJSON, and the ownership rule every module follows.
 *
 * Ownership rule (one rule, everywhere):
 *  - A function that returns cJSON * (or fills a cJSON ** out-parameter)
 *    hands the caller a tree it owns and must cJSON_Delete.
 *  - A function that takes const cJSON * borrows it for the duration of the
 *    call and keeps no pointer into it.
 *  - A function that takes cJSON * named "take" in its prototype consumes
 *    it: on success and on failure alike the callee owns it afterwards.
 *  - Strings returned by rs_json_str point into the tree they came from and
 *    live as long as that tree; copy them to keep them.
 *  - Text from cJSON_Print* is freed with cJSON_free.
 */
#ifndef RS_JSON_H
#define RS_JSON_H

#include <stddef.h>
#include <cJSON.h>

#include "code.h"

/* Parses exactly buf[0..len); nesting beyond cJSON's limit (1000) and
 * trailing garbage are errors. On RS_EPARSE, *where (if not NULL) is the
 * byte offset of the error; RS_ENOMEM when an allocation failed. */
rs_code rs_json_parse(const char *buf, size_t len, cJSON **out, size_t *where);

/* The small JSON file at path (at most 64 KiB, not through a symlink),
 * parsed: RS_ENOTFOUND when it cannot be opened, RS_EIO on a failed read,
 * RS_EPARSE when it is not JSON (an empty file included). */
rs_code rs_json_load(const char *path, cJSON **out);

/* Walks object keys; the path ends with NULL. NULL if any step is missing. */
const cJSON *rs_json_get(const cJSON *o, ...) __attribute__((sentinel));
/* The string at the path, or NULL if absent or not a string. */
const char *rs_json_str(const cJSON *o, ...) __attribute__((sentinel));
/* The number at the path as long long (clamped to its range), or dflt
 * when absent, not a number, or NaN. */
long long rs_json_int(const cJSON *o, long long dflt, ...)
    __attribute__((sentinel));
/* A JSON number as rs_json_int reads it: dflt for NaN, clamped to the
 * range of long long (1e400 is inf), else cut toward zero. */
long long rs_json_ll(double d, long long dflt);

/* Compact text of o, malloc'd (free with cJSON_free); NULL on ENOMEM. */
char *rs_json_print(const cJSON *o);

#endif
