/* server.h: `rs-queue serve`, the queue behind a UNIX socket. One thread,
 * one epoll loop: every client is a connection with its own reply buffer;
 * the queue state machine (queue.h) is driven from here and knows nothing
 * of sockets. */
#ifndef RSQ_SERVER_H
#define RSQ_SERVER_H

#include "queue.h"

/* The default drain deadline: below s6's timeout-kill (10 s in
 * service/s6/rs-queue) and systemd's TimeoutStopSec (10 s), so that the
 * server says what it gives up rather than be killed. */
#define RSQ_DRAIN_TIMEOUT_NS (5 * 1000000000LL)

struct rsq_server_config {
	const char *path;        /* socket path */
	const char *name;        /* queue name, the metrics' label */
	int notify_fd;           /* s6 readiness: a newline once listening; -1 */
	int64_t drain_timeout_ns; /* a shutdown waits this long for the keys
	                           * out, then exits 111; 0: for ever */
	struct rsq_config queue;
};

/* Serves until a drained shutdown, or the drain deadline after the
 * shutdown began; returns the exit code (or dies with rs_fatal when the
 * socket cannot be set up). */
int rsq_serve(const struct rsq_server_config *c);

#endif
