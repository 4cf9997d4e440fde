/* exp_dump.c: the expectations store read out for people and tools: one
 * record, the next after a cursor, a record as JSON, the whole as NDJSON. */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "clock.h"
#include "exp_store.h"
#include "json.h"

void
rs_exp_record_free(struct rs_exp_record *r)
{
	free(r->pods);
	r->pods = NULL;
	r->npods = 0;
}

/* Copies key k's set into r; LMDB keeps it sorted. One allocation holds
 * the pointers and the strings. */
static rs_code
set_copy(struct tx *x, MDB_val *k, struct rs_exp_record *r)
{
	MDB_cursor *c;
	MDB_val kk = *k, p;
	size_t n = 0, i, count;
	char *s;
	int err;
	rs_code rc = RS_OK;

	if ((err = mdb_cursor_open(x->t, x->e->deleting, &c)) != 0)
		return exp_mdb_code(x->e, x, err);
	err = mdb_cursor_get(c, &kk, &p, MDB_SET_KEY);
	if (err == MDB_NOTFOUND)
		goto out;
	if (err != 0 || (err = mdb_cursor_count(c, &count)) != 0) {
		rc = exp_mdb_code(x->e, x, err);
		goto out;
	}
	if ((r->pods = malloc(count * (sizeof(char *) + RS_EXP_KEY_MAX + 1)))
	    == NULL) {
		rc = RS_ENOMEM;
		goto out;
	}
	s = (char *)(r->pods + count);
	for (i = 0; err == 0 && i < count; i++) {
		if (!exp_key_copy(&p, s)) {
			rc = exp_damaged(x->e, x, "a pod key fails its check");
			goto out;
		}
		r->pods[n++] = s;
		s += p.mv_size + 1;
		err = mdb_cursor_get(c, &kk, &p, MDB_NEXT_DUP);
	}
	if (err != 0 && err != MDB_NOTFOUND)
		rc = exp_mdb_code(x->e, x, err);
out:
	r->npods = n;
	mdb_cursor_close(c);
	return rc;
}

static rs_code
record_copy(struct tx *x, MDB_val *k, const struct exp_val *v, int64_t now,
    struct rs_exp_record *r)
{
	memset(r, 0, sizeof *r);
	if (!exp_key_copy(k, r->key))
		return exp_damaged(x->e, x, "a key fails its check");
	r->add = v->add;
	r->del = v->del;
	r->timestamp_ns = v->ts;
	r->age_ns = (int64_t)((uint64_t)now - (uint64_t)v->ts);
	r->why = exp_judge(v, now);
	return set_copy(x, k, r);
}

rs_code
rs_exp_get(struct rs_exp *e, const char *key, struct rs_exp_record *out)
{
	struct exp_val v;
	struct tx x;
	MDB_val k;
	rs_code rc;

	memset(out, 0, sizeof *out);
	if ((rc = exp_tx_begin_key(e, &x, MDB_RDONLY, key, &k)) != RS_OK)
		return rc;
	if ((rc = exp_load(&x, &k, &v)) == RS_OK)
		rc = record_copy(&x, &k, &v, exp_now(), out);
	exp_reader_end(&x);
	if (rc != RS_OK)
		rs_exp_record_free(out);
	return rc;
}

/* The record after c (or the first), in transaction x. */
static rs_code
next_in(struct tx *x, struct rs_exp_cursor *c, int64_t now,
    struct rs_exp_record *out)
{
	MDB_cursor *cur;
	MDB_val k, d;
	struct exp_val v;
	int err;
	rs_code rc;

	if ((err = mdb_cursor_open(x->t, x->e->expect, &cur)) != 0)
		return exp_mdb_code(x->e, x, err);
	if (!c->started) {
		err = mdb_cursor_get(cur, &k, &d, MDB_FIRST);
	} else {
		k.mv_data = c->after;
		k.mv_size = strlen(c->after);
		err = mdb_cursor_get(cur, &k, &d, MDB_SET_RANGE);
		if (err == 0 && k.mv_size == strlen(c->after) &&
		    memcmp(k.mv_data, c->after, k.mv_size) == 0)
			err = mdb_cursor_get(cur, &k, &d, MDB_NEXT);
	}
	if (err == MDB_NOTFOUND)
		rc = RS_EEOF;
	else if (err != 0)
		rc = exp_mdb_code(x->e, x, err);
	else if (!exp_valid(&d, &v))
		rc = exp_damaged(x->e, x, "a record fails its check");
	else
		rc = record_copy(x, &k, &v, now, out);
	if (rc == RS_OK) {
		memcpy(c->after, out->key, sizeof c->after);
		c->started = 1;
	}
	mdb_cursor_close(cur);
	return rc;
}

rs_code
rs_exp_next(struct rs_exp *e, struct rs_exp_cursor *c,
    struct rs_exp_record *out)
{
	struct tx x;
	rs_code rc;

	memset(out, 0, sizeof *out);
	if ((rc = exp_tx_begin(e, &x, MDB_RDONLY)) != RS_OK)
		return rc;
	rc = next_in(&x, c, exp_now(), out);
	exp_reader_end(&x);
	if (rc != RS_OK)
		rs_exp_record_free(out);
	return rc;
}

const char *
rs_exp_why_name(enum rs_exp_why why)
{
	switch (why) {
	case RS_EXP_NO_RECORD: return "no-record";
	case RS_EXP_FULFILLED: return "fulfilled";
	case RS_EXP_EXPIRED: return "expired";
	case RS_EXP_PENDING: return "pending";
	}
	return "unknown";
}

rs_code
rs_exp_record_json(const struct rs_exp_record *r, char **out)
{
	char ts[40];
	cJSON *o, *a;
	size_t i;

	*out = NULL;
	rs_format_rfc3339_micro(rs_wall_now() - r->age_ns / 1e9, ts);
	if ((o = cJSON_CreateObject()) == NULL)
		return RS_ENOMEM;
	cJSON_AddStringToObject(o, "key", r->key);
	cJSON_AddNumberToObject(o, "add", (double)r->add);
	cJSON_AddNumberToObject(o, "del", (double)r->del);
	cJSON_AddStringToObject(o, "timestamp", ts);
	cJSON_AddNumberToObject(o, "age", r->age_ns / 1e9);
	a = cJSON_AddArrayToObject(o, "deleting");
	for (i = 0; a && i < r->npods; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(r->pods[i]));
	cJSON_AddBoolToObject(o, "satisfied", r->why != RS_EXP_PENDING);
	cJSON_AddStringToObject(o, "reason", rs_exp_why_name(r->why));
	*out = rs_json_print(o);
	cJSON_Delete(o);
	return *out ? RS_OK : RS_ENOMEM;
}

static rs_code
dump_one(const struct rs_exp_record *r, struct rs_line_writer *w)
{
	char *line;
	rs_code rc;

	if ((rc = rs_exp_record_json(r, &line)) != RS_OK)
		return rc;
	rc = rs_line_put(w, line, strlen(line));
	cJSON_free(line);
	return rc;
}

rs_code
rs_exp_dump(struct rs_exp *e, struct rs_line_writer *w)
{
	struct rs_exp_cursor c = { .started = 0 };
	struct rs_exp_record r;
	struct tx x;
	int64_t now = exp_now();
	rs_code rc;

	/* one read transaction: a snapshot, and no writer waits for it */
	if ((rc = exp_tx_begin(e, &x, MDB_RDONLY)) != RS_OK)
		return rc;
	while ((rc = next_in(&x, &c, now, &r)) == RS_OK) {
		rc = dump_one(&r, w);
		rs_exp_record_free(&r);
		if (rc != RS_OK)
			break;
	}
	exp_reader_end(&x);
	return rc == RS_EEOF ? RS_OK : rc;
}
