/* duration.h: durations on the command line, as Go writes them: "800ms",
 * "30s", "2m", "1h30m", "1.5s"; a bare number is seconds. */
#ifndef RS_WATCH_DURATION_H
#define RS_WATCH_DURATION_H

#include <stdint.h>

/* 0 and *ns set, or -1 for something that is not a duration >= 0. */
int duration_parse(const char *s, int64_t *ns);

#endif
