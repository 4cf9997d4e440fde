#include "ratelimit.h"

void
rs_bucket_init(struct rs_bucket *b, double qps, int burst)
{
	b->qps = qps;
	b->burst = burst > 0 ? burst : 1;
	b->tokens = b->burst;
	b->last_ns = -1;
}

static void
bucket_refill(struct rs_bucket *b, int64_t now_ns)
{
	if (b->last_ns >= 0 && now_ns > b->last_ns) {
		b->tokens += (now_ns - b->last_ns) / 1e9 * b->qps;
		if (b->tokens > b->burst)
			b->tokens = b->burst;
	}
	if (b->last_ns < 0 || now_ns > b->last_ns)
		b->last_ns = now_ns;
}

int64_t
rs_bucket_reserve(struct rs_bucket *b, int64_t now_ns)
{
	if (b->qps <= 0)
		return 0;
	bucket_refill(b, now_ns);
	b->tokens -= 1;
	if (b->tokens >= 0)
		return 0;
	return (int64_t)(-b->tokens / b->qps * 1e9);
}

int
rs_bucket_ready(struct rs_bucket *b, int64_t now_ns)
{
	if (b->qps <= 0)
		return 1;
	bucket_refill(b, now_ns);
	return b->tokens >= 1;
}

int
rs_bucket_try(struct rs_bucket *b, int64_t now_ns)
{
	if (!rs_bucket_ready(b, now_ns))
		return 0;
	if (b->qps > 0)
		b->tokens -= 1;
	return 1;
}
