#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "reply.h"

static size_t
buf_size(const struct rsq_buf *b)
{
	return b->len - b->off;
}

static void
buf_put(struct rsq_buf *b, const char *p, size_t n)
{
	if (b->len + n > b->cap && b->off > 0) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (b->len + n > b->cap) {
		size_t ncap = b->cap ? b->cap : 256;
		char *np;

		while (ncap < b->len + n)
			ncap *= 2;
		if ((np = realloc(b->p, ncap)) == NULL)
			rs_fatal(111, "unable to allocate memory: %s",
			    strerror(ENOMEM));
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Empty; the memory of a large burst goes back, so an idle client costs
 * little. */
static void
buf_reset(struct rsq_buf *b)
{
	b->off = b->len = 0;
	if (b->cap > 65536) {
		free(b->p);
		b->p = NULL;
		b->cap = 0;
	}
}

void
rsq_reply(struct rsq_replies *r, const char *a, size_t alen, const char *b,
    size_t blen)
{
	struct rsq_buf *to = r->waiting ? &r->held : &r->out;

	buf_put(to, a, alen);
	if (b)
		buf_put(to, b, blen);
	buf_put(to, "\n", 1);
}

void
rsq_reply_wait(struct rsq_replies *r)
{
	if (r->waiting > 0)
		buf_put(&r->held, "", 1);
	r->waiting++;
}

void
rsq_reply_answer(struct rsq_replies *r, const char *a, const char *b,
    size_t blen)
{
	const char *h = r->held.p + r->held.off;
	size_t n = buf_size(&r->held);
	const char *z = n ? memchr(h, '\0', n) : NULL;

	buf_put(&r->out, a, strlen(a));
	if (b)
		buf_put(&r->out, b, blen);
	buf_put(&r->out, "\n", 1);
	r->waiting--;
	if (z == NULL) {
		if (n)
			buf_put(&r->out, h, n);
		buf_reset(&r->held);
	} else {
		/* the next waiting GET moves to the head of held */
		buf_put(&r->out, h, z - h);
		r->held.off += z - h + 1;
	}
}

void
rsq_reply_drop_waiting(struct rsq_replies *r)
{
	free(r->held.p);
	memset(&r->held, 0, sizeof r->held);
	r->waiting = 0;
}

size_t
rsq_reply_ready(const struct rsq_replies *r)
{
	return buf_size(&r->out);
}

size_t
rsq_reply_pending(const struct rsq_replies *r)
{
	return buf_size(&r->out) + buf_size(&r->held);
}

int
rsq_reply_send(struct rsq_replies *r, int fd)
{
	while (buf_size(&r->out) > 0) {
		ssize_t n = send(fd, r->out.p + r->out.off, buf_size(&r->out),
		    MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 1;
			return -1;
		}
		r->out.off += n;
	}
	buf_reset(&r->out);
	return 0;
}

void
rsq_replies_free(struct rsq_replies *r)
{
	free(r->out.p);
	free(r->held.p);
	memset(r, 0, sizeof *r);
}
