/* expectations.c: the expectations store on LMDB. The contract and the
 * formats are in doc/expectations-file.md; in short, four databases in
 * one environment:
 *  - "expect": controller key -> struct exp_val (add, del, timestamp);
 *  - "deleting": controller key -> pod keys awaiting deletion (dupsort);
 *  - "written": controller key -> the uid and resource versions, packed
 *    (wr_encode);
 *  - "meta": "boot_id" -> the boot the timestamps belong to.
 * Values carry a magic and a checksum: LMDB keeps the file whole through
 * crashes, the checksum catches bytes changed behind its back. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>
#include <lmdb.h>

#include "clock.h"
#include "expectations.h"
#include "json.h"
#include "log.h"
#include "resourceversion.h"
#include "statedir.h"

#define EXP_MAGIC 0x52534558u   /* "RSEX" */
#define WR_MAGIC 0x52535752u    /* "RSWR" */
#define BOOT_KEY "boot_id"
#define DBS 4
/* a transaction flag of ours: allowed on a damaged store (reset, check) */
#define TX_REPAIR 0x80000000u
/* pages kept allocated past the last one in use (see room) */
#define EXP_HEADROOM (1u << 20)

struct exp_val {
	uint32_t magic, pad;
	int64_t add, del, ts;
	uint64_t csum;
};

/* The packed "written" value: magic, count, then NUL-ended strings (the
 * uid, then group, resource and rv for each write), then the checksum of
 * all before it. Packed, an owner with one or two writes takes about a
 * tenth of its struct, and an LMDB page holds dozens of owners. */
#define WR_HEAD 8
#define WR_MAX (WR_HEAD + RS_EXP_UID_MAX + 1 + RS_EXP_WRITES_MAX * \
    (2 * RS_EXP_RES_MAX + RS_EXP_RV_MAX + 3) + 8)
struct wr_buf {
	size_t len;
	unsigned char b[WR_MAX];
};
/* The size of a value of the earlier fixed format (a struct), which no
 * packed value reaches: such a record, left in a file on tmpfs across an
 * upgrade, reads as absent, as the start-up reset would make it, not as
 * damage that would stop a process that opened the file first. */
#define WR_LEGACY 856
_Static_assert(WR_MAX < WR_LEGACY, "a packed value never has the legacy size");

struct rs_exp {
	MDB_env *env;
	MDB_dbi expect, deleting, written, meta;
	char *path;
	size_t map_size;
	unsigned page_size;
	uint64_t allocated;     /* bytes of the file known allocated */
	int damaged;            /* found damaged: refused until a reset */
	char damage[200];       /* why */
	int draining;           /* a map-full is retried on a grown map */
	_Atomic(MDB_txn *) idle_reader;   /* a read transaction kept reset */
	size_t pre_size;        /* the file's size before LMDB opened it */
};

/* One write transaction: the writes so far (for the test hook) and the
 * message held back until the write lock is released, so that a stalled
 * stderr never holds other processes up. */
struct tx {
	struct rs_exp *e;
	MDB_txn *t;
	int reader;
	uint64_t writes;
	int changed;
	char note[256];
};

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

/* ---- values ---- */

static uint64_t
fnv1a(const void *src, size_t len)
{
	const unsigned char *p = src;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (len--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

static void
exp_seal(struct exp_val *v)
{
	v->magic = EXP_MAGIC;
	v->pad = 0;
	v->csum = fnv1a(v, offsetof(struct exp_val, csum));
}

static int
exp_valid(const MDB_val *d, struct exp_val *out)
{
	if (d->mv_size != sizeof *out)
		return 0;
	memcpy(out, d->mv_data, sizeof *out);
	return out->magic == EXP_MAGIC &&
	    out->csum == fnv1a(out, offsetof(struct exp_val, csum));
}

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
	csum = fnv1a(v->b, v->len);
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

static int
wr_decode(const MDB_val *d, struct rs_exp_written *out)
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
	    csum != fnv1a(p, d->mv_size - sizeof csum))
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

/* A key as LMDB takes it; RS_EUSAGE or RS_ETOOBIG for what no record can
 * have. */
static rs_code
key_val(const char *s, MDB_val *k)
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

static int
key_copy(const MDB_val *k, char *out)
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

static rs_code
damaged(struct rs_exp *e, struct tx *x, const char *why)
{
	e->damaged = 1;
	snprintf(e->damage, sizeof e->damage, "%s", why);
	note(x, 1, "%s is damaged: %s (rs_exp_reset or remove it)", e->path,
	    why);
	return RS_EPARSE;
}

/* What an LMDB error means to our callers. */
static rs_code
mdb_code(struct rs_exp *e, struct tx *x, int err)
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
		return damaged(e, x, mdb_strerror(err));
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
		return mdb_code(e, NULL, err);
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
		return mdb_code(e, NULL, err);
	}
	return RS_OK;
}

/* Ends a read transaction, keeping it for the next if none is kept. */
static void
reader_end(struct tx *x)
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
static rs_code
tx_begin_sized(struct rs_exp *e, struct tx *x, unsigned flags,
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
		return mdb_code(e, NULL, err);
	}
	return RS_OK;
}

static rs_code
tx_begin(struct rs_exp *e, struct tx *x, unsigned flags)
{
	return tx_begin_sized(e, x, flags, 0);
}

/* Commits when rc is RS_OK and something changed, else aborts; then says
 * what was held back. */
static rs_code
tx_end(struct tx *x, rs_code rc)
{
	int err;

	if (x->reader) {
		reader_end(x);
		return rc == RS_ENOTFOUND ? RS_OK : rc;
	}
	if (rc == RS_OK && x->changed) {
		err = mdb_txn_commit(x->t);
		x->t = NULL;
		rc = mdb_code(x->e, x, err);
	} else {
		mdb_txn_abort(x->t);
		x->t = NULL;
	}
	if (x->note[0] != '\0')
		rs_error("%s", x->note);
	return rc == RS_ENOTFOUND ? RS_OK : rc;
}

static void
wrote(struct tx *x)
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
		return mdb_code(x->e, x, err);
	if (change)
		wrote(x);
	return RS_OK;
}

static rs_code
put(struct tx *x, MDB_dbi db, MDB_val *k, MDB_val *d, unsigned flags)
{
	int err = mdb_put(x->t, db, k, d, flags);

	return err == MDB_KEYEXIST ? RS_EAGAIN : answer(x, err, 1);
}

static rs_code
del(struct tx *x, MDB_dbi db, MDB_val *k, MDB_val *d)
{
	return answer(x, mdb_del(x->t, db, k, d), 1);
}

static rs_code
get(struct tx *x, MDB_dbi db, MDB_val *k, MDB_val *d)
{
	return answer(x, mdb_get(x->t, db, k, d), 0);
}

/* key's record: RS_OK, RS_ENOTFOUND, or RS_EPARSE when damaged. */
static rs_code
exp_load(struct tx *x, MDB_val *k, struct exp_val *v)
{
	MDB_val d;
	rs_code rc = get(x, x->e->expect, k, &d);

	if (rc == RS_OK && !exp_valid(&d, v))
		rc = damaged(x->e, x, "a record fails its check");
	return rc;
}

static rs_code
exp_store(struct tx *x, MDB_val *k, struct exp_val *v)
{
	MDB_val d = { .mv_size = sizeof *v, .mv_data = v };

	exp_seal(v);
	return put(x, x->e->expect, k, &d, 0);
}

/* ---- open and close ---- */

static rs_code
check_owner(const char *path, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		rs_error("unable to stat %s: %s", path, strerror(errno));
		return RS_EIO;
	}
	if (!S_ISREG(st.st_mode)) {
		rs_error("refusing %s: not a regular file", path);
		return RS_EREFUSED;
	}
	if (st.st_uid != geteuid()) {
		rs_error("refusing %s: owned by uid %u, not by us", path,
		    (unsigned)st.st_uid);
		return RS_EREFUSED;
	}
	if (st.st_mode & 077) {
		rs_error("refusing %s: mode %04o lets others in (want 0600)",
		    path, (unsigned)(st.st_mode & 07777));
		return RS_EREFUSED;
	}
	return RS_OK;
}

/* Opens (or creates, mode 0600 whatever the umask) one of the two files
 * and checks it before LMDB sees it. */
static rs_code
file_prepare(const char *path, int nocreate, size_t *size)
{
	int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW, fd;
	struct stat st;
	rs_code rc;

	if (!nocreate)
		flags |= O_CREAT;
	if ((fd = open(path, flags, 0600)) < 0) {
		if (errno == ENOENT && nocreate)
			return RS_ENOTFOUND;
		rs_error("unable to open %s: %s", path, errno == ELOOP ?
		    "refusing a symbolic link" : strerror(errno));
		return errno == ELOOP ? RS_EREFUSED : RS_EIO;
	}
	if ((rc = check_owner(path, fd)) == RS_OK && fstat(fd, &st) == 0) {
		*size = (size_t)st.st_size;
		if (*size == 0 && fchmod(fd, 0600) < 0)
			rc = RS_EIO;
	}
	close(fd);
	return rc;
}

static rs_code
files_prepare(struct rs_exp *e, int nocreate)
{
	char lock[PATH_MAX];
	size_t lock_size;
	rs_code rc;

	if (snprintf(lock, sizeof lock, "%s-lock", e->path) >=
	    (int)sizeof lock)
		return RS_ETOOBIG;
	if ((rc = file_prepare(e->path, nocreate, &e->pre_size)) != RS_OK)
		return rc;
	/* the lock file is made by whoever opens first */
	return file_prepare(lock, 0, &lock_size);
}

/* A file cut short would be read past its end through the map (SIGBUS),
 * and the read-write open (WRITEMAP) would extend it to the map size and
 * hide the cut: before it, a read-only look without locks at the newest
 * meta page, whose last page the file must reach. */
static rs_code
size_check(struct rs_exp *e)
{
	MDB_env *env;
	MDB_envinfo info;
	MDB_stat st;
	int err;
	rs_code rc = RS_OK;

	if (e->pre_size == 0 || (err = mdb_env_create(&env)) != 0)
		return RS_OK;
	err = mdb_env_open(env, e->path, MDB_NOSUBDIR | MDB_RDONLY |
	    MDB_NOLOCK, 0600);
	if (err == MDB_INVALID || err == MDB_VERSION_MISMATCH) {
		rs_error("unable to use %s: not an expectations file (%s)",
		    e->path, mdb_strerror(err));
		rc = RS_EPARSE;
	} else if (err == 0 && mdb_env_info(env, &info) == 0 &&
	    mdb_env_stat(env, &st) == 0 && (uint64_t)e->pre_size <
	    ((uint64_t)info.me_last_pgno + 1) * st.ms_psize) {
		rs_error("unable to use %s: file size does not match its "
		    "contents (truncated?)", e->path);
		rc = RS_EPARSE;
	}
	mdb_env_close(env);
	return rc;
}

/* The file LMDB opened is the one checked (not swapped meanwhile). */
static rs_code
fd_check(struct rs_exp *e)
{
	mdb_filehandle_t fd;

	if (mdb_env_get_fd(e->env, &fd) != 0)
		return RS_EIO;
	return check_owner(e->path, fd);
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

static rs_code drop_all(struct tx *x);

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
		return mdb_code(x->e, x, diff);
	if (diff == 1 && (rc = drop_all(x)) != RS_OK)
		return rc;
	return put(x, x->e->meta, &k, &d, 0);
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
	if ((rc = tx_begin(e, &x, 0)) != RS_OK)
		return rc;
	if ((err = dbis_open(e, x.t, MDB_CREATE)) != 0)
		rc = mdb_code(e, &x, err);
	else
		rc = boot_check(&x, boot);
	/* opening the databases is itself a change to commit */
	x.changed = 1;
	return tx_end(&x, rc);
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
		return mdb_code(e, NULL, err);
	if ((err = mdb_env_set_mapsize(e->env, map)) != 0 ||
	    (err = mdb_env_set_maxdbs(e->env, DBS)) != 0)
		return mdb_code(e, NULL, err);
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
		(void)damaged(e, NULL, why);
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
	if ((rc = files_prepare(e, nocreate)) != RS_OK)
		goto out;
	if (map == 0 && e->pre_size == 0)
		map = RS_EXP_MAP_DEFAULT;
	if ((rc = size_check(e)) != RS_OK)
		goto out;
	if ((rc = env_open(e, map)) != RS_OK)
		goto out;
	if ((rc = fd_check(e)) != RS_OK)
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

/* ---- expectations ---- */

static rs_code
set_counts(struct rs_exp *e, const char *key, int64_t add, int64_t dels)
{
	struct exp_val v = { .add = add, .del = dels, .ts = exp_clock() };
	struct tx x;
	MDB_val k;
	rs_code rc;

	if ((rc = key_val(key, &k)) != RS_OK)
		return rc;
	if ((rc = tx_begin(e, &x, 0)) != RS_OK)
		return rc;
	return tx_end(&x, exp_store(&x, &k, &v));
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

	rc = del(x, x->e->deleting, k, NULL);
	if (rc != RS_OK && rc != RS_ENOTFOUND)
		return rc;
	*added = 0;
	for (i = 0; i < n; i++) {
		if ((rc = key_val(pods[i], &p)) != RS_OK)
			return rc;
		rc = put(x, x->e->deleting, k, &p, MDB_NODUPDATA);
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
	struct exp_val v = { .add = 0, .ts = exp_clock() };
	struct tx x;
	MDB_val k;
	uint64_t bytes = 0;
	size_t i;
	rs_code rc;

	if ((rc = key_val(key, &k)) != RS_OK)
		return rc;
	for (i = 0; i < n; i++)
		bytes += (pods[i] ? strlen(pods[i]) : 0) + 16;
	if ((rc = tx_begin_sized(e, &x, 0, bytes)) != RS_OK)
		return rc;
	if ((rc = set_fill(&x, &k, pods, n, &v.del)) == RS_OK)
		rc = exp_store(&x, &k, &v);
	return tx_end(&x, rc);
}

/* A write that only lowers or removes must not fail for a full map, or a
 * full store could never empty (LMDB copies pages even to delete): on a
 * full map it runs once more on a map grown by an eighth. Writes that add
 * records fail. */
static rs_code
grow(struct rs_exp *e)
{
	size_t more = e->map_size / 8 > RS_EXP_MAP_MIN ? e->map_size / 8 :
	    RS_EXP_MAP_MIN;
	int err;

	if ((err = mdb_env_set_mapsize(e->env, e->map_size + more)) != 0)
		return mdb_code(e, NULL, err);
	e->map_size += more;
	rs_warn("%s: map full: grown to %zu bytes, so that records can be "
	    "removed", e->path, e->map_size);
	return RS_OK;
}

#define DRAINING(e, call) do { \
	rs_code drc_; \
	(e)->draining = 1; \
	drc_ = (call); \
	(e)->draining = 0; \
	if (drc_ == RS_EFULL && grow(e) == RS_OK) \
		drc_ = (call); \
	return drc_; \
} while (0)

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
	if ((rc = key_val(key, &k)) != RS_OK)
		return rc;
	if ((rc = tx_begin(e, &x, 0)) != RS_OK)
		return rc;
	if ((rc = exp_load(&x, &k, &v)) == RS_OK) {
		v.add = (int64_t)((uint64_t)v.add - (uint64_t)n);
		rc = exp_store(&x, &k, &v);
	}
	return tx_end(&x, rc);
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

	if ((rc = key_val(key, &k)) != RS_OK ||
	    (rc = key_val(pod, &p)) != RS_OK)
		return rc;
	if ((rc = tx_begin(e, &x, 0)) != RS_OK)
		return rc;
	if ((rc = del(&x, e->deleting, &k, &p)) == RS_OK &&
	    (rc = exp_load(&x, &k, &v)) == RS_OK) {
		v.del = (int64_t)((uint64_t)v.del - 1);
		rc = exp_store(&x, &k, &v);
	}
	return tx_end(&x, rc);
}

static enum rs_exp_why
judge(const struct exp_val *v, int64_t now)
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
	if ((rc = key_val(key, &k)) != RS_OK)
		return rc;
	if ((rc = tx_begin(e, &x, MDB_RDONLY)) != RS_OK)
		return rc;
	if ((rc = exp_load(&x, &k, &v)) == RS_OK)
		w = judge(&v, exp_clock());
	rc = tx_end(&x, rc);
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

	if ((rc = key_val(key, &k)) != RS_OK)
		return rc;
	if ((rc = tx_begin(e, &x, 0)) != RS_OK)
		return rc;
	rc = del(&x, e->expect, &k, NULL);
	rc2 = del(&x, e->deleting, &k, NULL);
	if (rc == RS_OK || rc == RS_ENOTFOUND)
		rc = rc2 == RS_ENOTFOUND ? RS_OK : rc2;
	return tx_end(&x, rc);
}

rs_code
rs_exp_delete(struct rs_exp *e, const char *key)
{
	DRAINING(e, delete_once(e, key));
}

/* ---- written resource versions ---- */

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
	rs_code rc = get(x, x->e->written, k, &d);

	if (rc == RS_OK && d.mv_size == WR_LEGACY)
		return RS_ENOTFOUND;
	if (rc == RS_OK && !wr_decode(&d, v))
		rc = damaged(x->e, x, "a written record fails its check");
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

	if ((rc = key_val(key, &k)) != RS_OK)
		return rc;
	if (uid == NULL || strlen(uid) > RS_EXP_UID_MAX)
		return RS_EUSAGE;
	for (i = 0; i < n; i++)
		if (!write_fits(&w[i]))
			return RS_EUSAGE;
	if ((rc = tx_begin(e, &x, 0)) != RS_OK)
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
		rc = put(&x, e->written, &k, &d, 0);
	}
	return tx_end(&x, rc);
}

rs_code
rs_exp_written(struct rs_exp *e, const char *key, struct rs_exp_written *out)
{
	struct tx x;
	MDB_val k;
	rs_code rc;

	memset(out, 0, sizeof *out);
	if ((rc = key_val(key, &k)) != RS_OK)
		return rc;
	if ((rc = tx_begin(e, &x, MDB_RDONLY)) != RS_OK)
		return rc;
	if ((rc = wr_load(&x, &k, out)) != RS_OK)
		memset(out, 0, sizeof *out);
	reader_end(&x);
	return rc;
}

static rs_code
clear_written_once(struct rs_exp *e, const char *key, const char *uid)
{
	struct rs_exp_written v;
	struct tx x;
	MDB_val k;
	rs_code rc;

	if ((rc = key_val(key, &k)) != RS_OK)
		return rc;
	if ((rc = tx_begin(e, &x, 0)) != RS_OK)
		return rc;
	rc = wr_load(&x, &k, &v);
	/* a damaged record is dropped whatever its uid */
	if (rc == RS_EPARSE || (rc == RS_OK && (uid == NULL ||
	    uid[0] == '\0' || strcmp(v.uid, uid) == 0))) {
		x.note[0] = '\0';
		rc = del(&x, e->written, &k, NULL);
	}
	return tx_end(&x, rc);
}

rs_code
rs_exp_clear_written(struct rs_exp *e, const char *key, const char *uid)
{
	DRAINING(e, clear_written_once(e, key, uid));
}

/* ---- inspection ---- */

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
		return mdb_code(x->e, x, err);
	err = mdb_cursor_get(c, &kk, &p, MDB_SET_KEY);
	if (err == MDB_NOTFOUND)
		goto out;
	if (err != 0 || (err = mdb_cursor_count(c, &count)) != 0) {
		rc = mdb_code(x->e, x, err);
		goto out;
	}
	if ((r->pods = malloc(count * (sizeof(char *) + RS_EXP_KEY_MAX + 1)))
	    == NULL) {
		rc = RS_ENOMEM;
		goto out;
	}
	s = (char *)(r->pods + count);
	for (i = 0; err == 0 && i < count; i++) {
		if (!key_copy(&p, s)) {
			rc = damaged(x->e, x, "a pod key fails its check");
			goto out;
		}
		r->pods[n++] = s;
		s += p.mv_size + 1;
		err = mdb_cursor_get(c, &kk, &p, MDB_NEXT_DUP);
	}
	if (err != 0 && err != MDB_NOTFOUND)
		rc = mdb_code(x->e, x, err);
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
	if (!key_copy(k, r->key))
		return damaged(x->e, x, "a key fails its check");
	r->add = v->add;
	r->del = v->del;
	r->timestamp_ns = v->ts;
	r->age_ns = (int64_t)((uint64_t)now - (uint64_t)v->ts);
	r->why = judge(v, now);
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
	if ((rc = key_val(key, &k)) != RS_OK)
		return rc;
	if ((rc = tx_begin(e, &x, MDB_RDONLY)) != RS_OK)
		return rc;
	if ((rc = exp_load(&x, &k, &v)) == RS_OK)
		rc = record_copy(&x, &k, &v, exp_clock(), out);
	reader_end(&x);
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
		return mdb_code(x->e, x, err);
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
		rc = mdb_code(x->e, x, err);
	else if (!exp_valid(&d, &v))
		rc = damaged(x->e, x, "a record fails its check");
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
	if ((rc = tx_begin(e, &x, MDB_RDONLY)) != RS_OK)
		return rc;
	rc = next_in(&x, c, exp_clock(), out);
	reader_end(&x);
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
	int64_t now = exp_clock();
	rs_code rc;

	/* one read transaction: a snapshot, and no writer waits for it */
	if ((rc = tx_begin(e, &x, MDB_RDONLY)) != RS_OK)
		return rc;
	while ((rc = next_in(&x, &c, now, &r)) == RS_OK) {
		rc = dump_one(&r, w);
		rs_exp_record_free(&r);
		if (rc != RS_OK)
			break;
	}
	reader_end(&x);
	return rc == RS_EEOF ? RS_OK : rc;
}

static uint64_t
entries(MDB_txn *t, MDB_dbi db)
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
	if ((rc = tx_begin(e, &x, MDB_RDONLY)) != RS_OK)
		return rc;
	st->keys = entries(x.t, e->expect);
	st->pods = entries(x.t, e->deleting);
	st->written = entries(x.t, e->written);
	reader_end(&x);
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
drop_all(struct tx *x)
{
	MDB_dbi dbs[] = { x->e->expect, x->e->deleting, x->e->written };
	size_t i;
	int err;

	for (i = 0; i < sizeof dbs / sizeof dbs[0]; i++) {
		if ((err = mdb_drop(x->t, dbs[i], 0)) != 0)
			return mdb_code(x->e, x, err);
		wrote(x);
	}
	return RS_OK;
}

static rs_code
reset_once(struct rs_exp *e)
{
	struct tx x;
	rs_code rc;

	if ((rc = tx_begin(e, &x, TX_REPAIR)) != RS_OK)
		return rc;
	if ((rc = tx_end(&x, drop_all(&x))) == RS_OK)
		e->damaged = 0;
	return rc;
}

rs_code
rs_exp_reset(struct rs_exp *e)
{
	DRAINING(e, reset_once(e));
}

/* ---- consistency check ---- */

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

	return d->mv_size == WR_LEGACY || wr_decode(d, &v);
}

/* One value of db, which ok checks; what says "the [what ]record". */
static rs_code
chk_value(struct chk *c, MDB_val *k, MDB_val *d, const char *db,
    const char *what, int (*ok)(const MDB_val *))
{
	char key[RS_EXP_KEY_MAX + 1];

	if (!key_copy(k, key))
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

	if (!key_copy(k, key) || !key_copy(d, pod))
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
	if ((rc = tx_begin(e, &x, MDB_RDONLY | TX_REPAIR)) != RS_OK)
		return rc;
	c.x = &x;
	if ((rc = chk_walk(&c, e->expect, "expect", chk_record)) == RS_OK &&
	    (rc = chk_walk(&c, e->deleting, "deleting", chk_pod)) == RS_OK)
		rc = chk_walk(&c, e->written, "written", chk_written);
	if (rc == RS_OK && c.records != entries(x.t, e->expect))
		rc = chk_fail(&c, "expect holds %llu entries, %llu walked",
		    (unsigned long long)entries(x.t, e->expect),
		    (unsigned long long)c.records);
	reader_end(&x);
	return rc;
}
