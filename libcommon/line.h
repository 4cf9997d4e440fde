/* line.h: bounded NDJSON line I/O.
 * A reader never holds more than max bytes of one line: a longer line is
 * dropped up to its newline and reported once as RS_ETOOBIG, so a 1 GiB line
 * costs a bounded buffer and the stream goes on. Lines handed out are
 * NUL-terminated, without their newline, and valid until the next call. */
#ifndef RS_LINE_H
#define RS_LINE_H

#include <stddef.h>
#include "code.h"

#define RS_LINE_MAX_DEFAULT (16u << 20)

struct rs_line_reader {
	int fd;
	char *buf;
	size_t cap, len, off;   /* data is buf[off..len) */
	size_t max;
	int skipping;           /* inside an oversized line */
	int eof;
	unsigned long lineno;   /* lines handed out or skipped so far */
};

rs_code rs_line_reader_init(struct rs_line_reader *r, int fd, size_t max);
void rs_line_reader_free(struct rs_line_reader *r);
/* One read(2) into the buffer: RS_OK, RS_EEOF, RS_EAGAIN (non-blocking fd
 * with nothing to read) or RS_EIO. */
rs_code rs_line_fill(struct rs_line_reader *r);
/* The next whole line already buffered: RS_OK, RS_EAGAIN (need a fill),
 * RS_ETOOBIG (a line was dropped), or RS_EEOF (end, nothing left). A last
 * line without newline at EOF is handed out. */
rs_code rs_line_next(struct rs_line_reader *r, char **line, size_t *len);
/* Blocking: fill until a line, EOF or error. */
rs_code rs_line_read(struct rs_line_reader *r, char **line, size_t *len);

/* write(2) all of buf, retrying on EINTR and short writes. RS_EIO with errno
 * set on failure (EPIPE when the reader went away). */
rs_code rs_write_all(int fd, const void *buf, size_t len);

/* A buffered writer of whole lines: a line is never split across two
 * write(2) calls unless it is larger than the buffer. */
struct rs_line_writer {
	int fd;
	char *buf;
	size_t cap, len;
};

rs_code rs_line_writer_init(struct rs_line_writer *w, int fd, size_t cap);
void rs_line_writer_free(struct rs_line_writer *w);
/* Appends s[0..len) and a newline. */
rs_code rs_line_put(struct rs_line_writer *w, const char *s, size_t len);
rs_code rs_line_flush(struct rs_line_writer *w);

#endif
