/* clock.h: time as the controller needs it. Durations come from the
 * monotonic clock; Kubernetes timestamps are RFC 3339 wall-clock seconds. */
#ifndef RS_CLOCK_H
#define RS_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds. */
int64_t rs_mono_ns(void);
/* Wall clock, seconds since the epoch, with fraction. */
double rs_wall_now(void);
/* Parses "2026-11-21T19:30:00Z" (optionally with fraction or offset);
 * returns 0 and sets *t, or -1. */
int rs_parse_rfc3339(const char *s, double *t);
/* Formats t as "2026-11-21T19:30:00Z" (buf at least 32 bytes). */
void rs_format_rfc3339(double t, char *buf);
/* Same with microseconds: "2026-11-21T19:30:00.123456Z" (MicroTime). */
void rs_format_rfc3339_micro(double t, char *buf);

#endif
