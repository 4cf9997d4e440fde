/* backoff.h: the reflector's wait after a failure, as client-go's
 * ExponentialBackoffManager (800 ms doubling to 30 s, reset after 2 min
 * without failure, jitter 1.0): each wait is base * (1 + rand), and base
 * doubles up to max. A failure after reset without one starts over. */
#ifndef RS_WATCH_BACKOFF_H
#define RS_WATCH_BACKOFF_H

#include <stdint.h>

struct backoff {
	int64_t initial, max, reset;     /* nanoseconds */
	int64_t base;                    /* the next wait before jitter */
	int64_t last;                    /* monotonic time of the last failure */
	uint64_t rng;
};

void backoff_init(struct backoff *b, int64_t initial_ns, int64_t max_ns,
    int64_t reset_ns);
/* A failure now: how long to wait, in nanoseconds. */
int64_t backoff_next(struct backoff *b, int64_t now_ns);
/* Uniform in [0, 1), from the backoff's own generator. */
double backoff_rand(struct backoff *b);
/* Sleeps ns nanoseconds (restarted after signals). */
void sleep_ns(int64_t ns);

#endif
