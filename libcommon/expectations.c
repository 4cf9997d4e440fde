/* expectations.c: the controller expectations (creations and deletions
 * awaited per controller key, with the pods awaited by name), upstream's
 * ControllerExpectations and UIDTrackingControllerExpectations kept in
 * the LMDB store (exp_env.c) so that they outlive a process. */
#include <string.h>

#include "exp_store.h"

static void
exp_seal(struct exp_val *v)
{
	v->magic = EXP_MAGIC;
	v->pad = 0;
	v->csum = exp_sum(v, offsetof(struct exp_val, csum));
}

int
exp_valid(const MDB_val *d, struct exp_val *out)
{
	if (d->mv_size != sizeof *out)
		return 0;
	memcpy(out, d->mv_data, sizeof *out);
	return out->magic == EXP_MAGIC &&
	    out->csum == exp_sum(out, offsetof(struct exp_val, csum));
}

/* key's record: RS_OK, RS_ENOTFOUND, or RS_EPARSE when damaged. */
rs_code
exp_load(struct tx *x, MDB_val *k, struct exp_val *v)
{
	MDB_val d;
	rs_code rc = exp_get(x, x->e->expect, k, &d);

	if (rc == RS_OK && !exp_valid(&d, v))
		rc = exp_damaged(x->e, x, "a record fails its check");
	return rc;
}

static rs_code
exp_store(struct tx *x, MDB_val *k, struct exp_val *v)
{
	MDB_val d = { .mv_size = sizeof *v, .mv_data = v };

	exp_seal(v);
	return exp_put(x, x->e->expect, k, &d, 0);
}

static rs_code
set_counts(struct rs_exp *e, const char *key, int64_t add, int64_t dels)
{
	struct exp_val v = { .add = add, .del = dels, .ts = exp_now() };
	struct tx x;
	MDB_val k;
	rs_code rc;

	if ((rc = exp_tx_begin_key(e, &x, 0, key, &k)) != RS_OK)
		return rc;
	return exp_tx_end(&x, exp_store(&x, &k, &v));
}

rs_code
rs_exp_expect_creations(struct rs_exp *e, const char *key, int64_t n)
{
	if (n < 0)
		return RS_EUSAGE;
	return set_counts(e, key, n, 0);
}

/* Replaces key's set with pods; *added is the distinct count. */
static rs_code
set_fill(struct tx *x, MDB_val *k, const char *const *pods, size_t n,
    int64_t *added)
{
	MDB_val p;
	size_t i;
	rs_code rc;

	rc = exp_del(x, x->e->deleting, k, NULL);
	if (rc != RS_OK && rc != RS_ENOTFOUND)
		return rc;
	*added = 0;
	for (i = 0; i < n; i++) {
		if ((rc = exp_key_val(pods[i], &p)) != RS_OK)
			return rc;
		rc = exp_put(x, x->e->deleting, k, &p, MDB_NODUPDATA);
		if (rc == RS_OK)
			(*added)++;
		else if (rc != RS_EAGAIN)
			return rc;
	}
	return RS_OK;
}

rs_code
rs_exp_expect_deletions(struct rs_exp *e, const char *key,
    const char *const *pods, size_t n)
{
	struct exp_val v = { .add = 0, .ts = exp_now() };
	struct tx x;
	MDB_val k;
	uint64_t bytes = 0;
	size_t i;
	rs_code rc;

	if ((rc = exp_key_val(key, &k)) != RS_OK)
		return rc;
	for (i = 0; i < n; i++)
		bytes += (pods[i] ? strlen(pods[i]) : 0) + 16;
	if ((rc = exp_tx_begin_sized(e, &x, 0, bytes)) != RS_OK)
		return rc;
	if ((rc = set_fill(&x, &k, pods, n, &v.del)) == RS_OK)
		rc = exp_store(&x, &k, &v);
	return exp_tx_end(&x, rc);
}

/* add -= n on an existing record; the timestamp stays. */
static rs_code
lower_once(struct rs_exp *e, const char *key, int64_t n)
{
	struct exp_val v;
	struct tx x;
	MDB_val k;
	rs_code rc;

	if (n < 0)
		return RS_EUSAGE;
	if ((rc = exp_tx_begin_key(e, &x, 0, key, &k)) != RS_OK)
		return rc;
	if ((rc = exp_load(&x, &k, &v)) == RS_OK) {
		v.add = (int64_t)((uint64_t)v.add - (uint64_t)n);
		rc = exp_store(&x, &k, &v);
	}
	return exp_tx_end(&x, rc);
}

rs_code
rs_exp_creation_observed(struct rs_exp *e, const char *key)
{
	DRAINING(e, lower_once(e, key, 1));
}

rs_code
rs_exp_lower_creations(struct rs_exp *e, const char *key, int64_t n)
{
	DRAINING(e, lower_once(e, key, n));
}

static rs_code
deletion_observed_once(struct rs_exp *e, const char *key, const char *pod)
{
	struct exp_val v;
	struct tx x;
	MDB_val k, p;
	rs_code rc;

	if ((rc = exp_key_val(key, &k)) != RS_OK ||
	    (rc = exp_key_val(pod, &p)) != RS_OK)
		return rc;
	if ((rc = exp_tx_begin(e, &x, 0)) != RS_OK)
		return rc;
	if ((rc = exp_del(&x, e->deleting, &k, &p)) == RS_OK &&
	    (rc = exp_load(&x, &k, &v)) == RS_OK) {
		v.del = (int64_t)((uint64_t)v.del - 1);
		rc = exp_store(&x, &k, &v);
	}
	return exp_tx_end(&x, rc);
}

enum rs_exp_why
exp_judge(const struct exp_val *v, int64_t now)
{
	if (v->add <= 0 && v->del <= 0)
		return RS_EXP_FULFILLED;
	if (now - v->ts > RS_EXP_TIMEOUT_NS)
		return RS_EXP_EXPIRED;
	return RS_EXP_PENDING;
}

rs_code
rs_exp_deletion_observed(struct rs_exp *e, const char *key, const char *pod)
{
	DRAINING(e, deletion_observed_once(e, key, pod));
}

rs_code
rs_exp_satisfied(struct rs_exp *e, const char *key, int *ok,
    enum rs_exp_why *why)
{
	enum rs_exp_why w = RS_EXP_NO_RECORD;
	struct exp_val v;
	struct tx x;
	MDB_val k;
	rs_code rc;

	*ok = 1;
	if (why)
		*why = w;
	if ((rc = exp_tx_begin_key(e, &x, MDB_RDONLY, key, &k)) != RS_OK)
		return rc;
	if ((rc = exp_load(&x, &k, &v)) == RS_OK)
		w = exp_judge(&v, exp_now());
	rc = exp_tx_end(&x, rc);
	if (rc == RS_OK) {
		*ok = w != RS_EXP_PENDING;
		if (why)
			*why = w;
	}
	return rc;
}

static rs_code
delete_once(struct rs_exp *e, const char *key)
{
	struct tx x;
	MDB_val k;
	rs_code rc, rc2;

	if ((rc = exp_tx_begin_key(e, &x, 0, key, &k)) != RS_OK)
		return rc;
	rc = exp_del(&x, e->expect, &k, NULL);
	rc2 = exp_del(&x, e->deleting, &k, NULL);
	if (rc == RS_OK || rc == RS_ENOTFOUND)
		rc = rc2 == RS_ENOTFOUND ? RS_OK : rc2;
	return exp_tx_end(&x, rc);
}

rs_code
rs_exp_delete(struct rs_exp *e, const char *key)
{
	DRAINING(e, delete_once(e, key));
}
