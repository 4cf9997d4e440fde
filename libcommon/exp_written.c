/* exp_written.c: the resource versions of a controller's own writes, for
 * upstream's stale-cache guard: packed in the "written" database. */
#include <string.h>

#include "exp_store.h"
#include "resourceversion.h"

static void
wr_str(struct wr_buf *v, const char *str)
{
	size_t n = strlen(str) + 1;

	memcpy(v->b + v->len, str, n);
	v->len += n;
}

static void
wr_encode(const struct rs_exp_written *w, struct wr_buf *v)
{
	uint32_t head[2] = { WR_MAGIC, (uint32_t)w->n };
	uint64_t csum;
	size_t i;

	memcpy(v->b, head, WR_HEAD);
	v->len = WR_HEAD;
	wr_str(v, w->uid);
	for (i = 0; i < w->n; i++) {
		wr_str(v, w->w[i].group);
		wr_str(v, w->w[i].resource);
		wr_str(v, w->w[i].rv);
	}
	csum = exp_sum(v->b, v->len);
	memcpy(v->b + v->len, &csum, sizeof csum);
	v->len += sizeof csum;
}

/* The next NUL-ended string of at most max bytes into dst, or 0. */
static int
wr_take(const unsigned char **p, const unsigned char *end, char *dst,
    size_t max)
{
	const unsigned char *nul = memchr(*p, '\0', (size_t)(end - *p));
	size_t n;

	if (nul == NULL || (n = (size_t)(nul - *p)) > max)
		return 0;
	memcpy(dst, *p, n + 1);
	*p = nul + 1;
	return 1;
}

int
exp_wr_decode(const MDB_val *d, struct rs_exp_written *out)
{
	const unsigned char *p = d->mv_data, *end;
	uint32_t head[2];
	uint64_t csum;
	size_t i;

	memset(out, 0, sizeof *out);
	if (d->mv_size < WR_HEAD + 1 + sizeof csum || d->mv_size > WR_MAX)
		return 0;
	end = p + d->mv_size - sizeof csum;
	memcpy(&csum, end, sizeof csum);
	memcpy(head, p, WR_HEAD);
	if (head[0] != WR_MAGIC || head[1] > RS_EXP_WRITES_MAX ||
	    csum != exp_sum(p, d->mv_size - sizeof csum))
		return 0;
	p += WR_HEAD;
	if (!wr_take(&p, end, out->uid, RS_EXP_UID_MAX))
		return 0;
	for (i = 0; i < head[1]; i++)
		if (!wr_take(&p, end, out->w[i].group, RS_EXP_RES_MAX) ||
		    !wr_take(&p, end, out->w[i].resource, RS_EXP_RES_MAX) ||
		    !wr_take(&p, end, out->w[i].rv, RS_EXP_RV_MAX))
			return 0;
	out->n = head[1];
	return p == end;
}

static int
write_fits(const struct rs_exp_write *w)
{
	return strnlen(w->group, sizeof w->group) < sizeof w->group &&
	    strnlen(w->resource, sizeof w->resource) < sizeof w->resource &&
	    w->resource[0] != '\0' && w->rv[0] != '\0' &&
	    strnlen(w->rv, sizeof w->rv) < sizeof w->rv;
}

rs_code
rs_exp_written_add(struct rs_exp_written *r, const struct rs_exp_write *w)
{
	size_t i;
	int cmp;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->w[i].group, w->group) == 0 &&
		    strcmp(r->w[i].resource, w->resource) == 0)
			break;
	if (i == r->n) {
		if (r->n == RS_EXP_WRITES_MAX)
			return RS_EFULL;
		r->w[r->n++] = *w;
		return RS_OK;
	}
	if (rs_rv_compare(r->w[i].rv, w->rv, &cmp) == RS_OK && cmp >= 0)
		return RS_OK;
	memcpy(r->w[i].rv, w->rv, sizeof w->rv);
	return RS_OK;
}

static rs_code
wr_load(struct tx *x, MDB_val *k, struct rs_exp_written *v)
{
	MDB_val d;
	rs_code rc = exp_get(x, x->e->written, k, &d);

	if (rc == RS_OK && d.mv_size == WR_LEGACY)
		return RS_ENOTFOUND;
	if (rc == RS_OK && !exp_wr_decode(&d, v))
		rc = exp_damaged(x->e, x, "a written record fails its check");
	return rc;
}

rs_code
rs_exp_wrote(struct rs_exp *e, const char *key, const char *uid,
    const struct rs_exp_write *w, size_t n)
{
	struct rs_exp_written v;
	struct wr_buf b;
	struct tx x;
	MDB_val k, d;
	size_t i;
	rs_code rc;

	if ((rc = exp_key_val(key, &k)) != RS_OK)
		return rc;
	if (uid == NULL || strlen(uid) > RS_EXP_UID_MAX)
		return RS_EUSAGE;
	for (i = 0; i < n; i++)
		if (!write_fits(&w[i]))
			return RS_EUSAGE;
	if ((rc = exp_tx_begin(e, &x, 0)) != RS_OK)
		return rc;
	rc = wr_load(&x, &k, &v);
	if (rc == RS_ENOTFOUND || (rc == RS_OK && strcmp(v.uid, uid) != 0)) {
		memset(&v, 0, sizeof v);
		memcpy(v.uid, uid, strlen(uid));
		rc = RS_OK;
	}
	for (i = 0; rc == RS_OK && i < n; i++)
		rc = rs_exp_written_add(&v, &w[i]);
	if (rc == RS_OK) {
		wr_encode(&v, &b);
		d.mv_size = b.len;
		d.mv_data = b.b;
		rc = exp_put(&x, e->written, &k, &d, 0);
	}
	return exp_tx_end(&x, rc);
}

rs_code
rs_exp_written(struct rs_exp *e, const char *key, struct rs_exp_written *out)
{
	struct tx x;
	MDB_val k;
	rs_code rc;

	memset(out, 0, sizeof *out);
	if ((rc = exp_tx_begin_key(e, &x, MDB_RDONLY, key, &k)) != RS_OK)
		return rc;
	if ((rc = wr_load(&x, &k, out)) != RS_OK)
		memset(out, 0, sizeof *out);
	exp_reader_end(&x);
	return rc;
}

static rs_code
clear_written_once(struct rs_exp *e, const char *key, const char *uid)
{
	struct rs_exp_written v;
	struct tx x;
	MDB_val k;
	rs_code rc;

	if ((rc = exp_tx_begin_key(e, &x, 0, key, &k)) != RS_OK)
		return rc;
	rc = wr_load(&x, &k, &v);
	/* a damaged record is dropped whatever its uid */
	if (rc == RS_EPARSE || (rc == RS_OK && (uid == NULL ||
	    uid[0] == '\0' || strcmp(v.uid, uid) == 0))) {
		x.note[0] = '\0';
		rc = exp_del(&x, e->written, &k, NULL);
	}
	return exp_tx_end(&x, rc);
}

rs_code
rs_exp_clear_written(struct rs_exp *e, const char *key, const char *uid)
{
	DRAINING(e, clear_written_once(e, key, uid));
}
