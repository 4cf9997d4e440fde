/* exp_store.h: what the files of the expectations store share, and no
 * one else includes: the store's handle, a transaction, a record's value,
 * and the small steps every operation is made of. The store itself is
 * described in doc/expectations-file.md; its parts:
 *  - exp_file.c: the two files checked before LMDB sees them;
 *  - exp_env.c: the LMDB environment: open, close, transactions, errors,
 *    the boot rule, stats and reset;
 *  - expectations.c: the expectations (counts and pods awaited);
 *  - exp_written.c: the resource versions of a controller's own writes;
 *  - exp_dump.c: records read out for people and tools;
 *  - exp_check.c: the integrity check. */
#ifndef RS_EXP_STORE_H
#define RS_EXP_STORE_H
#include <stdatomic.h>
#include <stdint.h>

#include <lmdb.h>

#include "expectations.h"

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

/* exp_env.c */
int64_t exp_now(void);
rs_code exp_key_val(const char *s, MDB_val *k);
int exp_key_copy(const MDB_val *k, char *out);
rs_code exp_damaged(struct rs_exp *e, struct tx *x, const char *why);
rs_code exp_mdb_code(struct rs_exp *e, struct tx *x, int err);
rs_code exp_tx_begin_sized(struct rs_exp *e, struct tx *x, unsigned flags,
    uint64_t extra);
rs_code exp_tx_begin(struct rs_exp *e, struct tx *x, unsigned flags);
rs_code exp_tx_begin_key(struct rs_exp *e, struct tx *x, unsigned flags,
    const char *key, MDB_val *k);
rs_code exp_tx_end(struct tx *x, rs_code rc);
void exp_reader_end(struct tx *x);
void exp_wrote(struct tx *x);
rs_code exp_put(struct tx *x, MDB_dbi db, MDB_val *k, MDB_val *d,
    unsigned flags);
rs_code exp_del(struct tx *x, MDB_dbi db, MDB_val *k, MDB_val *d);
rs_code exp_get(struct tx *x, MDB_dbi db, MDB_val *k, MDB_val *d);
rs_code exp_grow(struct rs_exp *e);
uint64_t exp_entries(MDB_txn *t, MDB_dbi db);

/* A call that only lowers or removes, run once more on a grown map when
 * the map is full (exp_grow): the store can always be emptied. */
#define DRAINING(e, call) do { \
	rs_code drc_; \
	(e)->draining = 1; \
	drc_ = (call); \
	(e)->draining = 0; \
	if (drc_ == RS_EFULL && exp_grow(e) == RS_OK) \
		drc_ = (call); \
	return drc_; \
} while (0)

/* exp_file.c */
rs_code exp_files_prepare(struct rs_exp *e, int nocreate);
rs_code exp_size_check(struct rs_exp *e);
rs_code exp_fd_check(struct rs_exp *e);

/* expectations.c */
static inline uint64_t
exp_sum(const void *src, size_t len)
{
	const unsigned char *p = src;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (len--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

int exp_valid(const MDB_val *d, struct exp_val *out);
rs_code exp_load(struct tx *x, MDB_val *k, struct exp_val *v);
enum rs_exp_why exp_judge(const struct exp_val *v, int64_t now);

/* exp_written.c */
int exp_wr_decode(const MDB_val *d, struct rs_exp_written *out);
#endif
