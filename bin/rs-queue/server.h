/* server.h: `rs-queue serve`, the queue behind a UNIX socket. One thread,
 * one epoll loop: every client is a connection with its own reply buffer;
 * the queue state machine (queue.h) is driven from here and knows nothing
 * of sockets. */
#ifndef RSQ_SERVER_H
#define RSQ_SERVER_H

#include "queue.h"

struct rsq_server_config {
	const char *path;        /* socket path */
	const char *name;        /* queue name, the metrics' label */
	int notify_fd;           /* s6 readiness: a newline once listening; -1 */
	struct rsq_config queue;
};

/* Serves until a drained shutdown; returns the exit code (or dies with
 * rs_fatal when the socket cannot be set up). */
int rsq_serve(const struct rsq_server_config *c);

#endif
