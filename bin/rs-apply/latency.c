/* latency.c: where a key's time goes on rs-apply's side (doc/metrics.md).
 * rs-sync puts on a key's end line when it wrote the key's intents
 * (sent_at) and when rs-watch read the earliest event the sync acted on
 * (event_at); rs-apply adds when it read the key's first intent and when
 * it reported the key's end to rs-queue. Wall-clock stamps of other
 * processes are compared with the wall clock; what happens within
 * rs-apply is timed on the monotonic clock. */
#include "apply.h"
#include "clock.h"
#include "stagestats.h"

void
latency_declare(void)
{
	rs_stagestats_declare_latency("rs_apply_intent_delivery_seconds",
	    "Seconds from rs-sync writing a key's intents to rs-apply reading "
	    "its end line.");
	rs_stagestats_declare_latency("rs_apply_key_seconds",
	    "Seconds from reading a key's first intent to reporting its end "
	    "to rs-queue: its writes.");
	rs_stagestats_declare_latency("rs_apply_event_to_end_seconds",
	    "Seconds from rs-watch reading the earliest event a sync acted on "
	    "to rs-apply reporting the key's end.");
}

void
latency_read(struct intent *in)
{
	in->read_ns = rs_mono_ns();
	if (in->op == OP_END && in->sent_at > 0)
		rs_stagestats_observe_since("rs_apply_intent_delivery_seconds",
		    NULL, in->sent_at, rs_wall_now());
}

void
latency_end(const struct key *k, const struct intent *end)
{
	if (k->round_ns > 0)
		rs_stagestats_observe("rs_apply_key_seconds", NULL,
		    (rs_mono_ns() - k->round_ns) / 1e9);
	if (end->event_at > 0)
		rs_stagestats_observe_since("rs_apply_event_to_end_seconds", NULL,
	    end->event_at, rs_wall_now());
}
