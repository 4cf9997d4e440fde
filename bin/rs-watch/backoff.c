#include <errno.h>
#include <time.h>

#include "backoff.h"
#include "clock.h"

void
backoff_init(struct backoff *b, int64_t initial_ns, int64_t max_ns,
    int64_t reset_ns)
{
	b->initial = initial_ns;
	b->max = max_ns < initial_ns ? initial_ns : max_ns;
	b->reset = reset_ns;
	b->base = initial_ns;
	b->last = 0;
	/* distinct per backoff (threads start at distinct times and addresses) */
	b->rng = (uint64_t)rs_mono_ns() ^ ((uint64_t)(uintptr_t)b << 17) ^
	    0x9e3779b97f4a7c15ull;
	if (b->rng == 0)
		b->rng = 1;
}

double
backoff_rand(struct backoff *b)
{
	/* xorshift64*: jitter needs spread, not secrecy */
	b->rng ^= b->rng >> 12;
	b->rng ^= b->rng << 25;
	b->rng ^= b->rng >> 27;
	return (double)((b->rng * 2685821657736338717ull) >> 11) /
	    (double)(1ull << 53);
}

int64_t
backoff_next(struct backoff *b, int64_t now_ns)
{
	int64_t wait;

	if (b->last != 0 && now_ns - b->last > b->reset)
		b->base = b->initial;
	b->last = now_ns;
	wait = b->base + (int64_t)(backoff_rand(b) * (double)b->base);
	b->base = b->base > b->max / 2 ? b->max : b->base * 2;
	return wait;
}

void
sleep_ns(int64_t ns)
{
	struct timespec t;

	if (ns <= 0)
		return;
	t.tv_sec = ns / 1000000000;
	t.tv_nsec = ns % 1000000000;
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}
