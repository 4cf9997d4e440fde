/* linebuf.h: a growing buffer for rendering lines, one per thread.
 * linebuf_reserve makes room; the appenders write into room it made and
 * check nothing. */
#ifndef RS_WATCH_LINEBUF_H
#define RS_WATCH_LINEBUF_H

#include <stddef.h>

#include "code.h"

struct linebuf {
	char *p;
	size_t cap, len;
	size_t max;     /* longest line printed (--max-line); 0: no limit */
};

void linebuf_free(struct linebuf *b);
/* Room for n more bytes: RS_ENOMEM, or RS_ETOOBIG past 256 MiB. */
rs_code linebuf_reserve(struct linebuf *b, size_t n);
void linebuf_put(struct linebuf *b, const char *s, size_t n);
void linebuf_puts(struct linebuf *b, const char *s);
/* What a string of n bytes takes once quoted and escaped, at most. */
size_t linebuf_quoted_max(size_t n);
/* s[0..n) as the inside of a JSON string, and as one (quoted). */
void linebuf_put_escaped(struct linebuf *b, const char *s, size_t n);
void linebuf_put_quoted(struct linebuf *b, const char *s, size_t n);
/* key (written as it is) and val quoted. */
void linebuf_put_member(struct linebuf *b, const char *key, const char *val);

#endif
