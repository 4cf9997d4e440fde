/* queue.c: one STATS request to rs-queue, bounded in time. The library
 * client (queue_client.h) waits as long as the server takes; a scrape or
 * a probe must not hang on a stopped queue, so this asks on its own
 * non-blocking socket with a deadline. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "rsm.h"

#define REPLY_MAX (1 << 20)

static char *
fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return NULL;
}

/* Waits for events on fd until deadline; 1 ready, 0 timed out, -1 error. */
static int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { fd, events, 0 };
	int64_t left;
	int r;

	for (;;) {
		left = deadline - rs_mono_ns();
		if (left <= 0)
			return 0;
		r = poll(&p, 1, (int)((left + 999999) / 1000000));
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

static int
open_socket(const char *path, int64_t deadline, char *why, size_t len)
{
	struct sockaddr_un sa;
	int fd, e = 0;
	socklen_t el = sizeof e;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa.sun_path) {
		fail(why, len, "socket path too long: %s", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		fail(why, len, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
		return fd;
	if (errno == EAGAIN || errno == EINPROGRESS) {
		/* a full backlog: the server is not accepting */
		if (wait_fd(fd, POLLOUT, deadline) == 1 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0)
			return fd;
		errno = e ? e : ETIMEDOUT;
	}
	fail(why, len, "no rs-queue at %s: %s", path, strerror(errno));
	close(fd);
	return -1;
}

static char *
read_reply(int fd, int64_t deadline, char *why, size_t len)
{
	size_t have = 0, cap = 4096;
	char *buf = malloc(cap), *nl, *nb;
	ssize_t n;

	while (buf) {
		if ((nl = memchr(buf, '\n', have)) != NULL) {
			*nl = '\0';
			return buf;
		}
		if (have == cap) {
			if (cap >= REPLY_MAX)
				break;
			if ((nb = realloc(buf, cap * 2)) == NULL)
				break;
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + have, cap - have);
		if (n > 0) {
			have += (size_t)n;
			continue;
		}
		if (n == 0) {
			free(buf);
			return fail(why, len, "rs-queue closed the connection");
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			free(buf);
			return fail(why, len, "reading from rs-queue: %s",
			    strerror(errno));
		}
		if (wait_fd(fd, POLLIN, deadline) != 1) {
			free(buf);
			return fail(why, len, "rs-queue did not answer within "
			    "%d ms", RSM_QUEUE_TIMEOUT_MS);
		}
	}
	free(buf);
	return fail(why, len, "rs-queue's answer is too long or out of memory");
}

char *
rsm_queue_stats(const char *path, int timeout_ms, char *why, size_t whylen)
{
	int64_t deadline = rs_mono_ns() + (int64_t)timeout_ms * 1000000;
	char *reply, *json;
	int fd;

	if ((fd = open_socket(path, deadline, why, whylen)) < 0)
		return NULL;
	/* six bytes fit in any socket buffer: no partial write */
	if (send(fd, "STATS\n", 6, MSG_NOSIGNAL) != 6) {
		fail(why, whylen, "writing to rs-queue: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	reply = read_reply(fd, deadline, why, whylen);
	close(fd);
	if (reply == NULL)
		return NULL;
	if (strncmp(reply, "STATS ", 6) != 0) {
		fail(why, whylen, "rs-queue answered: %.100s", reply);
		free(reply);
		return NULL;
	}
	json = strdup(reply + 6);
	free(reply);
	if (json == NULL)
		return fail(why, whylen, "out of memory");
	return json;
}
