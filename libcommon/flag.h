/* flag.h: command-line values, read the same way by every tool. A bad
 * value is a usage error: rs_flag_fail prints "tool: fatal: why", the
 * tool's usage and a hint, and exits 100. */
#ifndef RS_FLAG_H
#define RS_FLAG_H

#include <stdint.h>

/* The usage text rs_flag_fail prints; set once at start. */
void rs_flag_set_usage(const char *usage);
void rs_flag_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/* A whole decimal number in [lo, hi]. */
long rs_flag_long(const char *s, long lo, long hi, const char *flag);
/* A decimal number in [lo, hi]. */
double rs_flag_double(const char *s, double lo, double hi, const char *flag);
/* A Go duration ("800ms", "1m30s"; a unit is required but for "0"), in ns. */
int64_t rs_flag_duration(const char *s, const char *flag);
/* A batching window (--batch): a duration of at most 1s, in ms. */
long rs_flag_batch_ms(const char *s, const char *flag);
/* "text" or "json", for --log-format. */
void rs_flag_log_format(const char *s);

/* 0 and *ns, or -1 for something that is not a duration >= 0. */
int rs_duration_parse(const char *s, int64_t *ns);

#endif
