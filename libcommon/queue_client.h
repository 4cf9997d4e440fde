/* queue_client.h: the client side of the rs-queue line protocol
 * (doc/queue-protocol.md). One connection to `rs-queue serve`.
 *
 * Requests are buffered and pipelined: rs_queue_add, _done, _forget, _retry,
 * _after and _request_get only append to the output buffer. The buffer goes
 * out on the next rs_queue_io (poll loops) or blocking call (rs_queue_get,
 * _flush, _sync, _query). Replies come back in request order; an ERR
 * reply to a pipelined request is logged as a warning and counted
 * (rs_queue_errors), it does not fail the connection.
 *
 * Keys handed out by a plain GET belong to this connection: if it closes
 * (or the process dies) before DONE, the server puts them back on the queue.
 * A GET HOLD key stays out until someone sends DONE.
 *
 * From a poll loop: poll rs_queue_fd() for rs_queue_events(), call
 * rs_queue_io() when it is ready, then take keys with rs_queue_next_key().
 * The fd is non-blocking; the blocking calls wait with poll(2) and keep
 * reading replies while they write, so a long pipeline never deadlocks. */
#ifndef RS_QUEUE_CLIENT_H
#define RS_QUEUE_CLIENT_H

#include <stddef.h>

#include "code.h"

/* Bounds of a key: namespace/name, a DNS label and a DNS subdomain. */
#define RS_QUEUE_NS_MAX 63
#define RS_QUEUE_NAME_MAX 253
#define RS_QUEUE_KEY_MAX (RS_QUEUE_NS_MAX + 1 + RS_QUEUE_NAME_MAX)
/* The longest request line the server reads, without its newline. */
#define RS_QUEUE_LINE_MAX 4096

struct rs_queue;

/* NULL if key[0..len) is a well-formed namespace/name key, else why not. */
const char *rs_queue_key_check(const char *key, size_t len);

/* The default socket: $RS_STATE_DIR/queue.sock; malloc'd, NULL on ENOMEM. */
char *rs_queue_default_path(void);

/* Connects to the server at path (NULL: the default). RS_EAGAIN when no
 * server listens there (errno says why: ENOENT, ECONNREFUSED), RS_EUSAGE
 * for a path too long for a socket, RS_EIO or RS_ENOMEM otherwise. Logs
 * nothing: the caller says what it was doing. */
rs_code rs_queue_open(const char *path, struct rs_queue **qp);
void rs_queue_close(struct rs_queue *q);

/* Pipelined requests. RS_EPARSE for a malformed key (nothing is sent),
 * RS_ENOMEM, or RS_EIO when the connection is already lost. */
rs_code rs_queue_add(struct rs_queue *q, const char *key);
rs_code rs_queue_done(struct rs_queue *q, const char *key);
rs_code rs_queue_forget(struct rs_queue *q, const char *key);
rs_code rs_queue_retry(struct rs_queue *q, const char *key);
rs_code rs_queue_after(struct rs_queue *q, double seconds, const char *key);
/* A key's end, as upstream's worker ends a sync: DONE, then FORGET (forget),
 * then RETRY (failed), then AFTER seconds (has_after, not failed). The
 * first result that is not RS_OK, and the lines after it are not sent. */
rs_code rs_queue_end(struct rs_queue *q, const char *key, int failed,
    int forget, int has_after, double seconds);
/* Asks for one key; its answer comes later through rs_queue_next_key.
 * hold: the key stays out after this connection closes (GET HOLD). */
rs_code rs_queue_request_get(struct rs_queue *q, int hold);

/* Poll-loop use. */
int rs_queue_fd(const struct rs_queue *q);
/* POLLIN, plus POLLOUT while requests wait to be written. */
short rs_queue_events(const struct rs_queue *q);
/* Writes what the socket takes and reads what has arrived; never blocks.
 * RS_OK, or RS_EIO / RS_EEOF when the connection is lost (server gone). */
rs_code rs_queue_io(struct rs_queue *q);
/* rs_queue_io without the writing: reads what has arrived and leaves the
 * buffered requests for a later rs_queue_io (a caller that holds back
 * lines no one waits for, to send them with the next ones). Poll for
 * POLLIN alone meanwhile. */
rs_code rs_queue_read(struct rs_queue *q);
/* Whether requests wait in the buffer to be written. */
int rs_queue_unsent(const struct rs_queue *q);
/* A key answered to an earlier GET: RS_OK and *key (valid until the next
 * call on q), RS_EAGAIN when none has come yet, RS_EEOF when the queue is
 * shutting down (no key will come), RS_EIO when the connection is lost. */
rs_code rs_queue_next_key(struct rs_queue *q, const char **key);
/* GETs sent and not yet answered. */
size_t rs_queue_gets_pending(const struct rs_queue *q);

/* Blocking use. */
/* A key: one already answered, else sends GET (if none is outstanding)
 * and waits. Same results as rs_queue_next_key, never RS_EAGAIN. */
rs_code rs_queue_get(struct rs_queue *q, int hold, const char **key);
/* Waits until every buffered request is written. */
rs_code rs_queue_flush(struct rs_queue *q);
/* Waits until every request sent so far is answered (including GETs:
 * do not call it with a GET outstanding on an empty queue). */
rs_code rs_queue_sync(struct rs_queue *q);
/* Sends one request line (LEN, STATS, SHUTDOWN, ...) and waits for its
 * reply line, malloc'd in *reply (without newline). */
rs_code rs_queue_query(struct rs_queue *q, const char *request, char **reply);
/* Waits until the server closes the connection (after SHUTDOWN). */
rs_code rs_queue_wait_closed(struct rs_queue *q);

/* ERR replies received for pipelined requests so far. */
unsigned long rs_queue_errors(const struct rs_queue *q);

#endif
