/* jscan.h: a strict JSON scanner over a byte buffer; it builds nothing.
 *
 * For hot paths where a tree per object costs more than reading it: a text
 * is validated once (rs_jscan_doc, rs_jscan_value), then walked by span:
 * members, elements, look-ups by key, strings unescaped into the caller's
 * buffer. Nothing is allocated, and the validator is iterative with a
 * fixed depth bound, so hostile input costs neither heap nor stack.
 *
 * Valid is RFC 8259, strictly: no trailing commas, no leading zeros or
 * '+' in numbers, no control characters in strings, only the escapes the
 * RFC lists (\uXXXX high surrogates paired with a low one, no lone ones),
 * UTF-8 as RFC 3629 has it (no overlong forms, no surrogates, nothing
 * above U+10FFFF: the rule of json.c), containers nested at most
 * RS_JSCAN_DEPTH deep, nothing but whitespace around a document.
 *
 * A span is buf[off..end), with no whitespace around it; a string's span,
 * and a member key's, includes the quotes.
 *
 * The walkers (rs_jscan_iter and everything after it in this file, but
 * rs_jscan_str) trust their text: they are for values that the validator
 * accepted. Given text it did not, they never read outside the span and
 * never loop, but may take malformed text for something. */
#ifndef RS_JSCAN_H
#define RS_JSCAN_H

#include <stddef.h>

#include "code.h"

#define RS_JSCAN_DEPTH 512

enum rs_jtype {
	RS_JNONE = 0,     /* an empty span, or not the start of a value */
	RS_JOBJECT,
	RS_JARRAY,
	RS_JSTRING,
	RS_JNUMBER,
	RS_JTRUE,
	RS_JFALSE,
	RS_JNULL
};

struct rs_jspan {
	size_t off, end;
};

/* Validates the one value that starts at buf[off] (after whitespace) and
 * ends within buf[0..len): RS_OK with its span in *v, or RS_EPARSE with
 * the offset of the first bad byte in *where (when not NULL). */
rs_code rs_jscan_value(const char *buf, size_t len, size_t off,
    struct rs_jspan *v, size_t *where);
/* The same for the whole of buf[0..len): one value, whitespace around. */
rs_code rs_jscan_doc(const char *buf, size_t len, struct rs_jspan *v,
    size_t *where);
/* The same for a document that is to go inside other containers: it may
 * nest max_depth deep (at most RS_JSCAN_DEPTH), so that the whole stays
 * within what the scanner takes. */
rs_code rs_jscan_doc_within(const char *buf, size_t len, size_t max_depth,
    struct rs_jspan *v, size_t *where);

/* The type of a value, from its first byte. */
enum rs_jtype rs_jscan_type(const char *buf, struct rs_jspan v);

/* Members of an object, or elements of an array, one at a time, walked
 * in place: the closing bracket is found by the walk, so the span a walk
 * starts from may run past the container (to the end of the text around
 * it) and a container is read once, not skipped first and then walked. */
struct rs_jiter {
	const char *buf;
	size_t start;        /* the opening bracket */
	size_t pos;          /* the next byte to read */
	size_t end;          /* a bound: the closing bracket is before it */
};
/* Walks the container that starts at v.off (v.end: its end, or a bound);
 * RS_EPARSE when there is none there. */
rs_code rs_jscan_iter(struct rs_jiter *it, const char *buf, struct rs_jspan v);
/* The next member: RS_OK with its key and value, RS_EEOF after the last
 * (it->pos is then the closing bracket), RS_EPARSE on malformed text. */
rs_code rs_jscan_member(struct rs_jiter *it, struct rs_jspan *key,
    struct rs_jspan *val);
/* The next element, or the value of the member whose key was just read,
 * the same way. */
rs_code rs_jscan_elem(struct rs_jiter *it, struct rs_jspan *val);
/* The next value of the container walked: an element of a list, the
 * value of an object's member (its key passed over), as
 * cJSON_ArrayForEach walks either. */
rs_code rs_jscan_value_next(struct rs_jiter *it, struct rs_jspan *val);
/* The next member's key only: its value is read next, by rs_jscan_elem or
 * rs_jscan_enter. */
rs_code rs_jscan_key(struct rs_jiter *it, struct rs_jspan *key);
/* Walks the next value, a container, with sub, without skipping it first:
 * RS_OK, RS_EEOF after the last, or RS_EPARSE when the value is not a
 * container (it is left as it was: rs_jscan_elem skips the value). */
rs_code rs_jscan_enter(struct rs_jiter *it, struct rs_jiter *sub);
/* After sub's walk returned RS_EEOF: it goes on past the container, whose
 * span is *v (when not NULL). RS_EPARSE when sub is not at its end. */
rs_code rs_jscan_leave(struct rs_jiter *it, const struct rs_jiter *sub,
    struct rs_jspan *v);

/* Whether the key (or string) span, unescaped, is s. */
int rs_jscan_keyeq(const char *buf, struct rs_jspan key, const char *s);
/* The first member of obj named key: RS_OK with its value in *val, or
 * RS_ENOTFOUND (also when obj is not an object). */
rs_code rs_jscan_find(const char *buf, struct rs_jspan obj, const char *key,
    struct rs_jspan *val);
/* The first member of obj named names[i], for each of the n names, in
 * one walk: its value in out[i], or an empty span (RS_JNONE) when there
 * is none. RS_EPARSE, every out[i] empty, when obj is not an object. */
rs_code rs_jscan_pick(const char *buf, struct rs_jspan obj,
    const char *const *names, struct rs_jspan *out, size_t n);
/* Walks object keys from v; the path ends with NULL. RS_OK with the value
 * reached in *out, or RS_ENOTFOUND when a step is missing. */
rs_code rs_jscan_get(const char *buf, struct rs_jspan v, struct rs_jspan *out,
    ...) __attribute__((sentinel));

/* Copies the string s unescaped (UTF-8) into out, NUL-terminated; *n (when
 * not NULL) is its length, which counts any NUL that \u0000 put inside.
 * RS_ETOOBIG when it does not fit outlen bytes with its NUL (out then holds
 * what fit, NUL-terminated, when outlen > 0); RS_EPARSE when s is not a
 * string. */
rs_code rs_jscan_unescape(const char *buf, struct rs_jspan s, char *out,
    size_t outlen, size_t *n);

/* The number v as strtod reads it (out of range: HUGE_VAL or 0, as
 * strtod has it); RS_EPARSE when v is not a number, RS_ENOMEM when a
 * number of 64 digits or more finds no memory for its copy. */
rs_code rs_jscan_double(const char *buf, struct rs_jspan v, double *out);

/* The string at a path of object keys in the document buf[0..len), which
 * it validates first: RS_OK with the string in out (as rs_jscan_unescape),
 * RS_EPARSE when buf is not valid, RS_ENOTFOUND when a step is missing or
 * the value is not a string, RS_ETOOBIG. The path ends with NULL. */
rs_code rs_jscan_str(const char *buf, size_t len, char *out, size_t outlen,
    ...) __attribute__((sentinel));

#endif
