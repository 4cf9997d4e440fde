#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard.h"

#define FNV64_OFFSET 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL
#define TOP_HEX "0x10000000000000000"

uint64_t
rs_shard_hash(const char *s, size_t n)
{
	uint64_t h = FNV64_OFFSET;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= FNV64_PRIME;
	}
	return h;
}

uint64_t
rs_shard_bucket_start(unsigned i, unsigned nbuckets)
{
	unsigned __int128 x = (unsigned __int128)i << 64;

	return (uint64_t)(x / nbuckets);
}

/* start(i) <= h exactly when i * 2^64 < (h + 1) * nbuckets: the largest
 * such i, with no division to round the wrong way at a bound. */
unsigned
rs_shard_bucket(uint64_t hash, unsigned nbuckets)
{
	unsigned __int128 x = ((unsigned __int128)hash + 1) * nbuckets - 1;

	return (unsigned)(x >> 64);
}

static int
held_bit(const uint64_t *held, unsigned i)
{
	return (held[i / 64] >> (i % 64)) & 1;
}

/* One term, for buckets a to b-1; sep: after another term. */
static int
put_range(char *p, size_t room, int sep, unsigned a, unsigned b, unsigned nb)
{
	char end[24];

	if (b == nb)
		snprintf(end, sizeof end, "%s", TOP_HEX);
	else
		snprintf(end, sizeof end, "0x%016llx",
		    (unsigned long long)rs_shard_bucket_start(b, nb));
	return snprintf(p, room, "%sshardRange(" RS_SHARD_FIELD
	    ", '0x%016llx', '%s')", sep ? " || " : "",
	    (unsigned long long)rs_shard_bucket_start(a, nb), end);
}

rs_code
rs_shard_selector(const uint64_t *held, unsigned nbuckets, char **out)
{
	/* a term and its separator take under 112 bytes, and at most one
	 * bucket in two starts a term */
	size_t room = (nbuckets / 2 + 1) * 112 + 1, len = 0;
	unsigned a, b;
	char *s;

	*out = NULL;
	if (nbuckets < 1 || nbuckets > RS_SHARD_BUCKETS_MAX)
		return RS_EUSAGE;
	if ((s = malloc(room)) == NULL)
		return RS_ENOMEM;
	for (a = 0; a < nbuckets; a = b) {
		if (!held_bit(held, a)) {
			b = a + 1;
			continue;
		}
		for (b = a + 1; b < nbuckets && held_bit(held, b); b++)
			;
		len += put_range(s + len, room - len, len > 0, a, b, nbuckets);
	}
	if (len == 0) {
		free(s);
		return RS_EUSAGE;
	}
	*out = s;
	return RS_OK;
}

/* ---- the selector read back ---- */

struct cur {
	const char *p;
	struct rs_shard_ranges *out;
	size_t cap;
	char *why;
	size_t whylen;
};

static void
blanks(struct cur *c)
{
	while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')
		c->p++;
}

/* The next token is tok: it is taken. */
static int
take(struct cur *c, const char *tok)
{
	size_t n = strlen(tok);

	blanks(c);
	if (strncmp(c->p, tok, n) != 0)
		return 0;
	c->p += n;
	return 1;
}

static int
ident_char(char ch, int first)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    ch == '_' || (!first && ch >= '0' && ch <= '9');
}

/* An identifier into buf (truncated to fit: a longer one is no name we
 * know). */
static int
ident(struct cur *c, char *buf, size_t len)
{
	size_t n = 0;

	blanks(c);
	if (!ident_char(*c->p, 1))
		return 0;
	while (ident_char(*c->p, 0)) {
		if (n + 1 < len)
			buf[n++] = *c->p;
		c->p++;
	}
	buf[n] = '\0';
	return 1;
}

/* The field path: identifiers joined by dots. */
static rs_code
field(struct cur *c)
{
	char path[64], part[32];
	size_t n;

	path[0] = '\0';
	do {
		if (!ident(c, part, sizeof part))
			return rs_why(RS_EPARSE, c->why, c->whylen,
			    "shardRange() first argument: expected a field "
			    "path (object.metadata.namespace)");
		n = strlen(path);
		snprintf(path + n, sizeof path - n, "%s%s", n ? "." : "", part);
	} while (take(c, "."));
	if (strcmp(path, RS_SHARD_FIELD) != 0)
		return rs_why(RS_EPARSE, c->why, c->whylen,
		    "unsupported field path '%s': shards here are by "
		    RS_SHARD_FIELD, path);
	return RS_OK;
}

/* A bound as the server takes it: '0x' and 16 lowercase hex digits, or
 * the top, 2^64 (*top set). */
static rs_code
bound(struct cur *c, const char *name, uint64_t *v, int *top)
{
	char q, s[24];
	size_t n = 0;

	blanks(c);
	q = *c->p;
	if (q != '\'' && q != '"')
		return rs_why(RS_EPARSE, c->why, c->whylen,
		    "%s must be a string literal (e.g. '0xff')", name);
	for (c->p++; *c->p && *c->p != q; c->p++)
		if (n + 1 < sizeof s)
			s[n++] = *c->p;
		else
			return rs_why(RS_EPARSE, c->why, c->whylen,
			    "%s: hex value too long", name);
	if (*c->p != q)
		return rs_why(RS_EPARSE, c->why, c->whylen,
		    "%s: unterminated string", name);
	c->p++;
	s[n] = '\0';
	*top = strcmp(s, TOP_HEX) == 0;
	*v = 0;
	if (*top)
		return RS_OK;
	if (n != 18 || s[0] != '0' || s[1] != 'x')
		return rs_why(RS_EPARSE, c->why, c->whylen, "%s must be a "
		    "0x-prefixed 16-digit hex value, got '%s'", name, s);
	for (size_t i = 2; i < n; i++) {
		char ch = s[i];

		if (ch >= '0' && ch <= '9')
			*v = *v << 4 | (uint64_t)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			*v = *v << 4 | (uint64_t)(ch - 'a' + 10);
		else
			return rs_why(RS_EPARSE, c->why, c->whylen, "%s: "
			    "invalid hex character '%c' in '%s' (lowercase "
			    "only)", name, ch, s);
	}
	return RS_OK;
}

static rs_code
add_range(struct cur *c, uint64_t lo, uint64_t last)
{
	struct rs_shard_ranges *o = c->out;
	struct rs_shard_range *r;

	if (o->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;

		if ((r = realloc(o->r, cap * sizeof *r)) == NULL)
			return RS_ENOMEM;
		o->r = r;
		c->cap = cap;
	}
	o->r[o->n].lo = lo;
	o->r[o->n].last = last;
	o->n++;
	return RS_OK;
}

/* shardRange(field, 'start', 'end'), after its name. */
static rs_code
range_call(struct cur *c)
{
	uint64_t lo, hi;
	int lo_top, hi_top;
	rs_code rc;

	if (!take(c, "("))
		return rs_why(RS_EPARSE, c->why, c->whylen,
		    "expected '(' after shardRange");
	if ((rc = field(c)) != RS_OK)
		return rc;
	if (!take(c, ","))
		return rs_why(RS_EPARSE, c->why, c->whylen,
		    "shardRange() requires exactly 3 arguments");
	if ((rc = bound(c, "hexStart", &lo, &lo_top)) != RS_OK)
		return rc;
	if (!take(c, ","))
		return rs_why(RS_EPARSE, c->why, c->whylen,
		    "shardRange() requires exactly 3 arguments");
	if ((rc = bound(c, "hexEnd", &hi, &hi_top)) != RS_OK)
		return rc;
	if (!take(c, ")"))
		return rs_why(RS_EPARSE, c->why, c->whylen,
		    "shardRange() requires exactly 3 arguments");
	if (lo_top || (!hi_top && hi <= lo))
		return rs_why(RS_EPARSE, c->why, c->whylen,
		    "shard range start must be less than end");
	return add_range(c, lo, hi_top ? UINT64_MAX : hi - 1);
}

static rs_code or_expr(struct cur *c, int depth);

/* A term: a call, or an expression in parentheses. */
static rs_code
term(struct cur *c, int depth)
{
	char name[32];
	rs_code rc;

	if (take(c, "(")) {
		if ((rc = or_expr(c, depth + 1)) != RS_OK)
			return rc;
		return take(c, ")") ? RS_OK : rs_why(RS_EPARSE, c->why,
		    c->whylen, "expected ')'");
	}
	if (!ident(c, name, sizeof name))
		return rs_why(RS_EPARSE, c->why, c->whylen,
		    "expected shardRange() at '%.20s'", c->p);
	if (strcmp(name, "shardRange") != 0)
		return rs_why(RS_EPARSE, c->why, c->whylen, "unsupported "
		    "function '%s'; only shardRange() and || are allowed", name);
	return range_call(c);
}

/* The parser's own recursion bound, as CEL's parser has one. */
#define DEPTH_MAX 32

static rs_code
or_expr(struct cur *c, int depth)
{
	rs_code rc;

	if (depth > DEPTH_MAX)
		return rs_why(RS_EPARSE, c->why, c->whylen,
		    "parentheses nested too deep");
	do {
		if ((rc = term(c, depth)) != RS_OK)
			return rc;
	} while (take(c, "||"));
	return RS_OK;
}

rs_code
rs_shard_parse_why(const char *sel, struct rs_shard_ranges *out, char *why,
    size_t whylen)
{
	struct cur c = { sel, out, 0, why, whylen };
	rs_code rc;

	out->r = NULL;
	out->n = 0;
	blanks(&c);
	if (*c.p == '\0')
		return rs_why(RS_EPARSE, why, whylen,
		    "empty shard selector is not allowed");
	rc = or_expr(&c, 0);
	blanks(&c);
	if (rc == RS_OK && *c.p != '\0')
		rc = rs_why(RS_EPARSE, why, whylen,
		    "unexpected '%.20s' after a shard range", c.p);
	if (rc != RS_OK)
		rs_shard_ranges_free(out);
	return rc;
}

rs_code
rs_shard_parse(const char *sel, struct rs_shard_ranges *out)
{
	return rs_shard_parse_why(sel, out, NULL, 0);
}

void
rs_shard_ranges_free(struct rs_shard_ranges *r)
{
	free(r->r);
	r->r = NULL;
	r->n = 0;
}

/* Each step takes a range that holds the first hash not yet covered and
 * moves past it: at most n steps of n, for ranges in any order, however
 * they overlap, with nothing to sort or allocate. */
int
rs_shard_ranges_whole(const struct rs_shard_ranges *r)
{
	uint64_t next = 0;
	size_t i;

	for (;;) {
		for (i = 0; i < r->n; i++)
			if (r->r[i].lo <= next && r->r[i].last >= next)
				break;
		if (i == r->n)
			return 0;
		if (r->r[i].last == UINT64_MAX)
			return 1;
		next = r->r[i].last + 1;
	}
}

int
rs_shard_match_hash(const struct rs_shard_ranges *r, uint64_t hash)
{
	for (size_t i = 0; i < r->n; i++)
		if (hash >= r->r[i].lo && hash <= r->r[i].last)
			return 1;
	return 0;
}

int
rs_shard_match(const struct rs_shard_ranges *r, const char *ns, size_t n)
{
	return rs_shard_match_hash(r, rs_shard_hash(ns, n));
}
