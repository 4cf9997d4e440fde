/* clock.h: time as the controller needs it. Durations come from the
 * monotonic clock; Kubernetes timestamps are RFC 3339 wall-clock seconds. */
#ifndef RS_CLOCK_H
#define RS_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds. */
int64_t rs_mono_ns(void);
/* The boot the monotonic clock counts from: the text of
 * /proc/sys/kernel/random/boot_id into out (len >= 40), "" if unknown. A
 * monotonic time kept in a file means something only in the same boot. */
void rs_boot_id(char *out, size_t len);
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
