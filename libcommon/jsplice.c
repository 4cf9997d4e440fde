/* jsplice.c: an object's text with members changed (jsplice.h). */
#include <string.h>

#include "jsplice.h"

#define EDITS_MAX 16     /* edits of one object read (jsplice.h) */

size_t
rs_jsplice_room(struct rs_jspan obj, const struct rs_jsplice *e)
{
	size_t n = obj.end - obj.off + 2;

	for (; e->name != NULL; e++) {
		/* a member written last: its name, quotes, colon, comma */
		if (e->val != NULL)
			n += e->len + strlen(e->name) + 4;
		if (e->in != NULL)
			n += rs_jsplice_room((struct rs_jspan){ 0, 0 }, e->in);
	}
	return n;
}

static char *
put(char *out, const char *s, size_t n)
{
	memcpy(out, s, n);
	return out + n;
}

static char *
put_span(char *out, const char *buf, struct rs_jspan v)
{
	return put(out, buf + v.off, v.end - v.off);
}

/* The first edit not yet used that names key; -1 when none does. */
static int
edit_for(const char *buf, struct rs_jspan key, const struct rs_jsplice *e,
    const unsigned char *used)
{
	for (int i = 0; i < EDITS_MAX && e[i].name != NULL; i++)
		if (!used[i] && rs_jscan_keyeq(buf, key, e[i].name))
			return i;
	return -1;
}

/* One member, or none when the edit drops it or moves it last. */
static char *
member(char *out, const char *buf, struct rs_jspan k, struct rs_jspan v,
    const struct rs_jsplice *e, int *first)
{
	if (e != NULL && e->in == NULL && (e->val == NULL || e->last))
		return out;
	if (!*first)
		*out++ = ',';
	*first = 0;
	out = put_span(out, buf, k);
	*out++ = ':';
	if (e == NULL)
		return put_span(out, buf, v);
	if (e->in != NULL)
		return rs_jsplice(out, buf, v, e->in);
	return put(out, e->val, e->len);
}

char *
rs_jsplice(char *out, const char *buf, struct rs_jspan obj,
    const struct rs_jsplice *e)
{
	unsigned char used[EDITS_MAX] = { 0 };
	struct rs_jiter it;
	struct rs_jspan k, v;
	int first = 1, i;

	for (i = 0; i < EDITS_MAX && e[i].name != NULL; i++)
		if (e[i].was != NULL)
			e[i].was->off = e[i].was->end = obj.off;
	if (rs_jscan_type(buf, obj) != RS_JOBJECT ||
	    rs_jscan_iter(&it, buf, obj) != RS_OK)
		return put_span(out, buf, obj);
	*out++ = '{';
	while (rs_jscan_member(&it, &k, &v) == RS_OK) {
		if ((i = edit_for(buf, k, e, used)) >= 0) {
			used[i] = 1;
			if (e[i].was != NULL)
				*e[i].was = v;
		}
		out = member(out, buf, k, v, i >= 0 ? &e[i] : NULL, &first);
	}
	for (i = 0; i < EDITS_MAX && e[i].name != NULL; i++) {
		if (e[i].val == NULL || e[i].in != NULL ||
		    (used[i] && !e[i].last))
			continue;
		if (!first)
			*out++ = ',';
		first = 0;
		*out++ = '"';
		out = put(out, e[i].name, strlen(e[i].name));
		out = put(out, "\":", 2);
		out = put(out, e[i].val, e[i].len);
	}
	*out++ = '}';
	return out;
}
