#include <math.h>

#include "limiter.h"

void
rsq_limiter_init(struct rsq_limiter *l, int64_t base_ns, int64_t max_ns,
    double qps, int burst)
{
	l->base_ns = base_ns;
	l->max_ns = max_ns;
	rs_bucket_init(&l->bucket, qps, burst);
}

int64_t
rsq_backoff_when(const struct rsq_limiter *l, uint32_t *failures)
{
	/* computed in floating point as client-go does, so that a large
	 * failure count saturates at max instead of overflowing */
	double d = ldexp((double)l->base_ns, (int)(*failures > 1100 ? 1100 :
	    *failures));

	if (*failures < UINT32_MAX)
		(*failures)++;
	if (d >= 9.2e18 || (int64_t)d > l->max_ns)
		return l->max_ns;
	return (int64_t)d;
}

int64_t
rsq_limiter_when(struct rsq_limiter *l, uint32_t *failures, int64_t now_ns)
{
	int64_t a = rsq_backoff_when(l, failures);
	int64_t b = rs_bucket_reserve(&l->bucket, now_ns);

	return a > b ? a : b;
}
