#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "line.h"
#include "log.h"
#include "queue_client.h"
#include "statedir.h"

/* What a reply answers, kept in request order. */
enum { KIND_OK = 'O', KIND_GET = 'G', KIND_QUERY = 'Q' };

/* A STATS reply is one JSON line; far below this. */
#define REPLY_MAX (1u << 20)

struct rs_queue {
	int fd;
	int lost;                 /* the connection is gone */
	int eof;                  /* ... closed by the server */
	int shutdown;             /* a GET was answered SHUTDOWN */
	struct rs_line_reader in;
	char *out;                /* requests not yet written: out[ooff..olen) */
	size_t olen, ooff, ocap;
	unsigned char *kinds;     /* ring of replies awaited */
	size_t khead, kn, kcap;
	char *keys;               /* answered keys, each NUL-terminated */
	size_t klen, koff, kcap2;
	size_t gets;              /* GETs not yet answered */
	char *reply;              /* answer to the last query */
	int have_reply;
	unsigned long errors;
};

const char *
rs_queue_key_check(const char *key, size_t len)
{
	const char *slash = memchr(key, '/', len);
	size_t i, nslen;

	if (len > RS_QUEUE_KEY_MAX)
		return "key too long";
	if (slash == NULL)
		return "key is not namespace/name";
	nslen = slash - key;
	if (nslen == 0 || nslen > RS_QUEUE_NS_MAX)
		return "namespace is not 1 to 63 bytes";
	if (len - nslen - 1 == 0 || len - nslen - 1 > RS_QUEUE_NAME_MAX)
		return "name is not 1 to 253 bytes";
	for (i = 0; i < len; i++) {
		unsigned char c = key[i];

		if (i == nslen)
			continue;
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-')
			continue;
		if (c == '.' && i > nslen)
			continue;
		return "key has a character outside [a-z0-9.-]";
	}
	return NULL;
}

char *
rs_queue_default_path(void)
{
	return rs_state_path("queue.sock");
}

rs_code
rs_queue_open(const char *path, struct rs_queue **qp)
{
	struct sockaddr_un sa;
	struct rs_queue *q;
	char *dflt = NULL;
	int fd, e;

	*qp = NULL;
	if (path == NULL && (path = dflt = rs_queue_default_path()) == NULL)
		return RS_ENOMEM;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa.sun_path) {
		free(dflt);
		errno = ENAMETOOLONG;
		return RS_EUSAGE;
	}
	strcpy(sa.sun_path, path);
	free(dflt);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return RS_EIO;
	while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno == EINTR)
			continue;
		e = errno;
		close(fd);
		errno = e;
		if (e == ENOENT || e == ECONNREFUSED || e == EAGAIN)
			return RS_EAGAIN;
		return e == EACCES || e == EPERM ? RS_EREFUSED : RS_EIO;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    (q = calloc(1, sizeof *q)) == NULL) {
		close(fd);
		return RS_ENOMEM;
	}
	q->fd = fd;
	if (rs_line_reader_init(&q->in, fd, REPLY_MAX) != RS_OK) {
		close(fd);
		free(q);
		return RS_ENOMEM;
	}
	*qp = q;
	return RS_OK;
}

void
rs_queue_close(struct rs_queue *q)
{
	if (q == NULL)
		return;
	close(q->fd);
	rs_line_reader_free(&q->in);
	free(q->out);
	free(q->kinds);
	free(q->keys);
	free(q->reply);
	free(q);
}

int rs_queue_fd(const struct rs_queue *q) { return q->fd; }
size_t rs_queue_gets_pending(const struct rs_queue *q) { return q->gets; }
unsigned long rs_queue_errors(const struct rs_queue *q) { return q->errors; }

short
rs_queue_events(const struct rs_queue *q)
{
	return POLLIN | (q->olen > q->ooff ? POLLOUT : 0);
}

static int
grow(char **buf, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 256;
	char *nb;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if ((nb = realloc(*buf, ncap)) == NULL)
		return -1;
	*buf = nb;
	*cap = ncap;
	return 0;
}

static rs_code
kind_push(struct rs_queue *q, unsigned char kind)
{
	if (q->kn == q->kcap) {
		size_t ncap = q->kcap ? q->kcap * 2 : 64, i;
		unsigned char *nk = malloc(ncap);

		if (nk == NULL)
			return RS_ENOMEM;
		for (i = 0; i < q->kn; i++)
			nk[i] = q->kinds[(q->khead + i) % q->kcap];
		free(q->kinds);
		q->kinds = nk;
		q->kcap = ncap;
		q->khead = 0;
	}
	q->kinds[(q->khead + q->kn) % q->kcap] = kind;
	q->kn++;
	return RS_OK;
}

static int
kind_pop(struct rs_queue *q)
{
	int k;

	if (q->kn == 0)
		return -1;
	k = q->kinds[q->khead];
	q->khead = (q->khead + 1) % q->kcap;
	q->kn--;
	return k;
}

/* Appends one request line "verb[ arg][ key]\n" awaiting a reply of kind. */
static rs_code
request(struct rs_queue *q, unsigned char kind, const char *verb,
    const char *arg, const char *key)
{
	size_t vl = strlen(verb), al = arg ? strlen(arg) : 0;
	size_t kl = key ? strlen(key) : 0, n = vl + al + kl + 3;
	char *p;

	if (q->lost)
		return RS_EIO;
	if (key && rs_queue_key_check(key, kl) != NULL)
		return RS_EPARSE;
	if (grow(&q->out, &q->ocap, q->olen + n) < 0)
		return RS_ENOMEM;
	if (kind_push(q, kind) != RS_OK)
		return RS_ENOMEM;
	p = q->out + q->olen;
	memcpy(p, verb, vl);
	p += vl;
	if (arg) {
		*p++ = ' ';
		memcpy(p, arg, al);
		p += al;
	}
	if (key) {
		*p++ = ' ';
		memcpy(p, key, kl);
		p += kl;
	}
	*p++ = '\n';
	q->olen = p - q->out;
	if (kind == KIND_GET)
		q->gets++;
	return RS_OK;
}

rs_code rs_queue_add(struct rs_queue *q, const char *key)
{ return request(q, KIND_OK, "ADD", NULL, key); }
rs_code rs_queue_done(struct rs_queue *q, const char *key)
{ return request(q, KIND_OK, "DONE", NULL, key); }
rs_code rs_queue_forget(struct rs_queue *q, const char *key)
{ return request(q, KIND_OK, "FORGET", NULL, key); }
rs_code rs_queue_retry(struct rs_queue *q, const char *key)
{ return request(q, KIND_OK, "RETRY", NULL, key); }

rs_code
rs_queue_after(struct rs_queue *q, double seconds, const char *key)
{
	char num[64];

	if (!isfinite(seconds) || seconds > 1e9)
		return RS_EUSAGE;
	snprintf(num, sizeof num, "%.9f", seconds);
	return request(q, KIND_OK, "AFTER", num, key);
}

rs_code
rs_queue_end(struct rs_queue *q, const char *key, int failed, int forget,
    int has_after, double seconds)
{
	rs_code rc = rs_queue_done(q, key);

	if (rc == RS_OK && forget)
		rc = rs_queue_forget(q, key);
	if (rc == RS_OK && failed)
		rc = rs_queue_retry(q, key);
	if (rc == RS_OK && has_after && !failed)
		rc = rs_queue_after(q, seconds, key);
	return rc;
}

rs_code
rs_queue_request_get(struct rs_queue *q, int hold)
{
	return request(q, KIND_GET, "GET", hold ? "HOLD" : NULL, NULL);
}

static rs_code
push_key(struct rs_queue *q, const char *key, size_t len)
{
	if (grow(&q->keys, &q->kcap2, q->klen + len + 1) < 0)
		return RS_ENOMEM;
	memcpy(q->keys + q->klen, key, len);
	q->keys[q->klen + len] = '\0';
	q->klen += len + 1;
	return RS_OK;
}

static int
is_err(const char *line, size_t len)
{
	return len >= 3 && memcmp(line, "ERR", 3) == 0 &&
	    (len == 3 || line[3] == ' ');
}

/* One reply line, matched with the oldest request awaiting a reply. */
static rs_code
on_reply(struct rs_queue *q, const char *line, size_t len)
{
	int kind = kind_pop(q);

	if (kind < 0) {
		rs_warn("queue: reply to no request: %.80s", line);
		return RS_EPARSE;
	}
	if (kind == KIND_QUERY) {
		free(q->reply);
		if ((q->reply = strndup(line, len)) == NULL)
			return RS_ENOMEM;
		q->have_reply = 1;
		return RS_OK;
	}
	if (is_err(line, len)) {
		rs_warn("queue: request refused: %s", len > 4 ? line + 4 : "");
		q->errors++;
		if (kind == KIND_GET)
			q->gets--;
		return RS_OK;
	}
	if (kind == KIND_OK) {
		if (len == 2 && memcmp(line, "OK", 2) == 0)
			return RS_OK;
	} else if (len > 4 && memcmp(line, "KEY ", 4) == 0) {
		q->gets--;
		return push_key(q, line + 4, len - 4);
	} else if (len == 8 && memcmp(line, "SHUTDOWN", 8) == 0) {
		q->gets--;
		q->shutdown = 1;
		return RS_OK;
	}
	rs_warn("queue: unexpected reply: %.80s", line);
	return RS_EPARSE;
}

static rs_code
do_write(struct rs_queue *q)
{
	while (q->ooff < q->olen) {
		ssize_t n = send(q->fd, q->out + q->ooff, q->olen - q->ooff,
		    MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return RS_OK;
			q->lost = 1;
			return RS_EIO;
		}
		q->ooff += n;
	}
	q->ooff = q->olen = 0;
	return RS_OK;
}

static rs_code
drain_lines(struct rs_queue *q)
{
	char *line;
	size_t len;
	rs_code rc;

	for (;;) {
		rc = rs_line_next(&q->in, &line, &len);
		if (rc == RS_ETOOBIG) {
			rs_warn("queue: reply over %u bytes dropped", REPLY_MAX);
			line = "ERR reply too long";
			len = strlen(line);
		} else if (rc != RS_OK) {
			return RS_OK;
		}
		if ((rc = on_reply(q, line, len)) != RS_OK) {
			q->lost = 1;
			return rc == RS_ENOMEM ? rc : RS_EIO;
		}
	}
}

static rs_code
do_read(struct rs_queue *q)
{
	rs_code rc;
	int i;

	/* a bounded number of reads, so that a busy server cannot starve
	 * the caller's other work */
	for (i = 0; i < 16; i++) {
		rc = rs_line_fill(&q->in);
		if (rc == RS_EAGAIN)
			return RS_OK;
		if (rc == RS_EEOF) {
			drain_lines(q);
			q->lost = q->eof = 1;
			return RS_EEOF;
		}
		if (rc != RS_OK) {
			q->lost = 1;
			return rc;
		}
		if ((rc = drain_lines(q)) != RS_OK)
			return rc;
	}
	return RS_OK;
}

rs_code
rs_queue_io(struct rs_queue *q)
{
	rs_code rc;

	if (q->lost)
		return q->eof ? RS_EEOF : RS_EIO;
	if ((rc = do_write(q)) != RS_OK)
		return rc;
	return do_read(q);
}

rs_code
rs_queue_read(struct rs_queue *q)
{
	if (q->lost)
		return q->eof ? RS_EEOF : RS_EIO;
	return do_read(q);
}

int
rs_queue_unsent(const struct rs_queue *q)
{
	return q->olen > q->ooff;
}

rs_code
rs_queue_next_key(struct rs_queue *q, const char **key)
{
	if (q->koff == q->klen)
		q->koff = q->klen = 0;
	if (q->koff < q->klen) {
		*key = q->keys + q->koff;
		q->koff += strlen(*key) + 1;
		return RS_OK;
	}
	if (q->shutdown)
		return RS_EEOF;
	return q->lost ? RS_EIO : RS_EAGAIN;
}

/* Waits for the socket, then does what I/O it can. */
static rs_code
wait_io(struct rs_queue *q)
{
	struct pollfd p;

	if (q->lost)
		return q->eof ? RS_EEOF : RS_EIO;
	p.fd = q->fd;
	p.events = rs_queue_events(q);
	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return RS_EIO;
	return rs_queue_io(q);
}

rs_code
rs_queue_get(struct rs_queue *q, int hold, const char **key)
{
	rs_code rc = rs_queue_next_key(q, key);

	if (rc != RS_EAGAIN)
		return rc;
	if (q->gets == 0 && (rc = rs_queue_request_get(q, hold)) != RS_OK)
		return rc;
	for (;;) {
		rs_code io = wait_io(q);

		rc = rs_queue_next_key(q, key);
		if (rc != RS_EAGAIN)
			return rc;
		if (io != RS_OK)
			return RS_EIO;
	}
}

rs_code
rs_queue_flush(struct rs_queue *q)
{
	rs_code rc = rs_queue_io(q);

	while (rc == RS_OK && q->olen > q->ooff)
		rc = wait_io(q);
	return rc;
}

rs_code
rs_queue_sync(struct rs_queue *q)
{
	rs_code rc = rs_queue_io(q);

	while (rc == RS_OK && q->kn > 0)
		rc = wait_io(q);
	return q->kn == 0 ? RS_OK : rc == RS_OK ? RS_EIO : rc;
}

rs_code
rs_queue_query(struct rs_queue *q, const char *req, char **reply)
{
	rs_code rc;

	*reply = NULL;
	if (strchr(req, '\n') != NULL)
		return RS_EUSAGE;
	if ((rc = request(q, KIND_QUERY, req, NULL, NULL)) != RS_OK)
		return rc;
	q->have_reply = 0;
	rc = rs_queue_io(q);
	while (rc == RS_OK && !q->have_reply)
		rc = wait_io(q);
	if (!q->have_reply)
		return rc == RS_OK ? RS_EIO : rc;
	*reply = q->reply;
	q->reply = NULL;
	q->have_reply = 0;
	return RS_OK;
}

rs_code
rs_queue_wait_closed(struct rs_queue *q)
{
	rs_code rc = rs_queue_io(q);

	while (rc == RS_OK)
		rc = wait_io(q);
	return rc == RS_EEOF ? RS_OK : rc;
}
