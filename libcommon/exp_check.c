/* exp_check.c: the integrity check of the expectations store: every
 * value passes its check, every pod set has its record. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "exp_store.h"

struct chk {
	struct tx *x;
	char *why;
	size_t whylen;
	uint64_t records;
};

static rs_code chk_fail(struct chk *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static rs_code
chk_fail(struct chk *c, const char *fmt, ...)
{
	va_list ap;

	if (c->why && c->whylen) {
		va_start(ap, fmt);
		vsnprintf(c->why, c->whylen, fmt, ap);
		va_end(ap);
	}
	return RS_EPARSE;
}

/* Walks db calling fn on every pair; MDB errors become the reason. */
static rs_code
chk_walk(struct chk *c, MDB_dbi db, const char *name,
    rs_code (*fn)(struct chk *, MDB_val *, MDB_val *))
{
	MDB_cursor *cur;
	MDB_val k, d;
	int err;
	rs_code rc = RS_OK;

	if ((err = mdb_cursor_open(c->x->t, db, &cur)) != 0)
		return chk_fail(c, "%s: %s", name, mdb_strerror(err));
	for (err = mdb_cursor_get(cur, &k, &d, MDB_FIRST); err == 0 &&
	    rc == RS_OK; err = mdb_cursor_get(cur, &k, &d, MDB_NEXT))
		rc = fn(c, &k, &d);
	mdb_cursor_close(cur);
	if (rc == RS_OK && err != MDB_NOTFOUND)
		rc = chk_fail(c, "%s: %s", name, mdb_strerror(err));
	return rc;
}

static int
exp_ok(const MDB_val *d)
{
	struct exp_val v;

	return exp_valid(d, &v);
}

static int
wr_ok(const MDB_val *d)
{
	struct rs_exp_written v;

	return d->mv_size == WR_LEGACY || exp_wr_decode(d, &v);
}

/* One value of db, which ok checks; what says "the [what ]record". */
static rs_code
chk_value(struct chk *c, MDB_val *k, MDB_val *d, const char *db,
    const char *what, int (*ok)(const MDB_val *))
{
	char key[RS_EXP_KEY_MAX + 1];

	if (!exp_key_copy(k, key))
		return chk_fail(c, "a key of %s is malformed", db);
	if (!ok(d))
		return chk_fail(c, "the %srecord of %s fails its check", what,
		    key);
	return RS_OK;
}

static rs_code
chk_record(struct chk *c, MDB_val *k, MDB_val *d)
{
	rs_code rc = chk_value(c, k, d, "expect", "", exp_ok);

	if (rc == RS_OK)
		c->records++;
	return rc;
}

/* A set exists only beside its record: expect_deletions writes both in
 * one transaction and delete removes both in one. */
static rs_code
chk_pod(struct chk *c, MDB_val *k, MDB_val *d)
{
	char key[RS_EXP_KEY_MAX + 1], pod[RS_EXP_KEY_MAX + 1];
	MDB_val r;

	if (!exp_key_copy(k, key) || !exp_key_copy(d, pod))
		return chk_fail(c, "a key of deleting is malformed");
	if (mdb_get(c->x->t, c->x->e->expect, k, &r) != 0)
		return chk_fail(c, "%s awaits the deletion of %s without a "
		    "record", key, pod);
	return RS_OK;
}

static rs_code
chk_written(struct chk *c, MDB_val *k, MDB_val *d)
{
	return chk_value(c, k, d, "written", "written ", wr_ok);
}

rs_code
rs_exp_check(struct rs_exp *e, char *why, size_t whylen)
{
	struct chk c = { .why = why, .whylen = whylen };
	struct tx x;
	rs_code rc;

	if (why && whylen)
		why[0] = '\0';
	if ((rc = exp_tx_begin(e, &x, MDB_RDONLY | TX_REPAIR)) != RS_OK)
		return rc;
	c.x = &x;
	if ((rc = chk_walk(&c, e->expect, "expect", chk_record)) == RS_OK &&
	    (rc = chk_walk(&c, e->deleting, "deleting", chk_pod)) == RS_OK)
		rc = chk_walk(&c, e->written, "written", chk_written);
	if (rc == RS_OK && c.records != exp_entries(x.t, e->expect))
		rc = chk_fail(&c, "expect holds %llu entries, %llu walked",
		    (unsigned long long)exp_entries(x.t, e->expect),
		    (unsigned long long)c.records);
	exp_reader_end(&x);
	return rc;
}
