/* queue_hold.h: queue lines a client holds back to send with its next
 * ones (doc/queue-protocol.md, "A client that holds lines back"). The lines
 * stay in the rs_queue's buffer; this decides when they go. rs-sync holds
 * the ends of syncs that wrote nothing for its next ADDs, rs-apply the ends
 * of its keys for the answers still due. */
#ifndef RS_QUEUE_HOLD_H
#define RS_QUEUE_HOLD_H
#include <stdint.h>
#include "code.h"
#include "queue_client.h"

/* --queue-hold's bound. */
#define RS_QUEUE_HOLD_MAX_NS (10 * 1000000000LL)

struct rs_queue_hold {
	int64_t dur;            /* --queue-hold, ns; 0: never hold */
	int64_t since;          /* when the unsent lines began to wait; 0 */
	int urgent;             /* a line waits that must go at once */
};

/* --queue-hold DUR: a duration of at most 10s, else a usage error. */
int64_t rs_queue_hold_flag(const char *arg);
/* Whether q's unsent lines may wait longer: not when the caller has a
 * reason of its own to send (may 0), a line is urgent, nothing is unsent,
 * or they have waited dur since the first call that held them. */
int rs_queue_hold_on(struct rs_queue_hold *h, const struct rs_queue *q,
    int may, int64_t now);
/* Milliseconds until a hold begun ends (at least 1). */
int rs_queue_hold_ms(const struct rs_queue_hold *h, int64_t now);
/* The queue's I/O: its replies alone while held, else all of it; the hold
 * is over once nothing is left unsent. */
rs_code rs_queue_hold_io(struct rs_queue_hold *h, struct rs_queue *q,
    int held);
#endif
