/* limiter.h: the delay of RETRY (client-go AddRateLimited with
 * DefaultControllerRateLimiter): the larger of a per-key exponential
 * backoff (base * 2^failures, capped at max; failures counted per key,
 * cleared by FORGET) and an overall token bucket shared by all keys
 * (rate.Limiter.Reserve().Delay(), through libcommon/ratelimit.h). Both
 * limiters are consulted on every RETRY, as MaxOfRateLimiter does, so
 * every RETRY takes a token. Pure: time comes in as an argument. */
#ifndef RSQ_LIMITER_H
#define RSQ_LIMITER_H

#include <stdint.h>

#include "ratelimit.h"

struct rsq_limiter {
	int64_t base_ns;
	int64_t max_ns;
	struct rs_bucket bucket;
};

void rsq_limiter_init(struct rsq_limiter *l, int64_t base_ns, int64_t max_ns,
    double qps, int burst);
/* The per-key part alone: base * 2^failures capped at max; then counts
 * one more failure. */
int64_t rsq_backoff_when(const struct rsq_limiter *l, uint32_t *failures);
/* The delay for one more RETRY of a key that failed *failures times;
 * counts the failure and takes a token. */
int64_t rsq_limiter_when(struct rsq_limiter *l, uint32_t *failures,
    int64_t now_ns);

#endif
