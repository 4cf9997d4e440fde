/* exp_env.c: the LMDB environment of the expectations store: opening
 * and closing it, transactions, what LMDB's errors mean, the boot rule,
 * stats and reset. The formats are in doc/expectations-file.md; in short,
 * four databases in one environment:
 *  - "expect": controller key -> struct exp_val (add, del, timestamp);
 *  - "deleting": controller key -> pod keys awaiting deletion (dupsort);
 *  - "written": controller key -> the uid and resource versions, packed;
 *  - "meta": "boot_id" -> the boot the timestamps belong to.
 * Values carry a magic and a checksum: LMDB keeps the file whole through
 * crashes, the checksum catches bytes changed behind its back. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "exp_store.h"
#include "log.h"
#include "statedir.h"

static int64_t (*exp_clock)(void) = rs_mono_ns;
static void (*exp_hook)(uint64_t);
static const char *(*exp_boot_id)(void);

void
rs_exp_set_clock(int64_t (*now_ns)(void))
{
	exp_clock = now_ns ? now_ns : rs_mono_ns;
}

void
rs_exp_set_write_hook(void (*hook)(uint64_t))
{
	exp_hook = hook;
}

void
rs_exp_set_boot_id(const char *(*boot_id)(void))
{
	exp_boot_id = boot_id;
}

int64_t
exp_now(void)
{
	return exp_clock();
}

/* A key as LMDB takes it; RS_EUSAGE or RS_ETOOBIG for what no record can
 * have. */
rs_code
exp_key_val(const char *s, MDB_val *k)
{
	size_t n;

	if (s == NULL || (n = strlen(s)) == 0)
		return RS_EUSAGE;
	if (n > RS_EXP_KEY_MAX)
		return RS_ETOOBIG;
	k->mv_data = (void *)s;
	k->mv_size = n;
	return RS_OK;
}

int
exp_key_copy(const MDB_val *k, char *out)
{
	if (k->mv_size == 0 || k->mv_size > RS_EXP_KEY_MAX ||
	    memchr(k->mv_data, '\0', k->mv_size) != NULL)
		return 0;
	memcpy(out, k->mv_data, k->mv_size);
	out[k->mv_size] = '\0';
	return 1;
}

/* ---- errors ---- */

static void note(struct tx *x, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
note(struct tx *x, int err, const char *fmt, ...)
{
	char msg[sizeof x->note];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (x == NULL || x->t == NULL) {
		if (err)
			rs_error("%s", msg);
		else
			rs_warn("%s", msg);
	} else if (x->note[0] == '\0') {
		memcpy(x->note, msg, sizeof msg);
	}
}

rs_code
exp_damaged(struct rs_exp *e, struct tx *x, const char *why)
{
	e->damaged = 1;
	snprintf(e->damage, sizeof e->damage, "%s", why);
	note(x, 1, "%s is damaged: %s (rs_exp_reset or remove it)", e->path,
	    why);
	return RS_EPARSE;
}

/* What an LMDB error means to our callers. */
rs_code
exp_mdb_code(struct rs_exp *e, struct tx *x, int err)
{
	switch (err) {
	case MDB_SUCCESS:
		return RS_OK;
	case MDB_NOTFOUND:
		return RS_ENOTFOUND;
	case MDB_MAP_FULL:
		if (e->draining)
			return RS_EFULL;
		/* FALLTHROUGH */
	case MDB_TXN_FULL:
	case ENOSPC:
		note(x, 1, "%s: capacity exhausted (map of %zu bytes, or the "
		    "file system, is full)", e->path, e->map_size);
		return RS_EFULL;
	case ENOMEM:
		return RS_ENOMEM;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
	case MDB_INCOMPATIBLE:
		return exp_damaged(e, x, mdb_strerror(err));
	default:
		note(x, 1, "%s: %s", e->path, mdb_strerror(err));
		return RS_EIO;
	}
}

/* ---- transactions ---- */

/* With WRITEMAP a transaction writes new pages straight into the sparse
 * map, and a write to a page of a full tmpfs is answered with SIGBUS.
 * Allocating the pages ahead, past the last in use by more than a
 * transaction may add, turns that into RS_EFULL. extra: what the
 * transaction may add, in bytes. */
static rs_code
room(struct rs_exp *e, uint64_t extra)
{
	MDB_envinfo info;
	mdb_filehandle_t fd;
	uint64_t want;
	int err;

	if (mdb_env_info(e->env, &info) != 0)
		return RS_EIO;
	want = ((uint64_t)info.me_last_pgno + 1) * e->page_size +
	    EXP_HEADROOM + 4 * extra;
	if (want > info.me_mapsize)
		want = info.me_mapsize;
	if (want <= e->allocated)
		return RS_OK;
	if (mdb_env_get_fd(e->env, &fd) != 0)
		return RS_EIO;
	if ((err = posix_fallocate(fd, 0, (off_t)want)) != 0)
		return exp_mdb_code(e, NULL, err);
	e->allocated = want;
	return RS_OK;
}

/* mdb_txn_begin, taking the map size another process grew it to. */
static int
txn_begin(struct rs_exp *e, unsigned flags, MDB_txn **t)
{
	int err = mdb_txn_begin(e->env, NULL, flags, t);

	if (err == MDB_MAP_RESIZED && (err = mdb_env_set_mapsize(e->env,
	    0)) == 0)
		err = mdb_txn_begin(e->env, NULL, flags, t);
	return err;
}

/* A read transaction: the one kept reset when it is free (renewing it
 * takes no reader slot, which costs a lock of the reader table), else a
 * new one. rs-sync reads twice a sync. */
static rs_code
reader_begin(struct rs_exp *e, struct tx *x)
{
	MDB_txn *t = atomic_exchange(&e->idle_reader, NULL);
	int err;

	x->reader = 1;
	if (t != NULL && mdb_txn_renew(t) == 0) {
		x->t = t;
		return RS_OK;
	}
	if (t != NULL)
		mdb_txn_abort(t);
	if ((err = txn_begin(e, MDB_RDONLY, &x->t)) != 0) {
		x->t = NULL;
		return exp_mdb_code(e, NULL, err);
	}
	return RS_OK;
}

/* Ends a read transaction, keeping it for the next if none is kept. */
void
exp_reader_end(struct tx *x)
{
	MDB_txn *none = NULL;

	mdb_txn_reset(x->t);
	if (!atomic_compare_exchange_strong(&x->e->idle_reader, &none, x->t))
		mdb_txn_abort(x->t);
	x->t = NULL;
	if (x->note[0] != '\0')
		rs_error("%s", x->note);
}

/* A transaction; a write one may add up to extra bytes. */
rs_code
exp_tx_begin_sized(struct rs_exp *e, struct tx *x, unsigned flags,
    uint64_t extra)
{
	rs_code rc;
	int err;

	memset(x, 0, sizeof *x);
	x->e = e;
	if (e->damaged && !(flags & TX_REPAIR)) {
		rs_error("%s is damaged: %s (rs_exp_reset or remove it)",
		    e->path, e->damage);
		return RS_EPARSE;
	}
	flags &= ~TX_REPAIR;
	if (flags & MDB_RDONLY)
		return reader_begin(e, x);
	if ((rc = room(e, extra)) != RS_OK)
		return rc;
	if ((err = txn_begin(e, flags, &x->t)) != 0) {
		x->t = NULL;
		return exp_mdb_code(e, NULL, err);
	}
	return RS_OK;
}

rs_code
exp_tx_begin(struct rs_exp *e, struct tx *x, unsigned flags)
{
	return exp_tx_begin_sized(e, x, flags, 0);
}

/* A transaction on key's records, the key checked first (exp_key_val): a
 * key no record can have leaves no transaction to end. */
rs_code
exp_tx_begin_key(struct rs_exp *e, struct tx *x, unsigned flags,
    const char *key, MDB_val *k)
{
	rs_code rc = exp_key_val(key, k);

	return rc != RS_OK ? rc : exp_tx_begin(e, x, flags);
}

/* Commits when rc is RS_OK and something changed, else aborts; then says
 * what was held back. */
rs_code
exp_tx_end(struct tx *x, rs_code rc)
{
	int err;

	if (x->reader) {
		exp_reader_end(x);
		return rc == RS_ENOTFOUND ? RS_OK : rc;
	}
	if (rc == RS_OK && x->changed) {
		err = mdb_txn_commit(x->t);
		x->t = NULL;
		rc = exp_mdb_code(x->e, x, err);
	} else {
		mdb_txn_abort(x->t);
		x->t = NULL;
	}
	if (x->note[0] != '\0')
		rs_error("%s", x->note);
	return rc == RS_ENOTFOUND ? RS_OK : rc;
}

void
exp_wrote(struct tx *x)
{
	x->changed = 1;
	if (exp_hook)
		exp_hook(++x->writes);
}

/* What an LMDB call answered: a change counts as written. */
static rs_code
answer(struct tx *x, int err, int change)
{
	if (err != 0)
		return exp_mdb_code(x->e, x, err);
	if (change)
		exp_wrote(x);
	return RS_OK;
}

rs_code
exp_put(struct tx *x, MDB_dbi db, MDB_val *k, MDB_val *d, unsigned flags)
{
	int err = mdb_put(x->t, db, k, d, flags);

	return err == MDB_KEYEXIST ? RS_EAGAIN : answer(x, err, 1);
}

rs_code
exp_del(struct tx *x, MDB_dbi db, MDB_val *k, MDB_val *d)
{
	return answer(x, mdb_del(x->t, db, k, d), 1);
}

rs_code
exp_get(struct tx *x, MDB_dbi db, MDB_val *k, MDB_val *d)
{
	return answer(x, mdb_get(x->t, db, k, d), 0);
}

/* A write that only lowers or removes must not fail for a full map, or a
 * full store could never empty (LMDB copies pages even to delete): on a
 * full map it runs once more on a map grown by an eighth. Writes that add
 * records fail. */
rs_code
exp_grow(struct rs_exp *e)
{
	size_t more = e->map_size / 8 > RS_EXP_MAP_MIN ? e->map_size / 8 :
	    RS_EXP_MAP_MIN;
	int err;

	if ((err = mdb_env_set_mapsize(e->env, e->map_size + more)) != 0)
		return exp_mdb_code(e, NULL, err);
	e->map_size += more;
	rs_warn("%s: map full: grown to %zu bytes, so that records can be "
	    "removed", e->path, e->map_size);
	return RS_OK;
}

static void
boot_id_read(char *out, size_t len)
{
	if (exp_boot_id) {
		memset(out, 0, len);
		snprintf(out, len, "%s", exp_boot_id());
		return;
	}
	rs_boot_id(out, len);
}

static rs_code exp_drop_all(struct tx *x);

static const MDB_val boot_key = { .mv_size = sizeof BOOT_KEY - 1,
    .mv_data = BOOT_KEY };

/* 0 when the store's timestamps are of this boot (or the boot is not
 * known), MDB_NOTFOUND when it names none, 1 when another; or an LMDB
 * error. */
static int
boot_differs(struct rs_exp *e, MDB_txn *t, const char *boot)
{
	MDB_val k = boot_key, d;
	int err;

	if (boot[0] == '\0')
		return 0;
	if ((err = mdb_get(t, e->meta, &k, &d)) != 0)
		return err;
	return d.mv_size != strlen(boot) || memcmp(d.mv_data, boot,
	    d.mv_size) != 0;
}

/* Timestamps are on the monotonic clock, which starts again at each boot:
 * the first open of a new boot drops every record, as a restarted upstream
 * controller starts with none. */
static rs_code
boot_check(struct tx *x, const char *boot)
{
	MDB_val k = boot_key, d = { .mv_size = strlen(boot),
	    .mv_data = (void *)boot };
	int diff = boot_differs(x->e, x->t, boot);
	rs_code rc;

	if (diff == 0)
		return RS_OK;
	if (diff != 1 && diff != MDB_NOTFOUND)
		return exp_mdb_code(x->e, x, diff);
	if (diff == 1 && (rc = exp_drop_all(x)) != RS_OK)
		return rc;
	return exp_put(x, x->e->meta, &k, &d, 0);
}

static int
dbis_open(struct rs_exp *e, MDB_txn *t, unsigned create)
{
	int err;

	if ((err = mdb_dbi_open(t, "expect", create, &e->expect)) ||
	    (err = mdb_dbi_open(t, "deleting", create | MDB_DUPSORT,
	    &e->deleting)) ||
	    (err = mdb_dbi_open(t, "written", create, &e->written)))
		return err;
	return mdb_dbi_open(t, "meta", create, &e->meta);
}

/* The databases, and the boot rule, in a read transaction when nothing
 * needs writing (it waits for no writer), else in a write one. */
static rs_code
dbs_open(struct rs_exp *e)
{
	char boot[48];
	struct tx x;
	MDB_txn *t;
	int err;
	rs_code rc;

	boot_id_read(boot, sizeof boot);
	if (txn_begin(e, MDB_RDONLY, &t) == 0) {
		/* a read transaction's commit keeps the handles it opened */
		if (dbis_open(e, t, 0) == 0 && boot_differs(e, t, boot) == 0)
			return mdb_txn_commit(t) == 0 ? RS_OK : RS_EIO;
		mdb_txn_abort(t);
	}
	if ((rc = exp_tx_begin(e, &x, 0)) != RS_OK)
		return rc;
	if ((err = dbis_open(e, x.t, MDB_CREATE)) != 0)
		rc = exp_mdb_code(e, &x, err);
	else
		rc = boot_check(&x, boot);
	/* opening the databases is itself a change to commit */
	x.changed = 1;
	return exp_tx_end(&x, rc);
}

/* map 0: the size the file was made with (rs-apply and the tools follow
 * whatever rs-sync chose). */
static rs_code
env_open(struct rs_exp *e, size_t map)
{
	MDB_envinfo info;
	MDB_stat st;
	int err, dead;

	if ((err = mdb_env_create(&e->env)) != 0)
		return exp_mdb_code(e, NULL, err);
	if ((err = mdb_env_set_mapsize(e->env, map)) != 0 ||
	    (err = mdb_env_set_maxdbs(e->env, DBS)) != 0)
		return exp_mdb_code(e, NULL, err);
	/* WRITEMAP: a transaction writes its pages in the map instead of
	 * copying each out with pwrite, 7 times faster on tmpfs (see room for
	 * the one risk). NOSYNC: tmpfs has nothing to flush to and is empty
	 * after a crash of the system; a disk file may be damaged by one
	 * (NOSYNC with WRITEMAP), which a reboot's first open finds or the
	 * boot rule empties. NOTLS: a read transaction belongs to the call, not to
	 * the thread. */
	err = mdb_env_open(e->env, e->path, MDB_NOSUBDIR | MDB_WRITEMAP |
	    MDB_NOSYNC | MDB_NOTLS | MDB_NORDAHEAD, 0600);
	if (err == MDB_INVALID || err == MDB_VERSION_MISMATCH) {
		rs_error("unable to use %s: not an expectations file (%s)",
		    e->path, mdb_strerror(err));
		return RS_EPARSE;
	}
	if (err != 0) {
		rs_error("unable to open %s: %s", e->path, mdb_strerror(err));
		return err == ENOMEM ? RS_ENOMEM : err == EACCES ?
		    RS_EREFUSED : RS_EIO;
	}
	if (mdb_reader_check(e->env, &dead) == 0 && dead > 0)
		rs_info(1, "%s: cleared %d reader slots of dead processes",
		    e->path, dead);
	if (mdb_env_info(e->env, &info) != 0 || mdb_env_stat(e->env, &st) != 0)
		return RS_EIO;
	e->map_size = info.me_mapsize;
	e->page_size = st.ms_psize;
	return RS_OK;
}

/* Every record of a file opened is read once: damage is said at open,
 * and every operation refuses until rs_exp_reset repairs. */
static void
whole_check(struct rs_exp *e)
{
	char why[200];

	if (rs_exp_check(e, why, sizeof why) == RS_EPARSE)
		(void)exp_damaged(e, NULL, why);
}

rs_code
rs_exp_open(const char *path, const struct rs_exp_opts *o, struct rs_exp **out)
{
	struct rs_exp *e;
	int nocreate = o && o->nocreate;
	size_t map = o && o->map_size ? o->map_size : 0;
	rs_code rc;

	*out = NULL;
	if ((e = calloc(1, sizeof *e)) == NULL)
		return RS_ENOMEM;
	if (map && map < RS_EXP_MAP_MIN)
		map = RS_EXP_MAP_MIN;
	e->path = path ? strdup(path) : rs_state_path("expectations");
	if (e->path == NULL) {
		rc = RS_ENOMEM;
		goto out;
	}
	if (path == NULL && !nocreate &&
	    (rc = rs_state_prepare_parent(e->path)) != RS_OK)
		goto out;
	if ((rc = exp_files_prepare(e, nocreate)) != RS_OK)
		goto out;
	if (map == 0 && e->pre_size == 0)
		map = RS_EXP_MAP_DEFAULT;
	if ((rc = exp_size_check(e)) != RS_OK)
		goto out;
	if ((rc = env_open(e, map)) != RS_OK)
		goto out;
	if ((rc = exp_fd_check(e)) != RS_OK)
		goto out;
	if ((rc = dbs_open(e)) == RS_OK && e->pre_size > 0)
		whole_check(e);
out:
	if (rc != RS_OK) {
		rs_exp_close(e);
		return rc;
	}
	*out = e;
	return RS_OK;
}

void
rs_exp_close(struct rs_exp *e)
{
	MDB_txn *t;

	if (e == NULL)
		return;
	if ((t = atomic_exchange(&e->idle_reader, NULL)) != NULL)
		mdb_txn_abort(t);
	if (e->env)
		mdb_env_close(e->env);
	free(e->path);
	free(e);
}

const char *
rs_exp_path(const struct rs_exp *e)
{
	return e->path;
}

uint64_t
exp_entries(MDB_txn *t, MDB_dbi db)
{
	MDB_stat st;

	return mdb_stat(t, db, &st) == 0 ? (uint64_t)st.ms_entries : 0;
}

rs_code
rs_exp_stats(struct rs_exp *e, struct rs_exp_stats *st)
{
	MDB_envinfo info;
	MDB_stat es;
	struct tx x;
	rs_code rc;

	memset(st, 0, sizeof *st);
	if ((rc = exp_tx_begin(e, &x, MDB_RDONLY)) != RS_OK)
		return rc;
	st->keys = exp_entries(x.t, e->expect);
	st->pods = exp_entries(x.t, e->deleting);
	st->written = exp_entries(x.t, e->written);
	exp_reader_end(&x);
	if (mdb_env_info(e->env, &info) != 0 || mdb_env_stat(e->env, &es) != 0)
		return RS_EIO;
	st->map_size = info.me_mapsize;
	st->page_size = es.ms_psize;
	st->map_used = ((uint64_t)info.me_last_pgno + 1) * es.ms_psize;
	st->txnid = info.me_last_txnid;
	st->readers = info.me_numreaders;
	st->readers_max = info.me_maxreaders;
	return RS_OK;
}

static rs_code
exp_drop_all(struct tx *x)
{
	MDB_dbi dbs[] = { x->e->expect, x->e->deleting, x->e->written };
	size_t i;
	int err;

	for (i = 0; i < sizeof dbs / sizeof dbs[0]; i++) {
		if ((err = mdb_drop(x->t, dbs[i], 0)) != 0)
			return exp_mdb_code(x->e, x, err);
		exp_wrote(x);
	}
	return RS_OK;
}

static rs_code
reset_once(struct rs_exp *e)
{
	struct tx x;
	rs_code rc;

	if ((rc = exp_tx_begin(e, &x, TX_REPAIR)) != RS_OK)
		return rc;
	if ((rc = exp_tx_end(&x, exp_drop_all(&x))) == RS_OK)
		e->damaged = 0;
	return rc;
}

rs_code
rs_exp_reset(struct rs_exp *e)
{
	DRAINING(e, reset_once(e));
}
