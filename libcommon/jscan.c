#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "utf8.h"

typedef const unsigned char uchar;

/* In a string, bytes that need no second look: printable ASCII but the
 * quote and the backslash. */
static const unsigned char plain[256] = {
	[0x20 ... 0x21] = 1, [0x23 ... 0x5b] = 1, [0x5d ... 0x7f] = 1,
};

/* The walkers' string skip stops at these: the quote, the backslash. */
static const unsigned char stop[256] = { ['"'] = 1, ['\\'] = 1 };

/* The walkers' container skip: 1 a quote, 2 an opening bracket, 3 a
 * closing one. */
static const unsigned char structure[256] = {
	['"'] = 1, ['['] = 2, ['{'] = 2, [']'] = 3, ['}'] = 3,
};

/* Strings are most of a text's bytes: they are crossed eight bytes at a
 * time where the machine allows (a word of plain bytes at once; halves a
 * pod event's scan), byte by byte elsewhere and near the end. */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WORDWISE 1
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

static uint64_t
word_at(uchar *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof w);
	return w;
}

/* The high bit of each byte of w that is c; bytes past the first one
 * found may be flagged wrongly, so only the lowest flag is to be read. */
static uint64_t
bytes_equal(uint64_t w, unsigned char c)
{
	uint64_t x = w ^ (ONES * c);

	return (x - ONES) & ~x & HIGHS;
}

/* The same for bytes below 0x20 or from 0x80 up. */
static uint64_t
bytes_not_ascii_printable(uint64_t w)
{
	return ((w - ONES * 0x20) & ~w & HIGHS) | (w & HIGHS);
}

/* The offset of the first flagged byte. */
static size_t
first_flag(uint64_t f)
{
	return (size_t)__builtin_ctzll(f) / 8;
}
#else
#define WORDWISE 0
#endif

/* From p[i], past the bytes that plain[] takes, within len. */
static size_t
plain_run(uchar *p, size_t len, size_t i)
{
#if WORDWISE
	while (len - i >= 8) {
		uint64_t w = word_at(p + i);
		uint64_t f = bytes_equal(w, '"') | bytes_equal(w, '\\') |
		    bytes_not_ascii_printable(w);

		if (f)
			return i + first_flag(f);
		i += 8;
	}
#endif
	while (i < len && plain[p[i]])
		i++;
	return i;
}

/* From p[i], to the first quote or backslash, or to end. */
static size_t
stop_run(uchar *p, size_t end, size_t i)
{
#if WORDWISE
	while (end - i >= 8) {
		uint64_t w = word_at(p + i);
		uint64_t f = bytes_equal(w, '"') | bytes_equal(w, '\\');

		if (f)
			return i + first_flag(f);
		i += 8;
	}
#endif
	while (i < end && !stop[p[i]])
		i++;
	return i;
}

static size_t
ws(uchar *p, size_t len, size_t i)
{
	while (i < len && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' ||
	    p[i] == '\t'))
		i++;
	return i;
}

static int
hex4(uchar *p, unsigned *v)
{
	unsigned c, k, x = 0;

	for (k = 0; k < 4; k++) {
		c = p[k];
		if (c >= '0' && c <= '9')
			c -= '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			c = (c | 0x20) - 'a' + 10;
		else
			return -1;
		x = x << 4 | c;
	}
	*v = x;
	return 0;
}

/* One escape at p[*i] == '\\', its string ending before end: the code
 * point in *cp, *i past it. A high surrogate must come with its low one,
 * a low one alone is refused: the text would not be UTF-8. */
static rs_code
escape(uchar *p, size_t end, size_t *i, unsigned *cp)
{
	size_t j = *i + 1;
	unsigned hi, lo;

	if (j >= end)
		return RS_EPARSE;
	switch (p[j]) {
	case '"': case '\\': case '/':
		*cp = p[j];
		break;
	case 'b': *cp = '\b'; break;
	case 'f': *cp = '\f'; break;
	case 'n': *cp = '\n'; break;
	case 'r': *cp = '\r'; break;
	case 't': *cp = '\t'; break;
	case 'u':
		if (end - j < 5 || hex4(p + j + 1, &hi) != 0)
			return RS_EPARSE;
		j += 4;
		if (hi >= 0xdc00 && hi <= 0xdfff)
			return RS_EPARSE;
		if (hi >= 0xd800 && hi <= 0xdbff) {
			if (end - j < 7 || p[j + 1] != '\\' || p[j + 2] != 'u' ||
			    hex4(p + j + 3, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
				return RS_EPARSE;
			hi = 0x10000 + ((hi - 0xd800) << 10 | (lo - 0xdc00));
			j += 6;
		}
		*cp = hi;
		break;
	default:
		return RS_EPARSE;
	}
	*i = j + 1;
	return RS_OK;
}

/* One UTF-8 sequence at p[*i] (not ASCII): *i past it. */
static rs_code
utf8(uchar *p, size_t len, size_t *i)
{
	size_t n = rs_utf8_seq(p + *i, len - *i);

	if (n == 0)
		return RS_EPARSE;
	*i += n;
	return RS_OK;
}

/* A string at p[*i] == '"': *i past its closing quote, or at the bad
 * byte. */
static rs_code
string(uchar *p, size_t len, size_t *ip)
{
	size_t i = *ip + 1;
	unsigned c, cp;

	for (;;) {
		/* the common bytes first, in a tight loop */
		i = plain_run(p, len, i);
		if (i >= len || (c = p[i]) < 0x20)
			break;
		if (c == '"') {
			*ip = i + 1;
			return RS_OK;
		}
		if (c == '\\') {
			if (escape(p, len, &i, &cp) != RS_OK)
				break;
		} else if (utf8(p, len, &i) != RS_OK) {
			break;
		}
	}
	*ip = i;
	return RS_EPARSE;
}

static size_t
digits(uchar *p, size_t len, size_t i)
{
	while (i < len && p[i] >= '0' && p[i] <= '9')
		i++;
	return i;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? at p[*i]. What follows
 * is the caller's to check: "01" is a 0 followed by a stray 1. */
static rs_code
number(uchar *p, size_t len, size_t *ip)
{
	size_t i = *ip, j;

	if (i < len && p[i] == '-')
		i++;
	if (i < len && p[i] == '0')
		i++;
	else if ((j = digits(p, len, i)) > i)
		i = j;
	else
		goto bad;
	if (i < len && p[i] == '.') {
		if ((j = digits(p, len, i + 1)) == i + 1) {
			i = j;
			goto bad;
		}
		i = j;
	}
	if (i < len && (p[i] == 'e' || p[i] == 'E')) {
		i++;
		if (i < len && (p[i] == '+' || p[i] == '-'))
			i++;
		if ((j = digits(p, len, i)) == i)
			goto bad;
		i = j;
	}
	*ip = i;
	return RS_OK;
bad:
	*ip = i;
	return RS_EPARSE;
}

static rs_code
literal(uchar *p, size_t len, size_t *ip, const char *word, size_t n)
{
	size_t i = *ip;

	if (len - i < n || memcmp(p + i, word, n) != 0)
		return RS_EPARSE;
	*ip = i + n;
	return RS_OK;
}

/* A scalar at p[*i]. */
static rs_code
scalar(uchar *p, size_t len, size_t *ip)
{
	switch (p[*ip]) {
	case '"': return string(p, len, ip);
	case 't': return literal(p, len, ip, "true", 4);
	case 'f': return literal(p, len, ip, "false", 5);
	case 'n': return literal(p, len, ip, "null", 4);
	default: return number(p, len, ip);
	}
}

/* A member's key and colon at p[*i], and the whitespace after. */
static rs_code
member_key(uchar *p, size_t len, size_t *ip)
{
	size_t i = *ip;

	if (i >= len || p[i] != '"' || string(p, len, &i) != RS_OK)
		goto bad;
	i = ws(p, len, i);
	if (i >= len || p[i] != ':')
		goto bad;
	*ip = ws(p, len, i + 1);
	return RS_OK;
bad:
	*ip = i;
	return RS_EPARSE;
}

/* The containers open at each depth: one bit each, set for an object. The
 * stack is this bitmap and nothing else, so depth costs no recursion. */
struct nest {
	unsigned char obj[RS_JSCAN_DEPTH / 8];
	size_t depth;
	size_t max;          /* the deepest it may go, at most RS_JSCAN_DEPTH */
};

static int
nest_push(struct nest *n, int obj)
{
	size_t d = n->depth;

	if (d == n->max)
		return -1;
	if (obj)
		n->obj[d / 8] |= 1u << (d % 8);
	else
		n->obj[d / 8] &= ~(1u << (d % 8));
	n->depth = d + 1;
	return 0;
}

static int
nest_obj(const struct nest *n)
{
	size_t d = n->depth - 1;

	return n->obj[d / 8] >> (d % 8) & 1;
}

/* After a value at depth > 0: a comma and the next member or element
 * (*next set), or closing brackets until one of those or depth 0. */
static rs_code
after(uchar *p, size_t len, size_t *ip, struct nest *n, int *next)
{
	size_t i = *ip;
	int obj;

	*next = 0;
	while (n->depth > 0) {
		i = ws(p, len, i);
		if (i >= len)
			goto bad;
		obj = nest_obj(n);
		if (p[i] == ',') {
			i = ws(p, len, i + 1);
			if (obj && member_key(p, len, &i) != RS_OK)
				goto bad;
			*next = 1;
			break;
		}
		if (p[i] != (obj ? '}' : ']'))
			goto bad;
		i++;
		n->depth--;
	}
	*ip = i;
	return RS_OK;
bad:
	*ip = i;
	return RS_EPARSE;
}

static rs_code
value_within(const char *buf, size_t len, size_t off, size_t max,
    struct rs_jspan *v, size_t *where)
{
	uchar *p = (uchar *)buf;
	struct nest n;
	size_t i = ws(p, len, off);
	int obj, next;

	n.depth = 0;
	n.max = max < RS_JSCAN_DEPTH ? max : RS_JSCAN_DEPTH;
	v->off = i;
	for (;;) {
		/* a value at i */
		if (i >= len)
			goto bad;
		if (p[i] == '{' || p[i] == '[') {
			obj = p[i] == '{';
			if (nest_push(&n, obj) != 0)
				goto bad;
			i = ws(p, len, i + 1);
			if (i < len && p[i] == (obj ? '}' : ']')) {
				i++;
				n.depth--;
			} else if (!obj || member_key(p, len, &i) == RS_OK) {
				continue;
			} else {
				goto bad;
			}
		} else if (scalar(p, len, &i) != RS_OK) {
			goto bad;
		}
		if (after(p, len, &i, &n, &next) != RS_OK)
			goto bad;
		if (!next)
			break;
	}
	v->end = i;
	return RS_OK;
bad:
	if (where)
		*where = i;
	return RS_EPARSE;
}

rs_code
rs_jscan_value(const char *buf, size_t len, size_t off, struct rs_jspan *v,
    size_t *where)
{
	return value_within(buf, len, off, RS_JSCAN_DEPTH, v, where);
}

rs_code
rs_jscan_doc_within(const char *buf, size_t len, size_t max_depth,
    struct rs_jspan *v, size_t *where)
{
	size_t i;
	rs_code rc;

	if ((rc = value_within(buf, len, 0, max_depth, v, where)) != RS_OK)
		return rc;
	if ((i = ws((uchar *)buf, len, v->end)) != len) {
		if (where)
			*where = i;
		return RS_EPARSE;
	}
	return RS_OK;
}

rs_code
rs_jscan_doc(const char *buf, size_t len, struct rs_jspan *v, size_t *where)
{
	return rs_jscan_doc_within(buf, len, RS_JSCAN_DEPTH, v, where);
}

enum rs_jtype
rs_jscan_type(const char *buf, struct rs_jspan v)
{
	if (v.end <= v.off)
		return RS_JNONE;
	switch (buf[v.off]) {
	case '{': return RS_JOBJECT;
	case '[': return RS_JARRAY;
	case '"': return RS_JSTRING;
	case 't': return RS_JTRUE;
	case 'f': return RS_JFALSE;
	case 'n': return RS_JNULL;
	case '-': return RS_JNUMBER;
	default:
		return buf[v.off] >= '0' && buf[v.off] <= '9' ?
		    RS_JNUMBER : RS_JNONE;
	}
}

/* The walkers' skip: the end of the string whose opening quote is at
 * p[i]; end if it does not close before end. */
static size_t
skip_string(uchar *p, size_t i, size_t end)
{
	for (i++; i < end; i++) {
		i = stop_run(p, end, i);
		if (i >= end)
			break;
		if (p[i] == '"')
			return i + 1;
		i++;     /* the escaped byte */
	}
	return end;
}

/* The end of the value at p[i], within end, trusting the text: brackets
 * are counted, whatever their kind. i itself when there is none. */
static size_t
skip(uchar *p, size_t i, size_t end)
{
	size_t depth = 0;
	unsigned c;

	if (i >= end)
		return i;
	if (p[i] != '{' && p[i] != '[') {
		if (p[i] == '"')
			return skip_string(p, i, end);
		while (i < end && (c = p[i]) != ',' && c != '}' && c != ']' &&
		    c != ':' && c != ' ' && c != '\n' && c != '\r' && c != '\t')
			i++;
		return i;
	}
	while (i < end) {
		switch (structure[p[i]]) {
		case 0:
			i++;
			break;
		case 1:
			i = skip_string(p, i, end);
			break;
		case 2:
			depth++;
			i++;
			break;
		default:
			i++;
			if (--depth == 0)
				return i;
		}
	}
	return end;
}

rs_code
rs_jscan_iter(struct rs_jiter *it, const char *buf, struct rs_jspan v)
{
	enum rs_jtype t = rs_jscan_type(buf, v);

	if ((t != RS_JOBJECT && t != RS_JARRAY) || v.end - v.off < 2)
		return RS_EPARSE;
	it->buf = buf;
	it->start = v.off;
	it->pos = v.off + 1;
	it->end = v.end;
	return RS_OK;
}

/* Where the next member or element starts, after whitespace: RS_OK, or
 * RS_EEOF with pos left at the closing bracket, or RS_EPARSE at the bound
 * (no closing bracket: not a text the validator took). */
static rs_code
iter_next(struct rs_jiter *it, size_t *at)
{
	uchar *p = (uchar *)it->buf;
	size_t i = ws(p, it->end, it->pos);

	if (i >= it->end) {
		it->pos = it->end;
		return RS_EPARSE;
	}
	if (p[i] == '}' || p[i] == ']') {
		it->pos = i;
		return RS_EEOF;
	}
	*at = i;
	return RS_OK;
}

/* Past a value that ends at i: the comma after it, if any. */
static void
iter_past(struct rs_jiter *it, size_t i)
{
	uchar *p = (uchar *)it->buf;

	i = ws(p, it->end, i);
	if (i < it->end && p[i] == ',')
		i++;
	it->pos = i;
}

rs_code
rs_jscan_elem(struct rs_jiter *it, struct rs_jspan *val)
{
	size_t i;
	rs_code rc;

	if ((rc = iter_next(it, &i)) != RS_OK)
		return rc;
	val->off = i;
	val->end = skip((uchar *)it->buf, i, it->end);
	if (val->end == i) {
		it->pos = it->end;
		return RS_EPARSE;
	}
	iter_past(it, val->end);
	return RS_OK;
}

rs_code
rs_jscan_value_next(struct rs_jiter *it, struct rs_jspan *val)
{
	struct rs_jspan k;

	if (it->buf[it->start] == '{')
		return rs_jscan_member(it, &k, val);
	return rs_jscan_elem(it, val);
}

rs_code
rs_jscan_key(struct rs_jiter *it, struct rs_jspan *key)
{
	uchar *p = (uchar *)it->buf;
	size_t i;
	rs_code rc;

	if ((rc = iter_next(it, &i)) != RS_OK)
		return rc;
	if (p[i] != '"')
		goto bad;
	key->off = i;
	key->end = skip_string(p, i, it->end);
	i = ws(p, it->end, key->end);
	if (i >= it->end || p[i] != ':')
		goto bad;
	it->pos = i + 1;
	return RS_OK;
bad:
	it->pos = it->end;
	return RS_EPARSE;
}

rs_code
rs_jscan_member(struct rs_jiter *it, struct rs_jspan *key,
    struct rs_jspan *val)
{
	rs_code rc;

	if ((rc = rs_jscan_key(it, key)) != RS_OK)
		return rc;
	/* a closing bracket cannot follow a colon: the value is missing */
	if ((rc = rs_jscan_elem(it, val)) == RS_EEOF) {
		it->pos = it->end;
		rc = RS_EPARSE;
	}
	return rc;
}

rs_code
rs_jscan_enter(struct rs_jiter *it, struct rs_jiter *sub)
{
	size_t i;
	rs_code rc;

	if ((rc = iter_next(it, &i)) != RS_OK)
		return rc;
	if (it->buf[i] != '{' && it->buf[i] != '[')
		return RS_EPARSE;
	sub->buf = it->buf;
	sub->start = i;
	sub->pos = i + 1;
	sub->end = it->end;
	return RS_OK;
}

rs_code
rs_jscan_leave(struct rs_jiter *it, const struct rs_jiter *sub,
    struct rs_jspan *v)
{
	if (sub->pos >= sub->end || (sub->buf[sub->pos] != '}' &&
	    sub->buf[sub->pos] != ']')) {
		it->pos = it->end;
		return RS_EPARSE;
	}
	if (v) {
		v->off = sub->start;
		v->end = sub->pos + 1;
	}
	iter_past(it, sub->pos + 1);
	return RS_OK;
}

/* The UTF-8 form of a code point: its length. */
static size_t
encode(unsigned cp, unsigned char *o)
{
	if (cp < 0x80) {
		o[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = 0xc0 | cp >> 6;
		o[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = 0xe0 | cp >> 12;
		o[1] = 0x80 | (cp >> 6 & 0x3f);
		o[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	o[0] = 0xf0 | cp >> 18;
	o[1] = 0x80 | (cp >> 12 & 0x3f);
	o[2] = 0x80 | (cp >> 6 & 0x3f);
	o[3] = 0x80 | (cp & 0x3f);
	return 4;
}

static int
is_string(const char *buf, struct rs_jspan s)
{
	return s.end > s.off + 1 && buf[s.off] == '"' &&
	    buf[s.end - 1] == '"';
}

int
rs_jscan_keyeq(const char *buf, struct rs_jspan key, const char *s)
{
	uchar *p = (uchar *)buf;
	unsigned char u[4];
	size_t i, end, n, k = 0, slen = strlen(s);
	unsigned cp;

	if (!is_string(buf, key))
		return 0;
	i = key.off + 1;
	end = key.end - 1;
	if (memchr(p + i, '\\', end - i) == NULL)
		return end - i == slen && memcmp(p + i, s, slen) == 0;
	while (i < end) {
		if (p[i] != '\\') {
			if (k == slen || (uchar)s[k++] != p[i++])
				return 0;
			continue;
		}
		if (escape(p, end, &i, &cp) != RS_OK)
			return 0;
		n = encode(cp, u);
		/* a NUL inside the key does not match the end of s */
		if (slen - k < n || memcmp(s + k, u, n) != 0)
			return 0;
		k += n;
	}
	return k == slen;
}

rs_code
rs_jscan_find(const char *buf, struct rs_jspan obj, const char *key,
    struct rs_jspan *val)
{
	struct rs_jiter it;
	struct rs_jspan k, v;

	if (rs_jscan_type(buf, obj) != RS_JOBJECT ||
	    rs_jscan_iter(&it, buf, obj) != RS_OK)
		return RS_ENOTFOUND;
	while (rs_jscan_member(&it, &k, &v) == RS_OK)
		if (rs_jscan_keyeq(buf, k, key)) {
			*val = v;
			return RS_OK;
		}
	return RS_ENOTFOUND;
}

rs_code
rs_jscan_pick(const char *buf, struct rs_jspan obj, const char *const *names,
    struct rs_jspan *out, size_t n)
{
	struct rs_jiter it;
	struct rs_jspan k, v;
	size_t i, left = n;

	for (i = 0; i < n; i++)
		out[i].off = out[i].end = obj.off;
	if (rs_jscan_type(buf, obj) != RS_JOBJECT ||
	    rs_jscan_iter(&it, buf, obj) != RS_OK)
		return RS_EPARSE;
	while (left > 0 && rs_jscan_member(&it, &k, &v) == RS_OK) {
		const char *raw = buf + k.off + 1;
		size_t len = k.end - k.off - 2;
		/* a key without escapes is its bytes: compared as such, as
		 * a pick compares every key with every name still wanted */
		int unescaped = memchr(raw, '\\', len) == NULL;

		for (i = 0; i < n; i++) {
			if (out[i].end != out[i].off)
				continue;
			if (unescaped ? strncmp(names[i], raw, len) != 0 ||
			    names[i][len] != '\0' : !rs_jscan_keyeq(buf, k,
			    names[i]))
				continue;
			out[i] = v;
			left--;
			break;
		}
	}
	return RS_OK;
}

static rs_code
vget(const char *buf, struct rs_jspan v, struct rs_jspan *out, va_list ap)
{
	const char *k;
	rs_code rc;

	while ((k = va_arg(ap, const char *)) != NULL)
		if ((rc = rs_jscan_find(buf, v, k, &v)) != RS_OK)
			return rc;
	*out = v;
	return RS_OK;
}

rs_code
rs_jscan_get(const char *buf, struct rs_jspan v, struct rs_jspan *out, ...)
{
	va_list ap;
	rs_code rc;

	va_start(ap, out);
	rc = vget(buf, v, out, ap);
	va_end(ap);
	return rc;
}

rs_code
rs_jscan_double(const char *buf, struct rs_jspan v, double *out)
{
	char small[64], *s = small;
	size_t n = v.end - v.off;

	if (rs_jscan_type(buf, v) != RS_JNUMBER)
		return RS_EPARSE;
	/* the span is not NUL-terminated; numbers that long are rare */
	if (n >= sizeof small && (s = malloc(n + 1)) == NULL)
		return RS_ENOMEM;
	memcpy(s, buf + v.off, n);
	s[n] = '\0';
	*out = strtod(s, NULL);
	if (s != small)
		free(s);
	return RS_OK;
}

rs_code
rs_jscan_unescape(const char *buf, struct rs_jspan s, char *out,
    size_t outlen, size_t *np)
{
	uchar *p = (uchar *)buf, *bs;
	unsigned char u[4];
	size_t i, end, n = 0, k;
	unsigned cp;
	rs_code rc = RS_OK;

	if (!is_string(buf, s))
		return RS_EPARSE;
	if (outlen == 0)
		return RS_ETOOBIG;
	i = s.off + 1;
	end = s.end - 1;
	while (i < end && rc == RS_OK) {
		/* a run of plain bytes, then one escape */
		bs = memchr(p + i, '\\', end - i);
		k = (bs ? (size_t)(bs - p) : end) - i;
		if (n + k >= outlen) {
			k = outlen > n ? outlen - n - 1 : 0;
			rc = RS_ETOOBIG;
		}
		if (k > 0)
			memcpy(out + n, p + i, k);
		n += k;
		if (bs == NULL || rc != RS_OK)
			break;
		i = bs - p;
		if (escape(p, end, &i, &cp) != RS_OK) {
			rc = RS_EPARSE;
			break;
		}
		k = encode(cp, u);
		if (n + k >= outlen) {
			rc = RS_ETOOBIG;
			break;
		}
		memcpy(out + n, u, k);
		n += k;
	}
	out[n] = '\0';
	if (np)
		*np = n;
	return rc;
}

rs_code
rs_jscan_str(const char *buf, size_t len, char *out, size_t outlen, ...)
{
	struct rs_jspan doc, v;
	va_list ap;
	rs_code rc;

	if ((rc = rs_jscan_doc(buf, len, &doc, NULL)) != RS_OK)
		return rc;
	va_start(ap, outlen);
	rc = vget(buf, doc, &v, ap);
	va_end(ap);
	if (rc != RS_OK)
		return rc;
	if (rs_jscan_type(buf, v) != RS_JSTRING)
		return RS_ENOTFOUND;
	return rs_jscan_unescape(buf, v, out, outlen, NULL);
}
