/* ratelimit.h: the token bucket (client-go's BucketRateLimiter and
 * flowcontrol.NewTokenBucketRateLimiter): qps tokens a second, at most burst
 * saved. Not thread-safe; callers that share one hold their own lock. */
#ifndef RS_RATELIMIT_H
#define RS_RATELIMIT_H

#include <stdint.h>

struct rs_bucket {
	double qps;
	double burst;
	double tokens;
	int64_t last_ns;   /* monotonic time of the last refill */
};

/* qps <= 0 means unlimited. The bucket starts full. */
void rs_bucket_init(struct rs_bucket *b, double qps, int burst);
/* Takes one token now, possibly going into debt; returns how many
 * nanoseconds the caller must wait before acting (0 = at once). This is
 * rate.Limiter.Reserve().Delay(): waits queue up in order. */
int64_t rs_bucket_reserve(struct rs_bucket *b, int64_t now_ns);
/* Takes a token only if one is available now; 1 if taken. */
int rs_bucket_try(struct rs_bucket *b, int64_t now_ns);
/* 1 if a token is available now (none is taken). */
int rs_bucket_ready(struct rs_bucket *b, int64_t now_ns);

#endif
