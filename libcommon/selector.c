/* selector.c: label selectors. The parser follows the grammar and the
 * error cases of k8s.io/apimachinery/pkg/labels (Parse), the checks follow
 * NewRequirement and the label key/value validation, matching follows
 * Requirement.Matches and rendering Selector.String. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selector.h"

enum op {
	OP_EXISTS, OP_NOTEXIST, OP_EQ, OP_DEQ, OP_NE, OP_IN, OP_NOTIN,
	OP_GT, OP_LT
};

/* Between the key and the values when rendering. */
static const char *const opstr[] = {
	[OP_EXISTS] = "", [OP_NOTEXIST] = "", [OP_EQ] = "=", [OP_DEQ] = "==",
	[OP_NE] = "!=", [OP_IN] = " in (", [OP_NOTIN] = " notin (",
	[OP_GT] = ">", [OP_LT] = "<",
};

struct req {
	enum op op;
	int from_map;        /* from matchLabels or a map: the last key wins */
	size_t seq;          /* input order, so that sorting is stable */
	size_t nval;
	long long num;       /* the operand of gt and lt */
	char *key;           /* one block: the key then each value */
	const char **val;    /* sorted, pointing into the key block */
};

struct rs_selector {
	int nothing;
	size_t n, cap;
	struct req *req;
};

/* A piece of the input: parsed keys and values are not NUL-ended. */
struct sv {
	const char *p;
	size_t n;
};

#define MSG_NAME "must consist of alphanumeric characters, '-', '_' or " \
	"'.', and must start and end with an alphanumeric character"
#define MSG_VALUE "a valid label must be an empty string or consist of " \
	"alphanumeric characters, '-', '_' or '.', and must start and end " \
	"with an alphanumeric character"
#define MSG_SUBDOMAIN "a lowercase RFC 1123 subdomain must consist of " \
	"lower case alphanumeric characters, '-' or '.', and must start and " \
	"end with an alphanumeric character"

static rs_code
oom(char *why, size_t whylen)
{
	rs_why(RS_EPARSE, why, whylen, "out of memory");
	return RS_ENOMEM;
}

/* ---- validation (content.IsLabelKey, IsLabelValue) ---- */

static int
alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9');
}

static int
lower_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static int
name_ok(const char *p, size_t n)
{
	size_t i;

	if (n == 0 || !alnum((unsigned char)p[0]) ||
	    !alnum((unsigned char)p[n - 1]))
		return 0;
	for (i = 1; i + 1 < n; i++)
		if (!alnum((unsigned char)p[i]) && p[i] != '-' &&
		    p[i] != '_' && p[i] != '.')
			return 0;
	return 1;
}

/* Dot-separated labels of [a-z0-9-], each starting and ending [a-z0-9]. */
static int
subdomain_ok(const char *p, size_t n)
{
	size_t i, start = 0;

	for (i = 0; i <= n; i++) {
		if (i < n && p[i] != '.') {
			if (!lower_alnum((unsigned char)p[i]) && p[i] != '-')
				return 0;
			continue;
		}
		if (i == start || !lower_alnum((unsigned char)p[start]) ||
		    !lower_alnum((unsigned char)p[i - 1]))
			return 0;
		start = i + 1;
	}
	return 1;
}

static const char *
key_problem(struct sv k)
{
	const char *slash = memchr(k.p, '/', k.n), *name = k.p;
	size_t nn = k.n, np;

	if (slash != NULL) {
		np = slash - k.p;
		name = slash + 1;
		nn = k.n - np - 1;
		if (memchr(name, '/', nn) != NULL)
			return "a valid label key " MSG_NAME " with an optional "
			    "DNS subdomain prefix and '/' (e.g. "
			    "'example.com/MyName')";
		if (np == 0)
			return "prefix part must be non-empty";
		if (np > 253)
			return "prefix part must be no more than 253 characters";
		if (!subdomain_ok(k.p, np))
			return "prefix part " MSG_SUBDOMAIN;
	}
	if (nn == 0)
		return "name part must be non-empty";
	if (nn > 63)
		return "name part must be no more than 63 characters";
	if (!name_ok(name, nn))
		return "name part " MSG_NAME;
	return NULL;
}

static const char *
value_problem(struct sv v)
{
	if (v.n > 63)
		return "must be no more than 63 characters";
	if (v.n > 0 && !name_ok(v.p, v.n))
		return MSG_VALUE;
	return NULL;
}

/* strconv.ParseInt(s, 10, 64): optional sign, digits, in range. */
static int
parse_int64(const char *p, size_t n, long long *out)
{
	unsigned long long v = 0, lim = LLONG_MAX, d;
	size_t i = 0;
	int neg = 0;

	if (n > 0 && (p[0] == '+' || p[0] == '-')) {
		neg = p[0] == '-';
		i = 1;
	}
	if (i == n)
		return -1;
	if (neg)
		lim++;
	for (; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		d = p[i] - '0';
		if (v > (lim - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (!neg)
		*out = (long long)v;
	else
		*out = v > LLONG_MAX ? LLONG_MIN : -(long long)v;
	return 0;
}

/* ---- building ---- */

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
req_cmp(const void *a, const void *b)
{
	const struct req *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c != 0)
		return c;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* NewRequirement's checks, in its order. */
static rs_code
check(struct sv key, enum op op, const struct sv *val, size_t nval,
    long long *num, char *why, size_t whylen)
{
	const char *bad;
	size_t i;

	if ((bad = key_problem(key)) != NULL)
		return rs_why(RS_EPARSE, why, whylen, "invalid label key \"%.*s\": %s",
		    (int)key.n, key.p, bad);
	switch (op) {
	case OP_IN:
	case OP_NOTIN:
		if (nval == 0)
			return rs_why(RS_EPARSE, why, whylen, "key \"%.*s\": for 'in', "
			    "'notin' operators, values set can't be empty",
			    (int)key.n, key.p);
		break;
	case OP_EQ:
	case OP_DEQ:
	case OP_NE:
		if (nval != 1)
			return rs_why(RS_EPARSE, why, whylen, "key \"%.*s\": exact-match "
			    "compatibility requires one single value",
			    (int)key.n, key.p);
		break;
	case OP_EXISTS:
	case OP_NOTEXIST:
		if (nval != 0)
			return rs_why(RS_EPARSE, why, whylen, "key \"%.*s\": values set "
			    "must be empty for exists and does not exist",
			    (int)key.n, key.p);
		break;
	case OP_GT:
	case OP_LT:
		if (nval != 1 || parse_int64(val[0].p, val[0].n, num) != 0)
			return rs_why(RS_EPARSE, why, whylen, "key \"%.*s\": for 'gt', "
			    "'lt' operators, the value must be one integer",
			    (int)key.n, key.p);
		break;
	}
	for (i = 0; i < nval; i++)
		if ((bad = value_problem(val[i])) != NULL)
			return rs_why(RS_EPARSE, why, whylen, "invalid label value "
			    "\"%.*s\" for key \"%.*s\": %s", (int)val[i].n,
			    val[i].p, (int)key.n, key.p, bad);
	return RS_OK;
}

static char *
copy(char *dst, struct sv s)
{
	memcpy(dst, s.p, s.n);
	dst[s.n] = '\0';
	return dst + s.n + 1;
}

/* Checks and appends one requirement. A parsed value list is a set
 * (sets.String): is_set drops duplicates; LabelSelector values keep them. */
static rs_code
req_add(struct rs_selector *s, struct sv key, enum op op,
    const struct sv *val, size_t nval, int is_set, char *why, size_t whylen)
{
	struct req *r;
	size_t bytes = key.n + 1, i, j;
	long long num = 0;
	rs_code rc;
	char *p;

	rc = check(key, op, val, nval, &num, why, whylen);
	if (rc != RS_OK)
		return rc;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4;

		r = realloc(s->req, cap * sizeof *r);
		if (r == NULL)
			return oom(why, whylen);
		s->req = r;
		s->cap = cap;
	}
	r = &s->req[s->n];
	for (i = 0; i < nval; i++)
		bytes += val[i].n + 1;
	r->key = malloc(bytes);
	r->val = nval ? malloc(nval * sizeof *r->val) : NULL;
	if (r->key == NULL || (nval && r->val == NULL)) {
		free(r->key);
		free(r->val);
		return oom(why, whylen);
	}
	p = copy(r->key, key);
	for (i = 0; i < nval; i++) {
		r->val[i] = p;
		p = copy(p, val[i]);
	}
	if (nval > 1)
		qsort(r->val, nval, sizeof *r->val, str_cmp);
	for (i = j = 0; i < nval; i++)
		if (!is_set || j == 0 || strcmp(r->val[j - 1], r->val[i]) != 0)
			r->val[j++] = r->val[i];
	r->op = op;
	r->from_map = 0;
	r->nval = j;
	r->num = num;
	r->seq = s->n++;
	return RS_OK;
}

static struct rs_selector *
sel_new(int nothing)
{
	struct rs_selector *s = calloc(1, sizeof *s);

	if (s != NULL)
		s->nothing = nothing;
	return s;
}

/* Sorts by key. A map's pairs come first among equal keys, so a key the
 * JSON map gave twice is a run of map pairs: keep its last, as Go does. */
static rs_code
sel_done(struct rs_selector *s, rs_code rc, struct rs_selector **out)
{
	struct req *r;
	size_t i, j;

	if (rc != RS_OK) {
		rs_selector_free(s);
		return rc;
	}
	if (s->n > 1)
		qsort(s->req, s->n, sizeof *s->req, req_cmp);
	for (i = j = 0; i < s->n; i++) {
		r = &s->req[i];
		if (r->from_map && i + 1 < s->n && r[1].from_map &&
		    strcmp(r->key, r[1].key) == 0) {
			free(r->key);
			free(r->val);
			continue;
		}
		s->req[j++] = *r;
	}
	s->n = j;
	*out = s;
	return RS_OK;
}

/* ---- the string form ---- */

enum tok {
	T_END, T_ID, T_COMMA, T_OPAR, T_CPAR, T_NOT, T_EQ, T_DEQ, T_NE,
	T_GT, T_LT
};

struct parser {
	const char *s;
	size_t pos;        /* where the token after the lookahead starts */
	enum tok t;        /* the lookahead */
	struct sv lit;     /* its text */
	struct sv *val;    /* the values of the requirement being parsed */
	size_t nval, cap;
	char msg[512];
};

static int
blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static enum tok
special(int c)
{
	switch (c) {
	case '=': return T_EQ;
	case '!': return T_NOT;
	case '(': return T_OPAR;
	case ')': return T_CPAR;
	case ',': return T_COMMA;
	case '>': return T_GT;
	case '<': return T_LT;
	}
	return T_ID;
}

/* Reads the next token into the lookahead. "in" and "notin" stay
 * identifiers: only the operator position reads them as keywords, as
 * upstream's Values context does everywhere else. */
static void
lex(struct parser *p)
{
	const char *s = p->s;
	size_t i = p->pos, n = 0;

	while (blank(s[i]))
		i++;
	p->lit.p = s + i;
	if (s[i] == '\0') {
		p->t = T_END;
	} else if ((p->t = special(s[i])) != T_ID) {
		n = 1;
		if (s[i + 1] == '=' && (s[i] == '=' || s[i] == '!')) {
			p->t = s[i] == '=' ? T_DEQ : T_NE;
			n = 2;
		}
	} else {
		while (s[i + n] && !blank(s[i + n]) &&
		    special(s[i + n]) == T_ID)
			n++;
	}
	p->lit.n = n;
	p->pos = i + n;
}

/* Consumes the lookahead. */
static enum tok
next(struct parser *p, struct sv *lit)
{
	enum tok t = p->t;

	*lit = p->lit;
	lex(p);
	return t;
}

static int
is(struct sv s, const char *word)
{
	return s.n == strlen(word) && memcmp(s.p, word, s.n) == 0;
}

static rs_code
found(struct parser *p, struct sv lit, const char *expected)
{
	return rs_why(RS_EPARSE, p->msg, sizeof p->msg, "found '%.*s', expected: %s",
	    (int)lit.n, lit.p, expected);
}

static rs_code
push(struct parser *p, struct sv v)
{
	if (p->nval == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 8;
		struct sv *nv = realloc(p->val, cap * sizeof *nv);

		if (nv == NULL)
			return oom(p->msg, sizeof p->msg);
		p->val = nv;
		p->cap = cap;
	}
	p->val[p->nval++] = v;
	return RS_OK;
}

static const struct sv none = { "", 0 };

/* After '(': a possibly empty list of possibly empty values, up to and
 * not including ')'. "(,", ",,", ",)" each add "". */
static rs_code
parse_list(struct parser *p)
{
	struct sv lit;
	rs_code rc;

	for (;;) {
		switch (next(p, &lit)) {
		case T_ID:
			if ((rc = push(p, lit)) != RS_OK)
				return rc;
			if (p->t == T_CPAR)
				return RS_OK;
			if (p->t != T_COMMA)
				return found(p, p->lit, "',' or ')'");
			break;
		case T_COMMA:
			if (p->nval == 0 && (rc = push(p, none)) != RS_OK)
				return rc;
			if (p->t == T_CPAR)
				return push(p, none);
			if (p->t == T_COMMA && (rc = push(p, none)) != RS_OK)
				return rc;
			break;
		default:
			return found(p, lit, "',', or identifier");
		}
	}
}

static rs_code
parse_values(struct parser *p)
{
	struct sv lit;
	rs_code rc;

	if (next(p, &lit) != T_OPAR)
		return rs_why(RS_EPARSE, p->msg, sizeof p->msg,
		    "found '%.*s' expected: '('", (int)lit.n, lit.p);
	switch (p->t) {
	case T_ID:
	case T_COMMA:
		if ((rc = parse_list(p)) != RS_OK)
			return rc;
		next(p, &lit);
		return RS_OK;
	case T_CPAR:
		next(p, &lit);
		return push(p, none);
	default:
		return found(p, p->lit, "',', ')' or identifier");
	}
}

static rs_code
parse_exact(struct parser *p)
{
	struct sv lit;

	if (p->t == T_END || p->t == T_COMMA)
		return push(p, none);
	if (next(p, &lit) == T_ID)
		return push(p, lit);
	return found(p, lit, "identifier");
}

static rs_code
parse_requirement(struct parser *p, struct rs_selector *s)
{
	struct sv key, lit;
	enum tok t;
	enum op op;
	const char *bad;
	int neg = 0;
	rs_code rc;

	p->nval = 0;
	if ((t = next(p, &key)) == T_NOT) {
		neg = 1;
		t = next(p, &key);
	}
	if (t != T_ID)
		return found(p, key, "identifier");
	if ((bad = key_problem(key)) != NULL)
		return rs_why(RS_EPARSE, p->msg, sizeof p->msg,
		    "invalid label key \"%.*s\": %s", (int)key.n, key.p, bad);
	if (neg || p->t == T_END || p->t == T_COMMA)
		return req_add(s, key, neg ? OP_NOTEXIST : OP_EXISTS, NULL, 0,
		    1, p->msg, sizeof p->msg);
	switch (next(p, &lit)) {
	case T_ID:
		if (is(lit, "in"))
			op = OP_IN;
		else if (is(lit, "notin"))
			op = OP_NOTIN;
		else
			goto badop;
		break;
	case T_EQ: op = OP_EQ; break;
	case T_DEQ: op = OP_DEQ; break;
	case T_NE: op = OP_NE; break;
	case T_GT: op = OP_GT; break;
	case T_LT: op = OP_LT; break;
	default:
	badop:
		return found(p, lit, "in, notin, =, ==, !=, gt, lt");
	}
	rc = (op == OP_IN || op == OP_NOTIN) ? parse_values(p) : parse_exact(p);
	if (rc != RS_OK)
		return rc;
	return req_add(s, key, op, p->val, p->nval, 1, p->msg, sizeof p->msg);
}

/* Returns with *inreq set when the error is inside a requirement, which
 * upstream reports as "unable to parse requirement: ...". */
static rs_code
parse_all(struct parser *p, struct rs_selector *s, int *inreq)
{
	struct sv lit;
	rs_code rc;

	for (;;) {
		if (p->t == T_END)
			return RS_OK;
		if (p->t != T_ID && p->t != T_NOT)
			return found(p, p->lit,
			    "!, identifier, or 'end of string'");
		if ((rc = parse_requirement(p, s)) != RS_OK) {
			*inreq = 1;
			return rc;
		}
		switch (next(p, &lit)) {
		case T_END:
			return RS_OK;
		case T_COMMA:
			if (p->t != T_ID && p->t != T_NOT)
				return found(p, p->lit,
				    "identifier after ','");
			break;
		default:
			return found(p, lit, "',' or 'end of string'");
		}
	}
}

rs_code
rs_selector_parse(const char *str, struct rs_selector **out,
    char *why, size_t whylen)
{
	struct parser p = { .s = str };
	struct rs_selector *s;
	int inreq = 0;
	rs_code rc;

	*out = NULL;
	if ((s = sel_new(0)) == NULL)
		return oom(why, whylen);
	lex(&p);
	rc = parse_all(&p, s, &inreq);
	free(p.val);
	if (rc == RS_EPARSE)
		rs_why(RS_EPARSE, why, whylen, "%s%s",
		    inreq ? "unable to parse requirement: " : "", p.msg);
	else if (rc != RS_OK)
		oom(why, whylen);
	return sel_done(s, rc, out);
}

/* ---- JSON forms ---- */

/* A field of o; JSON null reads as absent, as Go decodes it. */
static const cJSON *
field(const cJSON *o, const char *name)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNull(f) ? NULL : f;
}

static struct sv
sv_of(const char *s)
{
	struct sv v = { s, strlen(s) };

	return v;
}

/* Every pair of a string map as key=value. */
static rs_code
add_map(struct rs_selector *s, const cJSON *m, const char *what,
    char *why, size_t whylen)
{
	const cJSON *c;
	struct sv v;
	rs_code rc;

	if (m == NULL)
		return RS_OK;
	if (!cJSON_IsObject(m))
		return rs_why(RS_EPARSE, why, whylen, "%s is not a JSON object", what);
	cJSON_ArrayForEach(c, m) {
		if (!cJSON_IsString(c) || c->valuestring == NULL)
			return rs_why(RS_EPARSE, why, whylen, "%s: value of \"%s\" is not "
			    "a string", what, c->string);
		v = sv_of(c->valuestring);
		rc = req_add(s, sv_of(c->string), OP_EQ, &v, 1, 0, why, whylen);
		if (rc != RS_OK)
			return rc;
		s->req[s->n - 1].from_map = 1;
	}
	return RS_OK;
}

/* A string field of a LabelSelectorRequirement: absent or null is "". */
static rs_code
expr_str(const cJSON *e, const char *name, const char **out,
    char *why, size_t whylen)
{
	const cJSON *f = e ? field(e, name) : NULL;

	*out = "";
	if (f == NULL)
		return RS_OK;
	if (!cJSON_IsString(f) || f->valuestring == NULL)
		return rs_why(RS_EPARSE, why, whylen, "matchExpressions: %s is not a "
		    "string", name);
	*out = f->valuestring;
	return RS_OK;
}

static rs_code
expr_op(const char *name, enum op *op, char *why, size_t whylen)
{
	static const struct { const char *name; enum op op; } ops[] = {
		{ "In", OP_IN }, { "NotIn", OP_NOTIN },
		{ "Exists", OP_EXISTS }, { "DoesNotExist", OP_NOTEXIST },
	};
	size_t i;

	for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (strcmp(name, ops[i].name) == 0) {
			*op = ops[i].op;
			return RS_OK;
		}
	return rs_why(RS_EPARSE, why, whylen, "\"%s\" is not a valid pod selector "
	    "operator", name);
}

/* One LabelSelectorRequirement. A null element decodes as the zero value
 * in Go, so it fails on its empty operator; the operator is checked
 * before the key, as upstream does. */
static rs_code
add_expr(struct rs_selector *s, const cJSON *e, char *why, size_t whylen)
{
	const cJSON *vals, *c;
	const char *key, *opname;
	struct sv *v = NULL;
	size_t n = 0;
	enum op op = OP_EXISTS;
	rs_code rc;

	if (cJSON_IsNull(e))
		e = NULL;
	if (e != NULL && !cJSON_IsObject(e))
		return rs_why(RS_EPARSE, why, whylen, "matchExpressions: an element is "
		    "not a JSON object");
	if ((rc = expr_str(e, "key", &key, why, whylen)) != RS_OK ||
	    (rc = expr_str(e, "operator", &opname, why, whylen)) != RS_OK ||
	    (rc = expr_op(opname, &op, why, whylen)) != RS_OK)
		return rc;
	vals = e ? field(e, "values") : NULL;
	if (vals != NULL && !cJSON_IsArray(vals))
		return rs_why(RS_EPARSE, why, whylen, "matchExpressions: values of "
		    "\"%s\" is not an array", key);
	if (vals != NULL && cJSON_GetArraySize(vals) > 0) {
		v = calloc(cJSON_GetArraySize(vals), sizeof *v);
		if (v == NULL)
			return oom(why, whylen);
	}
	cJSON_ArrayForEach(c, vals) {
		if (cJSON_IsNull(c)) {
			v[n++] = none;
		} else if (cJSON_IsString(c) && c->valuestring != NULL) {
			v[n++] = sv_of(c->valuestring);
		} else {
			free(v);
			return rs_why(RS_EPARSE, why, whylen, "matchExpressions: a value "
			    "of \"%s\" is not a string", key);
		}
	}
	rc = req_add(s, sv_of(key), op, v, n, 0, why, whylen);
	free(v);
	return rc;
}

rs_code
rs_selector_from_label_selector(const cJSON *ls, struct rs_selector **out,
    char *why, size_t whylen)
{
	struct rs_selector *s;
	const cJSON *me, *e;
	rs_code rc;

	*out = NULL;
	if (ls != NULL && !cJSON_IsNull(ls) && !cJSON_IsObject(ls))
		return rs_why(RS_EPARSE, why, whylen, "label selector is not a JSON object");
	if ((s = sel_new(ls == NULL || cJSON_IsNull(ls))) == NULL)
		return oom(why, whylen);
	if (s->nothing)
		return sel_done(s, RS_OK, out);
	rc = add_map(s, field(ls, "matchLabels"), "matchLabels", why, whylen);
	me = field(ls, "matchExpressions");
	if (rc == RS_OK && me != NULL && !cJSON_IsArray(me))
		rc = rs_why(RS_EPARSE, why, whylen, "matchExpressions is not a JSON array");
	if (rc == RS_OK && me != NULL)
		cJSON_ArrayForEach(e, me)
			if ((rc = add_expr(s, e, why, whylen)) != RS_OK)
				break;
	return sel_done(s, rc, out);
}

rs_code
rs_selector_from_map(const cJSON *map, struct rs_selector **out,
    char *why, size_t whylen)
{
	struct rs_selector *s;

	*out = NULL;
	if ((s = sel_new(map == NULL || cJSON_IsNull(map))) == NULL)
		return oom(why, whylen);
	if (s->nothing)
		return sel_done(s, RS_OK, out);
	return sel_done(s, add_map(s, map, "selector", why, whylen), out);
}

/* ---- use ---- */

static int
has_value(const struct req *r, const char *v)
{
	size_t i;

	for (i = 0; i < r->nval; i++)
		if (strcmp(r->val[i], v) == 0)
			return 1;
	return 0;
}

static int
req_matches(const struct req *r, const struct rs_labels *l)
{
	const char *v = rs_labels_get(l, r->key);
	long long x;

	switch (r->op) {
	case OP_EXISTS:
		return v != NULL;
	case OP_NOTEXIST:
		return v == NULL;
	case OP_EQ:
	case OP_DEQ:
	case OP_IN:
		return v != NULL && has_value(r, v);
	case OP_NE:
	case OP_NOTIN:
		return v == NULL || !has_value(r, v);
	case OP_GT:
	case OP_LT:
		if (v == NULL || parse_int64(v, strlen(v), &x) != 0)
			return 0;
		return r->op == OP_GT ? x > r->num : x < r->num;
	}
	return 0;
}

int
rs_selector_matches(const struct rs_selector *s, const struct rs_labels *l)
{
	size_t i;

	if (s->nothing)
		return 0;
	for (i = 0; i < s->n; i++)
		if (!req_matches(&s->req[i], l))
			return 0;
	return 1;
}

int
rs_selector_is_empty(const struct rs_selector *s)
{
	return !s->nothing && s->n == 0;
}

int
rs_selector_is_nothing(const struct rs_selector *s)
{
	return s->nothing;
}

static size_t
put(char *dst, size_t at, const char *src)
{
	size_t n = strlen(src);

	if (dst != NULL)
		memcpy(dst + at, src, n);
	return at + n;
}

/* Writes the string form to dst (if not NULL); returns its length. */
static size_t
render(const struct rs_selector *s, char *dst)
{
	const struct req *r;
	size_t at = 0, i, j;

	for (i = 0; i < s->n; i++) {
		r = &s->req[i];
		if (i > 0)
			at = put(dst, at, ",");
		if (r->op == OP_NOTEXIST)
			at = put(dst, at, "!");
		at = put(dst, at, r->key);
		at = put(dst, at, opstr[r->op]);
		for (j = 0; j < r->nval; j++) {
			if (j > 0)
				at = put(dst, at, ",");
			at = put(dst, at, r->val[j]);
		}
		if (r->op == OP_IN || r->op == OP_NOTIN)
			at = put(dst, at, ")");
	}
	return at;
}

rs_code
rs_selector_string(const struct rs_selector *s, char **out)
{
	size_t n = render(s, NULL);

	if ((*out = malloc(n + 1)) == NULL)
		return RS_ENOMEM;
	render(s, *out);
	(*out)[n] = '\0';
	return RS_OK;
}

void
rs_selector_free(struct rs_selector *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n; i++) {
		free(s->req[i].key);
		free(s->req[i].val);
	}
	free(s->req);
	free(s);
}
