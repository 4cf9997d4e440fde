/* queue_hold.c: when the queue lines a client holds back go. */
#include "flag.h"
#include "queue_hold.h"

int64_t
rs_queue_hold_flag(const char *arg)
{
	int64_t ns = rs_flag_duration(arg, "--queue-hold");

	if (ns > RS_QUEUE_HOLD_MAX_NS)
		rs_flag_fail("--queue-hold must be at most 10s");
	return ns;
}

int
rs_queue_hold_on(struct rs_queue_hold *h, const struct rs_queue *q, int may,
    int64_t now)
{
	if (!may || h->urgent || h->dur == 0 || !rs_queue_unsent(q))
		return 0;
	if (h->since == 0)
		h->since = now;
	return now - h->since < h->dur;
}

int
rs_queue_hold_ms(const struct rs_queue_hold *h, int64_t now)
{
	return (int)((h->since + h->dur - now) / 1000000) + 1;
}

rs_code
rs_queue_hold_io(struct rs_queue_hold *h, struct rs_queue *q, int held)
{
	rs_code rc;

	if (held)
		return rs_queue_read(q);
	rc = rs_queue_io(q);
	if (!rs_queue_unsent(q)) {
		h->urgent = 0;
		h->since = 0;
	}
	return rc;
}
