#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "line.h"

rs_code
rs_line_reader_init(struct rs_line_reader *r, int fd, size_t max)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	r->max = max ? max : RS_LINE_MAX_DEFAULT;
	r->cap = r->max < 65536 ? r->max + 1 : 65536;
	if ((r->buf = malloc(r->cap)) == NULL)
		return RS_ENOMEM;
	return RS_OK;
}

void
rs_line_reader_free(struct rs_line_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* Makes room for at least one more read: compacts, then grows up to max+1. */
static rs_code
reader_room(struct rs_line_reader *r)
{
	if (r->off > 0) {
		memmove(r->buf, r->buf + r->off, r->len - r->off);
		r->len -= r->off;
		r->off = 0;
	}
	if (r->len < r->cap)
		return RS_OK;
	if (r->cap > r->max) {
		/* the pending partial line is already over max: drop it */
		r->len = 0;
		r->skipping = 1;
		return RS_OK;
	}
	size_t ncap = r->cap * 2 > r->max + 1 ? r->max + 1 : r->cap * 2;
	char *nb = realloc(r->buf, ncap);
	if (nb == NULL)
		return RS_ENOMEM;
	r->buf = nb;
	r->cap = ncap;
	return RS_OK;
}

rs_code
rs_line_fill(struct rs_line_reader *r)
{
	rs_code rc;
	ssize_t n;

	if (r->eof)
		return RS_EEOF;
	if ((rc = reader_room(r)) != RS_OK)
		return rc;
	do
		n = read(r->fd, r->buf + r->len, r->cap - r->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? RS_EAGAIN : RS_EIO;
	if (n == 0) {
		r->eof = 1;
		return RS_EEOF;
	}
	r->len += n;
	return RS_OK;
}

rs_code
rs_line_next(struct rs_line_reader *r, char **line, size_t *len)
{
	char *start = r->buf + r->off;
	char *nl = memchr(start, '\n', r->len - r->off);

	if (r->skipping) {
		if (nl == NULL) {
			r->off = r->len = 0;
			if (!r->eof)
				return RS_EAGAIN;
			/* an oversized last line without newline: still said */
			r->skipping = 0;
			r->lineno++;
			return RS_ETOOBIG;
		}
		r->off = nl + 1 - r->buf;
		r->skipping = 0;
		r->lineno++;
		return RS_ETOOBIG;
	}
	if (nl == NULL) {
		size_t have = r->len - r->off;

		if (have > r->max) {
			r->off = r->len = 0;
			r->skipping = 1;
			return rs_line_next(r, line, len);
		}
		if (!r->eof || have == 0)
			return r->eof ? RS_EEOF : RS_EAGAIN;
		/* last line without a newline: make room for the NUL */
		if (r->len == r->cap && reader_room(r) != RS_OK)
			return RS_ENOMEM;
		start = r->buf + r->off;
		nl = start + have;
		r->len++;
	}
	if ((size_t)(nl - start) > r->max) {
		r->off = nl + 1 - r->buf;
		r->lineno++;
		return RS_ETOOBIG;
	}
	*nl = '\0';
	*line = start;
	*len = nl - start;
	r->off = nl + 1 - r->buf;
	r->lineno++;
	return RS_OK;
}

rs_code
rs_line_read(struct rs_line_reader *r, char **line, size_t *len)
{
	for (;;) {
		rs_code rc = rs_line_next(r, line, len);

		if (rc != RS_EAGAIN)
			return rc;
		rc = rs_line_fill(r);
		if (rc != RS_OK && rc != RS_EEOF)
			return rc;
	}
}

rs_code
rs_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return RS_EIO;
		}
		p += n;
		len -= n;
	}
	return RS_OK;
}

rs_code
rs_line_writer_init(struct rs_line_writer *w, int fd, size_t cap)
{
	w->fd = fd;
	w->cap = cap ? cap : 65536;
	w->len = 0;
	w->buf = malloc(w->cap);
	return w->buf ? RS_OK : RS_ENOMEM;
}

void
rs_line_writer_free(struct rs_line_writer *w)
{
	free(w->buf);
	w->buf = NULL;
}

rs_code
rs_line_flush(struct rs_line_writer *w)
{
	rs_code rc = rs_write_all(w->fd, w->buf, w->len);

	w->len = 0;
	return rc;
}

rs_code
rs_line_put(struct rs_line_writer *w, const char *s, size_t len)
{
	rs_code rc;

	if (w->len + len + 1 > w->cap && w->len > 0)
		if ((rc = rs_line_flush(w)) != RS_OK)
			return rc;
	if (len + 1 > w->cap) {
		if ((rc = rs_write_all(w->fd, s, len)) != RS_OK)
			return rc;
		return rs_write_all(w->fd, "\n", 1);
	}
	memcpy(w->buf + w->len, s, len);
	w->buf[w->len + len] = '\n';
	w->len += len + 1;
	return RS_OK;
}
