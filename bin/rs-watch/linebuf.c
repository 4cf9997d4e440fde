/* linebuf.c: a growing buffer that lines are rendered into. */
#include <stdlib.h>
#include <string.h>

#include "linebuf.h"

/* A line that does not fit this is surely not an object we can use. */
#define LINE_MAX_BYTES (256u << 20)

void
linebuf_free(struct linebuf *b)
{
	free(b->p);
	b->p = NULL;
	b->cap = b->len = 0;
}

/* Room for n more bytes. */
rs_code
linebuf_reserve(struct linebuf *b, size_t n)
{
	size_t ncap = b->cap ? b->cap : 64 << 10;
	char *np;

	if (n > LINE_MAX_BYTES || b->len > LINE_MAX_BYTES - n)
		return RS_ETOOBIG;
	while (ncap - b->len < n)
		ncap *= 2;
	if (ncap == b->cap)
		return RS_OK;
	if ((np = realloc(b->p, ncap)) == NULL)
		return RS_ENOMEM;
	b->p = np;
	b->cap = ncap;
	return RS_OK;
}

/* The appenders below write into room that reserve made. */
void
linebuf_put(struct linebuf *b, const char *s, size_t n)
{
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

void
linebuf_puts(struct linebuf *b, const char *s)
{
	linebuf_put(b, s, strlen(s));
}

/* What a string of n bytes takes once quoted and escaped, at most. */
size_t
linebuf_quoted_max(size_t n)
{
	return 6 * n + 2;
}

/* Escaped as cJSON escapes: the quote, the backslash and the control
 * characters; other bytes as they are. */
void
linebuf_put_escaped(struct linebuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char *o = b->p + b->len;
	unsigned char c;
	size_t i;

	for (i = 0; i < n; i++) {
		c = s[i];
		if (c >= 0x20 && c != '"' && c != '\\') {
			*o++ = c;
			continue;
		}
		*o++ = '\\';
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '\b': *o++ = 'b'; break;
		case '\f': *o++ = 'f'; break;
		case '\n': *o++ = 'n'; break;
		case '\r': *o++ = 'r'; break;
		case '\t': *o++ = 't'; break;
		default:
			memcpy(o, "u00", 3);
			o[3] = hex[c >> 4];
			o[4] = hex[c & 15];
			o += 5;
		}
	}
	b->len = o - b->p;
}

void
linebuf_put_quoted(struct linebuf *b, const char *s, size_t n)
{
	linebuf_put(b, "\"", 1);
	linebuf_put_escaped(b, s, n);
	linebuf_put(b, "\"", 1);
}

void
linebuf_put_member(struct linebuf *b, const char *key, const char *val)
{
	linebuf_puts(b, key);
	linebuf_put_quoted(b, val, strlen(val));
}

