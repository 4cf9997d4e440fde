/* jsplice.h: an object's JSON text copied with some of its members
 * changed, dropped or moved, without a tree: the text is walked with
 * rs_jscan (jscan.h), so it must be one the validator took.
 *
 * What a tree's edits would give, member for member: an edit names the
 * first member of its name only (as cJSON's look-ups find it), the other
 * members keep their order and their text, and the levels walked come out
 * compact (no whitespace between members; values copied as they are). */
#ifndef RS_JSPLICE_H
#define RS_JSPLICE_H

#include <stddef.h>

#include "jscan.h"

/* One edit; a list of them ends with name NULL, and only its first 16
 * are read. */
struct rs_jsplice {
	const char *name;        /* the member, a name without escapes */
	const char *val;         /* set: its value's text (len bytes), in
	                            place, or last when missing or last is
	                            set; NULL: dropped (unless in) */
	size_t len;
	int last;                /* with val: the old member dropped, the
	                            new one written last */
	const struct rs_jsplice *in;   /* edits of its value instead, when
	                                  that is an object (else copied) */
	struct rs_jspan *was;    /* not NULL: the old value's span, empty
	                            (off == end) when there was none */
};

/* The most bytes rs_jsplice may write for obj with edits e. */
size_t rs_jsplice_room(struct rs_jspan obj, const struct rs_jsplice *e);
/* Copies obj (buf's validated object) to out with the edits e; the end
 * of what was written is returned. A value that is no object is copied
 * as it is, whatever the edits. */
char *rs_jsplice(char *out, const char *buf, struct rs_jspan obj,
    const struct rs_jsplice *e);

#endif
