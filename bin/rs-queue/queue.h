/* queue.h: the work queue itself, client-go's rate-limiting work queue as
 * a pure state machine: no I/O, no clock of its own (every call that needs
 * the time takes now_ns, monotonic nanoseconds), no waiting (GET on an
 * empty queue is the server's business: rsq_get just says "nothing").
 *
 *  - A key is queued at most once (dirty set), handed out in FIFO order,
 *    and never handed out again before its DONE (processing set); ADDed
 *    while out, it is queued again at DONE.
 *  - AFTER puts a key in the delay heap (an earlier time wins); RETRY is
 *    AFTER with the limiter's delay; FORGET clears the key's failures.
 *  - A key handed out may belong to a holder (a connection): when the
 *    holder goes away its keys count as DONE and are queued again.
 *  - After rsq_shutdown nothing is added or handed out; DONE still works.
 *
 * Differences from client-go, on purpose: DONE of a key that is not being
 * processed is refused (client-go would queue a dirty key a second time),
 * and after shutdown no key is handed out even if some are queued (the
 * server exits as soon as nothing is processing). */
#ifndef RSQ_QUEUE_H
#define RSQ_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "code.h"
#include "delay.h"
#include "keys.h"
#include "limiter.h"
#include "metrics.h"

struct rsq_config {
	int64_t base_delay_ns;   /* first RETRY delay: 5 ms */
	int64_t max_delay_ns;    /* cap of the per-key backoff: 1000 s */
	double qps;              /* overall RETRY rate: 10/s ... */
	int burst;               /* ... with a burst of 100 */
};

#define RSQ_BASE_DELAY_NS 5000000LL
#define RSQ_MAX_DELAY_NS 1000000000000LL
#define RSQ_QPS 10.0
#define RSQ_BURST 100

struct rsq {
	struct rsq_keys k;
	struct rsq_heap heap;
	struct rsq_limiter lim;
	uint32_t head, tail;       /* the FIFO, linked through item.next */
	uint64_t len;              /* keys in the FIFO */
	uint64_t depth;            /* dirty keys (queued or re-added while out) */
	uint64_t processing;
	uint32_t *holders;         /* first held item of each holder */
	uint32_t nholders;
	uint64_t adds, retries;
	struct rsq_hist queue_duration, work_duration;
	int shutting_down;
};

void rsq_config_default(struct rsq_config *c);
rs_code rsq_init(struct rsq *q, const struct rsq_config *c);
void rsq_free(struct rsq *q);

/* Add. RS_EREFUSED when shutting down. */
rs_code rsq_add(struct rsq *q, const char *key, size_t len, int64_t now);
/* Get without waiting: the item handed out, or RSQ_NONE when nothing is
 * queued or the queue is shutting down. holder is RSQ_NONE for a key that
 * nobody holds (GET HOLD), else an id made ready by rsq_holder_reserve. */
uint32_t rsq_get(struct rsq *q, uint32_t holder, int64_t now);
/* The text of item i (valid while the key is known). */
const char *rsq_key(const struct rsq *q, uint32_t i, size_t *len);
/* Done. RS_ENOTFOUND when the key is not being processed. */
rs_code rsq_done(struct rsq *q, const char *key, size_t len, int64_t now);
/* Forget: clears the key's failure count. */
rs_code rsq_forget(struct rsq *q, const char *key, size_t len);
/* AddAfter: delay <= 0 adds at once. RS_EREFUSED when shutting down. */
rs_code rsq_after(struct rsq *q, const char *key, size_t len, int64_t delay_ns,
    int64_t now);
/* AddRateLimited; *delay_ns (if not NULL) is the delay applied. */
rs_code rsq_retry(struct rsq *q, const char *key, size_t len, int64_t now,
    int64_t *delay_ns);
/* NumRequeues: RETRYs of key since its last FORGET. */
uint32_t rsq_failures(const struct rsq *q, const char *key, size_t len);
/* Moves delayed keys that are due onto the queue; how many were due. */
size_t rsq_tick(struct rsq *q, int64_t now);
/* When the next delayed key is due, or -1 if none waits. */
int64_t rsq_next_due(const struct rsq *q);

/* Makes holder id h usable (ids are small integers: connection slots). */
rs_code rsq_holder_reserve(struct rsq *q, uint32_t h);
/* Holder h went away: each key it holds counts as DONE and is added again
 * (in the order it was handed out). */
void rsq_release(struct rsq *q, uint32_t h, int64_t now);

/* ShutDownWithDrain: refuse adds, hand out nothing; DONE still counts. */
void rsq_shutdown(struct rsq *q);
/* True once shut down and nothing is processing: time to exit. */
int rsq_drained(const struct rsq *q);
size_t rsq_len(const struct rsq *q);
void rsq_stats(const struct rsq *q, int64_t now, struct rsq_stats *s);

#endif
