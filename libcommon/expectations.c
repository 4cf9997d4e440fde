/* expectations.c: the expectations file. Layout, locking and the undo log
 * are described in doc/expectations-file.md; in short:
 *  - a fixed header (magic, version, capacities, offsets, hash seed) under
 *    a checksum, copied into the handle at open and never trusted again;
 *  - a robust process-shared mutex, then the mutable counters;
 *  - key buckets, key entries, pod buckets, pod entries: chained hashing
 *    over fixed pools, links stored as index + 1 so that a sparse (zero)
 *    page reads as empty;
 *  - the undo log: every write to reachable state logs (offset, old value)
 *    first; commit empties the log; whoever takes the lock from a dead
 *    holder replays it backwards. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "clock.h"
#include "expectations.h"
#include "json.h"
#include "log.h"
#include "statedir.h"

#define EXP_MAGIC "RSEXPECT"
#define EXP_VERSION 1
#define EXP_ENDIAN 0x01020304u
#define EXP_ENDIAN_SWAPPED 0x04030201u
#define EXP_HDR_SIZE 4096u
#define EXP_ALIGN 4096u
#define EXP_CHUNK (64u << 10)   /* fallocate granularity */

#define KEY_LIVE 0x4b4c4956u    /* "KLIV" */
#define KEY_FREE 0x4b465245u    /* "KFRE" */
#define POD_LIVE 0x504c4956u    /* "PLIV" */
#define POD_FREE 0x50465245u    /* "PFRE" */

/* Logged writes a transaction may need: key creation 8, counts 3, per pod
 * freed 5, per pod added 11, per pod removed 9. The undo log holds the
 * largest: filling a set of every pod entry. */
#define TX_BASE 16u
#define TX_POD_FREE 5u
#define TX_POD_ADD 11u

/* Immutable after creation; covered by csum. */
struct exp_fixed {
	char magic[8];
	uint32_t version, endian;
	uint32_t hdr_size, mutex_size;
	uint32_t key_entry_size, pod_entry_size;
	uint32_t undo_entry_size, pad0;
	uint32_t key_cap, key_nbuckets;
	uint32_t pod_cap, pod_nbuckets;
	uint64_t undo_cap;
	uint64_t off_kb, off_ke, off_pb, off_pe, off_undo;
	uint64_t file_size;
	uint64_t seed[2];
	uint64_t csum;
};

/* Mutable, under the lock. Links are index + 1; 0 ends a list. */
struct exp_state {
	uint32_t key_free, key_hwm, key_live, key_backed;
	uint32_t pod_free, pod_hwm, pod_live, pod_backed;
	uint64_t undo_len, undo_backed;
	uint64_t commits, recoveries, rollbacks, resets;
	uint32_t resetting, holder;
};

struct exp_hdr {
	struct exp_fixed f;
	char boot_id[48];               /* changed only at open, see open_lock */
	alignas(64) pthread_mutex_t lock;
	alignas(64) struct exp_state s;
};

struct kent {
	uint32_t hnext;         /* bucket chain, or free list */
	uint32_t state;
	uint32_t pods;          /* head of the pod-key set */
	uint32_t npods;
	uint64_t hash;
	int64_t add, del, ts;
	uint16_t klen;
	char key[RS_EXP_KEY_MAX + 1];
};

struct pent {
	uint32_t hnext;         /* bucket chain, or free list */
	uint32_t state;
	uint32_t owner;         /* the key entry */
	uint32_t onext, oprev;  /* the owner's set */
	uint32_t pad;
	uint64_t hash;          /* of the pod key alone */
	uint16_t klen;
	char key[RS_EXP_KEY_MAX + 1];
};

struct undo {
	uint64_t where;         /* offset << 1 | (8-byte word) */
	uint64_t old;
};

_Static_assert(sizeof(struct exp_hdr) <= EXP_HDR_SIZE, "header too big");

struct rs_exp {
	char *path;
	int fd;
	uint8_t *base;
	size_t size;
	struct exp_fixed f;     /* validated copy */
	struct exp_hdr *h;
	uint32_t *kb, *pb;
	struct kent *ke;
	struct pent *pe;
	struct undo *undo;
	unsigned lock_ms;
	/* The transaction in progress; touched only under the lock. */
	uint64_t tx_limit;
	int tx_over;
	const char *bad;        /* first damage seen, or NULL */
	int locked;
	int note_err;           /* note is an error, not a warning */
	char note[256];         /* said once the lock is released */
};

struct kref {
	const char *s;
	size_t len;
	uint64_t h;
};

static int64_t (*exp_clock)(void) = rs_mono_ns;
static void (*exp_hook)(uint64_t);

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

/* ---- hashing ---- */

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND do { \
	v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
	v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
	v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; \
	v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
} while (0)

/* SipHash-2-4, keyed by the file's random seed: names come from the
 * cluster, and a chosen set of names must not make one long chain. */
static uint64_t
siphash(const uint64_t k[2], const void *src, size_t len)
{
	const uint8_t *p = src;
	uint64_t v0 = k[0] ^ 0x736f6d6570736575ULL;
	uint64_t v1 = k[1] ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k[0] ^ 0x6c7967656e657261ULL;
	uint64_t v3 = k[1] ^ 0x7465646279746573ULL;
	uint64_t m, b = (uint64_t)len << 56;
	size_t i, n = len & ~(size_t)7;
	int j;

	for (i = 0; i < n; i += 8) {
		m = 0;
		for (j = 7; j >= 0; j--)
			m = m << 8 | p[i + j];
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (j = 0; i + j < len; j++)
		b |= (uint64_t)p[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t
fnv1a(const void *src, size_t len)
{
	const uint8_t *p = src;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (len-- > 0)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

static uint64_t
fixed_csum(const struct exp_fixed *f)
{
	return fnv1a(f, offsetof(struct exp_fixed, csum));
}

/* A pod key hashes alone; its bucket also depends on the owner, so that
 * the same pod in two sets lands in two places. */
static uint32_t
pod_bucket(const struct rs_exp *e, uint64_t h, uint32_t owner)
{
	h ^= (uint64_t)owner * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 29;
	return (uint32_t)(h & (e->f.pod_nbuckets - 1));
}

static rs_code
kref_init(const struct rs_exp *e, const char *s, struct kref *k)
{
	if (s == NULL)
		return RS_EUSAGE;
	k->s = s;
	k->len = strnlen(s, RS_EXP_KEY_MAX + 1);
	if (k->len == 0)
		return RS_EUSAGE;
	if (k->len > RS_EXP_KEY_MAX)
		return RS_ETOOBIG;
	k->h = siphash(e->f.seed, s, k->len);
	return RS_OK;
}

/* ---- layout ---- */

static uint64_t
align_up(uint64_t n, uint64_t a)
{
	return (n + a - 1) / a * a;
}

static uint32_t
pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static int
layout(uint32_t keys, uint32_t pods, struct exp_fixed *f)
{
	uint64_t off;

	if (keys == 0 || keys > RS_EXP_CAP_MAX || pods == 0 ||
	    pods > RS_EXP_CAP_MAX)
		return -1;
	memset(f, 0, sizeof *f);
	memcpy(f->magic, EXP_MAGIC, sizeof f->magic);
	f->version = EXP_VERSION;
	f->endian = EXP_ENDIAN;
	f->hdr_size = EXP_HDR_SIZE;
	f->mutex_size = sizeof(pthread_mutex_t);
	f->key_entry_size = sizeof(struct kent);
	f->pod_entry_size = sizeof(struct pent);
	f->undo_entry_size = sizeof(struct undo);
	f->key_cap = keys;
	f->key_nbuckets = pow2_at_least(keys);
	f->pod_cap = pods;
	f->pod_nbuckets = pow2_at_least(pods);
	f->undo_cap = TX_BASE + (uint64_t)TX_POD_ADD * pods;
	off = EXP_HDR_SIZE;
	f->off_kb = off;
	off = align_up(off + (uint64_t)f->key_nbuckets * 4, EXP_ALIGN);
	f->off_ke = off;
	off = align_up(off + (uint64_t)keys * sizeof(struct kent), EXP_ALIGN);
	f->off_pb = off;
	off = align_up(off + (uint64_t)f->pod_nbuckets * 4, EXP_ALIGN);
	f->off_pe = off;
	off = align_up(off + (uint64_t)pods * sizeof(struct pent), EXP_ALIGN);
	f->off_undo = off;
	off = align_up(off + f->undo_cap * sizeof(struct undo), EXP_ALIGN);
	f->file_size = off;
	return 0;
}

/* Whether a file's fixed header is one this build can use; why says not.
 * Byte order and version are judged before the checksum, which only this
 * version in this byte order defines; but only a byte-order mark that is
 * ours or exactly swapped is believed: anything else is damage, which the
 * checksum names, not a file from another machine or version. */
static int
fixed_valid(const struct exp_fixed *got, uint64_t size, const char **why)
{
	struct exp_fixed want;

	if (memcmp(got->magic, EXP_MAGIC, sizeof got->magic) != 0)
		return *why = "not an expectations file (bad magic)", 0;
	if (got->endian == EXP_ENDIAN_SWAPPED)
		return *why = "written on a machine of another byte order", 0;
	if (got->endian == EXP_ENDIAN && got->version != EXP_VERSION)
		return *why = "unsupported format version", 0;
	if (got->csum != fixed_csum(got))
		return *why = "header checksum mismatch (damaged: remove it)",
		    0;
	if (layout(got->key_cap, got->pod_cap, &want) < 0)
		return *why = "capacity figures out of range", 0;
	want.seed[0] = got->seed[0];
	want.seed[1] = got->seed[1];
	want.csum = got->csum;
	if (memcmp(&want, got, sizeof want) != 0)
		return *why = "layout does not match this build", 0;
	if (size != got->file_size)
		return *why = "file size does not match its header "
		    "(truncated?)", 0;
	return 1;
}

/* A message: held back while the lock is held, so that a stalled stderr
 * never holds up other processes. */
static void note(struct rs_exp *e, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
note(struct rs_exp *e, int err, const char *fmt, ...)
{
	char msg[sizeof e->note];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!e->locked) {
		if (err)
			rs_error("%s", msg);
		else
			rs_warn("%s", msg);
	} else if (e->note[0] == '\0') {
		memcpy(e->note, msg, sizeof msg);
		e->note_err = err;
	}
}

/* ---- file backing ---- */

/* On tmpfs a sparse page is allocated when first written, and a full
 * tmpfs answers that write with SIGBUS. Allocating ahead turns that into
 * RS_EFULL. */
static rs_code
back(struct rs_exp *e, uint64_t off, uint64_t len)
{
	int r;

	if (len == 0)
		return RS_OK;
	r = posix_fallocate(e->fd, (off_t)off, (off_t)len);
	if (r == 0 || r == EOPNOTSUPP || r == EINVAL)
		return RS_OK;
	note(e, 1, "unable to allocate space in %s: %s", e->path,
	    strerror(r));
	return r == ENOSPC ? RS_EFULL : RS_EIO;
}

/* Ensures entries [0, need) of a region of entsz-byte entries are backed;
 * *backed is the shared watermark, a hint that needs no undo. */
static rs_code
back_entries(struct rs_exp *e, uint64_t region, uint64_t entsz, uint64_t cap,
    uint64_t need, uint64_t *backed)
{
	uint64_t from, to;
	rs_code rc;

	if (need <= *backed)
		return RS_OK;
	from = region + *backed * entsz;
	to = region + need * entsz;
	to = align_up(to, EXP_CHUNK);
	if (to > region + cap * entsz)
		to = region + cap * entsz;
	rc = back(e, from & ~(uint64_t)(EXP_ALIGN - 1),
	    to - (from & ~(uint64_t)(EXP_ALIGN - 1)));
	if (rc == RS_OK)
		*backed = (to - region) / entsz;
	return rc;
}

/* ---- transactions ---- */

static void
damaged(struct rs_exp *e, const char *why)
{
	if (e->bad == NULL)
		e->bad = why;
}

static int
undo_target_ok(const struct rs_exp *e, uint64_t where)
{
	uint64_t off = where >> 1;
	uint64_t w = (where & 1) ? 8 : 4;
	uint64_t s0 = offsetof(struct exp_hdr, s);
	uint64_t len = s0 + offsetof(struct exp_state, undo_len);

	if (off % w != 0)
		return 0;
	if (off >= s0 && off + w <= s0 + sizeof(struct exp_state))
		return off + w <= len || off >= len + 8;
	return off >= e->f.off_kb && off + w <= e->f.off_undo;
}

/* Logs the old value of the word at p; 0 when the transaction is over its
 * reserved size (then nothing may be written). */
static int
logw(struct rs_exp *e, void *p, int wide)
{
	struct exp_state *s = &e->h->s;
	uint64_t n = s->undo_len;
	struct undo *u;

	if (n >= e->tx_limit) {
		e->tx_over = 1;
		return 0;
	}
	u = &e->undo[n];
	u->where = (uint64_t)((uint8_t *)p - e->base) << 1 | (wide ? 1 : 0);
	u->old = wide ? *(uint64_t *)p : *(uint32_t *)p;
	/* The entry before the length that covers it, the length before the
	 * write it guards: a process killed between any two stores leaves a
	 * log that undoes exactly what was written. */
	atomic_signal_fence(memory_order_seq_cst);
	s->undo_len = n + 1;
	atomic_signal_fence(memory_order_seq_cst);
	return 1;
}

static void
set32(struct rs_exp *e, uint32_t *p, uint32_t v)
{
	if (!logw(e, p, 0))
		return;
	*p = v;
	atomic_signal_fence(memory_order_seq_cst);
	if (exp_hook)
		exp_hook(e->h->s.undo_len);
}

static void
set64(struct rs_exp *e, int64_t *p, int64_t v)
{
	if (!logw(e, p, 1))
		return;
	*p = v;
	atomic_signal_fence(memory_order_seq_cst);
	if (exp_hook)
		exp_hook(e->h->s.undo_len);
}

/* Replays the log backwards. Every entry is checked before any is
 * applied, so a damaged log changes nothing. Idempotent: a process killed
 * while rolling back leaves the log for the next one. */
static int
rollback(struct rs_exp *e)
{
	struct exp_state *s = &e->h->s;
	uint64_t i, n = s->undo_len;

	if (n > e->f.undo_cap)
		return -1;
	for (i = 0; i < n; i++)
		if (!undo_target_ok(e, e->undo[i].where))
			return -1;
	for (i = n; i-- > 0;) {
		const struct undo *u = &e->undo[i];
		uint8_t *p = e->base + (u->where >> 1);

		if (u->where & 1)
			*(uint64_t *)p = u->old;
		else
			*(uint32_t *)p = (uint32_t)u->old;
	}
	atomic_signal_fence(memory_order_seq_cst);
	s->undo_len = 0;
	return 0;
}

/* Backs room in the undo log for need writes. */
static rs_code
undo_reserve(struct rs_exp *e, uint64_t need)
{
	if (need > e->f.undo_cap)
		return RS_EFULL;
	return back_entries(e, e->f.off_undo, sizeof(struct undo),
	    e->f.undo_cap, need, &e->h->s.undo_backed);
}

static rs_code
tx_begin(struct rs_exp *e, uint64_t need)
{
	rs_code rc;

	if ((rc = undo_reserve(e, need)) != RS_OK)
		return rc;
	e->tx_limit = need;
	e->tx_over = 0;
	return RS_OK;
}

/* Commits on success, rolls back anything else. */
static rs_code
tx_end(struct rs_exp *e, rs_code rc)
{
	struct exp_state *s = &e->h->s;

	if (rc == RS_OK && e->bad)
		rc = RS_EPARSE;
	if (rc == RS_OK && e->tx_over) {
		note(e, 1, "%s: transaction over its reserved size", e->path);
		rc = RS_EFULL;
	}
	atomic_signal_fence(memory_order_seq_cst);
	if (rc == RS_OK) {
		s->undo_len = 0;
		s->commits++;
	} else if (rollback(e) < 0) {
		damaged(e, "undo log damaged");
	}
	return rc;
}

/* ---- locking ---- */

static void
tables_clear(struct rs_exp *e)
{
	struct exp_state *s = &e->h->s;

	s->resetting = 1;
	atomic_signal_fence(memory_order_seq_cst);
	memset(e->kb, 0, (size_t)e->f.key_nbuckets * 4);
	memset(e->pb, 0, (size_t)e->f.pod_nbuckets * 4);
	s->key_free = s->key_hwm = s->key_live = s->key_backed = 0;
	s->pod_free = s->pod_hwm = s->pod_live = s->pod_backed = 0;
	s->undo_len = s->undo_backed = 0;
	s->resets++;
	atomic_signal_fence(memory_order_seq_cst);
	s->resetting = 0;
}

static void
state_validate(struct rs_exp *e)
{
	const struct exp_state *s = &e->h->s;

	if (s->key_hwm > e->f.key_cap || s->key_live > s->key_hwm ||
	    s->key_free > s->key_hwm || s->key_backed > e->f.key_cap)
		damaged(e, "key counters out of range");
	if (s->pod_hwm > e->f.pod_cap || s->pod_live > s->pod_hwm ||
	    s->pod_free > s->pod_hwm || s->pod_backed > e->f.pod_cap)
		damaged(e, "pod counters out of range");
	if (s->undo_len != 0 || s->undo_backed > e->f.undo_cap)
		damaged(e, "undo log counters out of range");
}

/* Takes the lock, repairing after a holder that died: a reset in progress
 * is finished, a transaction in progress is undone. */
static rs_code
lock(struct rs_exp *e)
{
	struct exp_state *s = &e->h->s;
	struct timespec t;
	uint64_t n;
	int r, dead = 0;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += e->lock_ms / 1000;
	t.tv_nsec += (long)(e->lock_ms % 1000) * 1000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	r = pthread_mutex_clocklock(&e->h->lock, CLOCK_MONOTONIC, &t);
	if (r == EOWNERDEAD) {
		dead = 1;
	} else if (r == ETIMEDOUT) {
		rs_error("unable to lock %s: held for more than %u ms "
		    "(by pid %u)", e->path, e->lock_ms, (unsigned)s->holder);
		return RS_ETIMEOUT;
	} else if (r != 0) {
		rs_error("unable to lock %s: %s", e->path, strerror(r));
		return RS_EIO;
	}
	e->locked = 1;
	e->bad = NULL;
	n = s->undo_len;
	if (s->resetting)
		tables_clear(e);
	if (s->undo_len != 0) {
		if (rollback(e) < 0)
			damaged(e, "undo log damaged");
		else
			s->rollbacks++;
	}
	if (dead) {
		s->recoveries++;
		pthread_mutex_consistent(&e->h->lock);
		note(e, 0, "%s: took over the lock of dead pid %u, undid "
		    "%llu writes", e->path, (unsigned)s->holder,
		    (unsigned long long)n);
	}
	s->holder = (uint32_t)getpid();
	state_validate(e);
	return RS_OK;
}

static void
unlock(struct rs_exp *e)
{
	char msg[sizeof e->note];
	int err = e->note_err;

	memcpy(msg, e->note, sizeof msg);
	e->note[0] = '\0';
	e->locked = 0;
	e->h->s.holder = 0;
	pthread_mutex_unlock(&e->h->lock);
	if (msg[0] != '\0' && err)
		rs_error("%s", msg);
	else if (msg[0] != '\0')
		rs_warn("%s", msg);
}

/* Unlocks; says what damage the operation met, if any. */
static rs_code
finish(struct rs_exp *e, rs_code rc)
{
	const char *bad = e->bad;

	unlock(e);
	if (rc == RS_EPARSE && bad)
		rs_error("%s is damaged: %s (rs_exp_reset or remove it)",
		    e->path, bad);
	return rc;
}

/* Wrapping arithmetic: values read from a damaged file must not be
 * undefined behaviour. */
static int64_t
sub64(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* ---- entries ---- */

static struct kent *
key_at(struct rs_exp *e, uint32_t link)
{
	if (link == 0 || link > e->h->s.key_hwm) {
		damaged(e, "key link out of range");
		return NULL;
	}
	return &e->ke[link - 1];
}

static struct pent *
pod_at(struct rs_exp *e, uint32_t link)
{
	if (link == 0 || link > e->h->s.pod_hwm) {
		damaged(e, "pod link out of range");
		return NULL;
	}
	return &e->pe[link - 1];
}

/* The link of key k, and where that link is stored; 0 when absent. */
static uint32_t
key_find(struct rs_exp *e, const struct kref *k, uint32_t **where)
{
	uint32_t *link = &e->kb[k->h & (e->f.key_nbuckets - 1)];
	uint32_t steps = 0;
	struct kent *ke;

	while (*link != 0) {
		if ((ke = key_at(e, *link)) == NULL)
			return 0;
		if (ke->state != KEY_LIVE) {
			damaged(e, "free key entry on a hash chain");
			return 0;
		}
		if (ke->hash == k->h && ke->klen == k->len &&
		    memcmp(ke->key, k->s, k->len) == 0) {
			if (where)
				*where = link;
			return *link;
		}
		if (++steps > e->f.key_cap) {
			damaged(e, "cycle in a key hash chain");
			return 0;
		}
		link = &ke->hnext;
	}
	return 0;
}

static uint32_t
pod_find(struct rs_exp *e, uint32_t owner, const struct kref *k,
    uint32_t **where)
{
	uint32_t *link = &e->pb[pod_bucket(e, k->h, owner)];
	uint32_t steps = 0;
	struct pent *pe;

	while (*link != 0) {
		if ((pe = pod_at(e, *link)) == NULL)
			return 0;
		if (pe->state != POD_LIVE) {
			damaged(e, "free pod entry on a hash chain");
			return 0;
		}
		if (pe->owner == owner && pe->hash == k->h &&
		    pe->klen == k->len && memcmp(pe->key, k->s, k->len) == 0) {
			if (where)
				*where = link;
			return *link;
		}
		if (++steps > e->f.pod_cap) {
			damaged(e, "cycle in a pod hash chain");
			return 0;
		}
		link = &pe->hnext;
	}
	return 0;
}

/* Takes an entry off a free list or above the high-water mark (the caller
 * has backed it). Writing its key needs no undo: until linked it is
 * reachable only as a free entry, whose key nobody reads. */
static rs_code
entry_alloc(struct rs_exp *e, int pod, uint32_t *out)
{
	struct exp_state *s = &e->h->s;
	uint32_t *freel = pod ? &s->pod_free : &s->key_free;
	uint32_t *hwm = pod ? &s->pod_hwm : &s->key_hwm;
	uint32_t cap = pod ? e->f.pod_cap : e->f.key_cap;
	uint32_t l = *freel;

	if (l != 0) {
		if (pod) {
			struct pent *pe = pod_at(e, l);

			if (pe == NULL || pe->state != POD_FREE)
				goto bad;
			set32(e, freel, pe->hnext);
		} else {
			struct kent *ke = key_at(e, l);

			if (ke == NULL || ke->state != KEY_FREE)
				goto bad;
			set32(e, freel, ke->hnext);
		}
		*out = l;
		return RS_OK;
	}
	if (*hwm >= cap)
		return RS_EFULL;
	l = *hwm + 1;
	set32(e, hwm, l);
	*out = l;
	return RS_OK;
bad:
	damaged(e, "free list damaged");
	return RS_EPARSE;
}

/* back_entries takes a 64-bit watermark; the header keeps 32-bit ones. */
static rs_code
back_entries32(struct rs_exp *e, int pod, uint32_t need)
{
	struct exp_state *s = &e->h->s;
	uint32_t *w = pod ? &s->pod_backed : &s->key_backed;
	uint64_t b = *w;
	rs_code rc;

	if (pod)
		rc = back_entries(e, e->f.off_pe, sizeof(struct pent),
		    e->f.pod_cap, need, &b);
	else
		rc = back_entries(e, e->f.off_ke, sizeof(struct kent),
		    e->f.key_cap, need, &b);
	*w = (uint32_t)b;
	return rc;
}

static rs_code
key_new(struct rs_exp *e, const struct kref *k, uint32_t *out)
{
	struct exp_state *s = &e->h->s;
	uint32_t *bucket = &e->kb[k->h & (e->f.key_nbuckets - 1)];
	struct kent *ke;
	uint32_t l;
	rs_code rc;

	if (s->key_free == 0 && s->key_hwm < e->f.key_cap &&
	    (rc = back_entries32(e, 0, s->key_hwm + 1)) != RS_OK)
		return rc;
	if ((rc = entry_alloc(e, 0, &l)) != RS_OK)
		return rc;
	ke = &e->ke[l - 1];
	memcpy(ke->key, k->s, k->len);
	ke->key[k->len] = '\0';
	ke->klen = (uint16_t)k->len;
	ke->hash = k->h;
	set32(e, &ke->pods, 0);
	set32(e, &ke->npods, 0);
	set32(e, &ke->hnext, *bucket);
	set32(e, &ke->state, KEY_LIVE);
	set32(e, bucket, l);
	set32(e, &s->key_live, s->key_live + 1);
	*out = l;
	return RS_OK;
}

/* Unlinks pod l from its hash chain. */
static void
pod_unhash(struct rs_exp *e, uint32_t l, struct pent *pe)
{
	uint32_t *link = &e->pb[pod_bucket(e, pe->hash, pe->owner)];
	uint32_t steps = 0;
	struct pent *q;

	while (*link != l) {
		if (*link == 0 || ++steps > e->f.pod_cap ||
		    (q = pod_at(e, *link)) == NULL) {
			damaged(e, "pod entry missing from its hash chain");
			return;
		}
		link = &q->hnext;
	}
	set32(e, link, pe->hnext);
}

static void
pod_release(struct rs_exp *e, uint32_t l, struct pent *pe)
{
	struct exp_state *s = &e->h->s;

	pod_unhash(e, l, pe);
	set32(e, &pe->state, POD_FREE);
	set32(e, &pe->hnext, s->pod_free);
	set32(e, &s->pod_free, l);
	set32(e, &s->pod_live, s->pod_live - 1);
}

/* Empties key owner's pod-key set. */
static void
pods_clear(struct rs_exp *e, uint32_t owner, struct kent *ke)
{
	uint32_t l = ke->pods, n = 0;
	struct pent *pe;

	while (l != 0 && e->bad == NULL) {
		if ((pe = pod_at(e, l)) == NULL)
			return;
		if (pe->state != POD_LIVE || pe->owner != owner ||
		    ++n > e->f.pod_cap) {
			damaged(e, "pod-key set damaged");
			return;
		}
		l = pe->onext;
		pod_release(e, (uint32_t)(pe - e->pe) + 1, pe);
	}
	if (n != ke->npods)
		damaged(e, "pod-key set size mismatch");
	set32(e, &ke->pods, 0);
	set32(e, &ke->npods, 0);
}

static rs_code
pod_add(struct rs_exp *e, uint32_t owner, struct kent *ke,
    const struct kref *k)
{
	struct exp_state *s = &e->h->s;
	uint32_t *bucket = &e->pb[pod_bucket(e, k->h, owner)];
	struct pent *pe, *head;
	uint32_t l;
	rs_code rc;

	if (s->pod_free == 0 && s->pod_hwm < e->f.pod_cap &&
	    (rc = back_entries32(e, 1, s->pod_hwm + 1)) != RS_OK)
		return rc;
	if ((rc = entry_alloc(e, 1, &l)) != RS_OK)
		return rc;
	pe = &e->pe[l - 1];
	memcpy(pe->key, k->s, k->len);
	pe->key[k->len] = '\0';
	pe->klen = (uint16_t)k->len;
	pe->hash = k->h;
	set32(e, &pe->owner, owner);
	set32(e, &pe->oprev, 0);
	set32(e, &pe->onext, ke->pods);
	if (ke->pods != 0) {
		if ((head = pod_at(e, ke->pods)) == NULL)
			return RS_EPARSE;
		set32(e, &head->oprev, l);
	}
	set32(e, &ke->pods, l);
	set32(e, &ke->npods, ke->npods + 1);
	set32(e, &pe->hnext, *bucket);
	set32(e, &pe->state, POD_LIVE);
	set32(e, bucket, l);
	set32(e, &s->pod_live, s->pod_live + 1);
	return RS_OK;
}

static void
pod_remove(struct rs_exp *e, struct kent *ke, uint32_t l)
{
	struct pent *pe = pod_at(e, l), *q;

	if (pe == NULL)
		return;
	if (pe->oprev != 0) {
		if ((q = pod_at(e, pe->oprev)) == NULL)
			return;
		set32(e, &q->onext, pe->onext);
	} else {
		set32(e, &ke->pods, pe->onext);
	}
	if (pe->onext != 0) {
		if ((q = pod_at(e, pe->onext)) == NULL)
			return;
		set32(e, &q->oprev, pe->oprev);
	}
	set32(e, &ke->npods, ke->npods - 1);
	pod_release(e, l, pe);
}

static void
key_remove(struct rs_exp *e, uint32_t l, uint32_t *where)
{
	struct exp_state *s = &e->h->s;
	struct kent *ke = &e->ke[l - 1];

	pods_clear(e, l, ke);
	set32(e, where, ke->hnext);
	set32(e, &ke->state, KEY_FREE);
	set32(e, &ke->hnext, s->key_free);
	set32(e, &s->key_free, l);
	set32(e, &s->key_live, s->key_live - 1);
}

/* ---- open and close ---- */

static void
boot_id(char out[48])
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = -1;

	memset(out, 0, 48);
	if (fd >= 0) {
		n = read(fd, out, 47);
		close(fd);
	}
	if (n <= 0)
		memset(out, 0, 48);
	else if (out[n - 1] == '\n')
		out[n - 1] = '\0';
}

static void
new_seed(uint64_t seed[2])
{
	if (getrandom(seed, 16, 0) == 16)
		return;
	seed[0] = (uint64_t)rs_mono_ns() ^ ((uint64_t)getpid() << 32);
	seed[1] = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL;
}

static rs_code
mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int r;

	if ((r = pthread_mutexattr_init(&a)) != 0)
		return RS_EIO;
	if ((r = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED)) ==
	    0)
		r = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (r == 0)
		r = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return r == 0 ? RS_OK : RS_EIO;
}

static void
handle_map(struct rs_exp *e)
{
	e->h = (struct exp_hdr *)e->base;
	e->kb = (uint32_t *)(e->base + e->f.off_kb);
	e->ke = (struct kent *)(e->base + e->f.off_ke);
	e->pb = (uint32_t *)(e->base + e->f.off_pb);
	e->pe = (struct pent *)(e->base + e->f.off_pe);
	e->undo = (struct undo *)(e->base + e->f.off_undo);
}

static rs_code
map_file(struct rs_exp *e)
{
	void *p;

	e->size = e->f.file_size;
	p = mmap(NULL, e->size, PROT_READ | PROT_WRITE, MAP_SHARED, e->fd, 0);
	if (p == MAP_FAILED) {
		rs_error("unable to map %s: %s", e->path, strerror(errno));
		return errno == ENOMEM ? RS_ENOMEM : RS_EIO;
	}
	e->base = p;
	handle_map(e);
	return RS_OK;
}

/* A new (empty) file. The magic is written last, so that a creator killed
 * half-way leaves a file that the next opener initialises again. */
static rs_code
file_init(struct rs_exp *e, const struct rs_exp_opts *o)
{
	uint32_t keys = o && o->keys ? o->keys : RS_EXP_KEYS_DEFAULT;
	uint32_t pods = o && o->pods ? o->pods : RS_EXP_PODS_DEFAULT;
	struct exp_fixed f;
	rs_code rc;

	if (layout(keys, pods, &f) < 0) {
		rs_error("unable to create %s: capacities must be 1..%u",
		    e->path, RS_EXP_CAP_MAX);
		return RS_EUSAGE;
	}
	new_seed(f.seed);
	f.csum = fixed_csum(&f);
	if (fchmod(e->fd, 0600) < 0 || ftruncate(e->fd, 0) < 0 ||
	    ftruncate(e->fd, (off_t)f.file_size) < 0) {
		rs_error("unable to size %s: %s", e->path, strerror(errno));
		return RS_EIO;
	}
	e->f = f;
	if ((rc = back(e, 0, f.off_ke)) != RS_OK ||
	    (rc = back(e, f.off_pb, f.off_pe - f.off_pb)) != RS_OK)
		return rc;
	if ((rc = map_file(e)) != RS_OK)
		return rc;
	boot_id(e->h->boot_id);
	if ((rc = mutex_init(&e->h->lock)) != RS_OK) {
		rs_error("unable to initialise the lock of %s", e->path);
		return rc;
	}
	memcpy((uint8_t *)&e->h->f + sizeof f.magic,
	    (const uint8_t *)&f + sizeof f.magic, sizeof f - sizeof f.magic);
	atomic_signal_fence(memory_order_seq_cst);
	memcpy(e->h->f.magic, f.magic, sizeof f.magic);
	return RS_OK;
}

static int
magic_unset(const struct exp_fixed *f)
{
	size_t i;

	for (i = 0; i < sizeof f->magic; i++)
		if (f->magic[i] != 0)
			return 0;
	return 1;
}

/* An existing file: validated from a private copy of its header. */
static rs_code
file_load(struct rs_exp *e, uint64_t size)
{
	struct exp_fixed f;
	const char *why = NULL;
	char boot[48];
	ssize_t n;
	rs_code rc;

	if (size < EXP_HDR_SIZE) {
		rs_error("unable to use %s: not an expectations file "
		    "(%llu bytes: truncated?)", e->path,
		    (unsigned long long)size);
		return RS_EPARSE;
	}
	n = pread(e->fd, &f, sizeof f, 0);
	if (n != (ssize_t)sizeof f) {
		rs_error("unable to read %s: %s", e->path,
		    n < 0 ? strerror(errno) : "short read");
		return RS_EIO;
	}
	if (!fixed_valid(&f, size, &why)) {
		rs_error("unable to use %s: %s", e->path, why);
		return RS_EPARSE;
	}
	e->f = f;
	if ((rc = map_file(e)) != RS_OK)
		return rc;
	/* Monotonic timestamps and a lock owned by a thread of an earlier
	 * boot mean nothing now: start again, as a restarted upstream
	 * controller starts with no expectations. */
	boot_id(boot);
	if (boot[0] != '\0' && memcmp(boot, e->h->boot_id, sizeof boot) != 0) {
		rs_warn("%s was written before a reboot: clearing it",
		    e->path);
		if ((rc = mutex_init(&e->h->lock)) != RS_OK)
			return rc;
		tables_clear(e);
		memcpy(e->h->boot_id, boot, sizeof boot);
	}
	return RS_OK;
}

static rs_code
check_owner(struct rs_exp *e, struct stat *st)
{
	if (fstat(e->fd, st) < 0) {
		rs_error("unable to stat %s: %s", e->path, strerror(errno));
		return RS_EIO;
	}
	if (!S_ISREG(st->st_mode)) {
		rs_error("refusing %s: not a regular file", e->path);
		return RS_EREFUSED;
	}
	if (st->st_uid != geteuid()) {
		rs_error("refusing %s: owned by uid %u, not by us", e->path,
		    (unsigned)st->st_uid);
		return RS_EREFUSED;
	}
	if (st->st_mode & 077) {
		rs_error("refusing %s: mode %04o lets others in (want 0600)",
		    e->path, (unsigned)(st->st_mode & 07777));
		return RS_EREFUSED;
	}
	return RS_OK;
}

/* An open-file-description lock on byte 0 serialises creation and the
 * header checks between openers; operations never take it. Not flock: on
 * Linux the two do not interact, and the tools keep flock on this file for
 * themselves (rs-sync waits on it for the rs-apply of an earlier
 * pipeline). */
static int
open_lock(int fd, short type)
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0,
	    .l_len = 1 };

	return fcntl(fd, F_OFD_SETLK, &l);
}

static rs_code
open_lock_bounded(struct rs_exp *e)
{
	int64_t end = rs_mono_ns() + (int64_t)e->lock_ms * 1000000;

	while (open_lock(e->fd, F_WRLCK) < 0) {
		if (errno != EAGAIN && errno != EACCES && errno != EINTR) {
			rs_error("unable to lock %s: %s", e->path,
			    strerror(errno));
			return RS_EIO;
		}
		if (rs_mono_ns() > end) {
			rs_error("unable to lock %s: another process is "
			    "opening it", e->path);
			return RS_ETIMEOUT;
		}
		usleep(1000);
	}
	return RS_OK;
}

static rs_code
open_fd(struct rs_exp *e, const struct rs_exp_opts *o)
{
	int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW;

	if (!(o && o->nocreate))
		flags |= O_CREAT;
	e->fd = open(e->path, flags, 0600);
	if (e->fd >= 0)
		return RS_OK;
	if (errno == ENOENT && o && o->nocreate)
		return RS_ENOTFOUND;
	rs_error("unable to open %s: %s", e->path,
	    errno == ELOOP ? "refusing a symbolic link" : strerror(errno));
	return errno == ELOOP ? RS_EREFUSED : RS_EIO;
}

rs_code
rs_exp_open(const char *path, const struct rs_exp_opts *o, struct rs_exp **out)
{
	struct rs_exp *e;
	struct stat st;
	struct exp_fixed f;
	rs_code rc;

	*out = NULL;
	if ((e = calloc(1, sizeof *e)) == NULL)
		return RS_ENOMEM;
	e->fd = -1;
	e->lock_ms = o && o->lock_timeout_ms ? o->lock_timeout_ms :
	    RS_EXP_LOCK_TIMEOUT_MS;
	e->path = path ? strdup(path) : rs_state_path("expectations");
	if (e->path == NULL) {
		rc = RS_ENOMEM;
		goto out;
	}
	if (path == NULL && !(o && o->nocreate) &&
	    (rc = rs_state_prepare_parent(e->path)) != RS_OK)
		goto out;
	if ((rc = open_fd(e, o)) != RS_OK)
		goto out;
	if ((rc = check_owner(e, &st)) != RS_OK)
		goto out;
	if ((rc = open_lock_bounded(e)) != RS_OK)
		goto out;
	if ((rc = check_owner(e, &st)) != RS_OK)
		goto out;
	memset(&f, 0, sizeof f);
	if (st.st_size >= (off_t)sizeof f &&
	    pread(e->fd, &f, sizeof f, 0) != (ssize_t)sizeof f)
		memset(f.magic, 0xff, sizeof f.magic);
	if (st.st_size == 0 || (magic_unset(&f) &&
	    st.st_size >= (off_t)EXP_HDR_SIZE)) {
		if (o && o->nocreate && st.st_size == 0)
			rc = RS_ENOTFOUND;
		else
			rc = file_init(e, o);
	} else {
		rc = file_load(e, (uint64_t)st.st_size);
	}
	open_lock(e->fd, F_UNLCK);
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
	if (e == NULL)
		return;
	if (e->base)
		munmap(e->base, e->size);
	if (e->fd >= 0)
		close(e->fd);
	free(e->path);
	free(e);
}

const char *
rs_exp_path(const struct rs_exp *e)
{
	return e->path;
}

/* ---- operations ---- */

/* What an operation does on one key's record, under the lock. */
typedef rs_code key_op(struct rs_exp *e, const struct kref *k, void *arg);

/* How with_key wraps an operation. TX_READ: no transaction (a read writes
 * nothing and counts no commit). TX_SMALL: one of TX_BASE writes, begun
 * before the operation. TX_SIZED: the operation begins its own, whose size
 * depends on the record (or none when there is nothing to do); with_key
 * ends it either way. */
enum tx_kind { TX_READ, TX_SMALL, TX_SIZED };

/* The prologue and epilogue of every operation on one key: runs op under
 * the lock and in its transaction, committed on RS_OK, rolled back
 * otherwise. Damage found on locking skips op (RS_EPARSE). Returns with
 * the lock released and its held-back messages said, so that the caller's
 * log line comes after them. */
static rs_code
with_key(struct rs_exp *e, const struct kref *k, enum tx_kind tx, key_op *op,
    void *arg)
{
	rs_code rc;

	if ((rc = lock(e)) != RS_OK)
		return rc;
	if (e->bad == NULL &&
	    (tx != TX_SMALL || (rc = tx_begin(e, TX_BASE)) == RS_OK))
		rc = op(e, k, arg);
	if (tx == TX_READ)
		rc = e->bad ? RS_EPARSE : rc;
	else
		rc = tx_end(e, rc);
	return finish(e, rc);
}

static enum rs_exp_why
judge(const struct kent *ke, int64_t now)
{
	if (ke->add <= 0 && ke->del <= 0)
		return RS_EXP_FULFILLED;
	if (sub64(now, ke->ts) > RS_EXP_TIMEOUT_NS)
		return RS_EXP_EXPIRED;
	return RS_EXP_PENDING;
}

/* SetExpectations: finds or creates key's record, sets the counts. */
static rs_code
do_set(struct rs_exp *e, const struct kref *k, int64_t add, uint32_t *lout)
{
	struct kent *ke;
	uint32_t l;
	rs_code rc;

	if ((l = key_find(e, k, NULL)) == 0) {
		if (e->bad)
			return RS_EPARSE;
		if ((rc = key_new(e, k, &l)) != RS_OK)
			return rc;
	}
	ke = &e->ke[l - 1];
	set64(e, &ke->add, add);
	set64(e, &ke->del, 0);
	set64(e, &ke->ts, exp_clock());
	*lout = l;
	return RS_OK;
}

/* The operations that take a count: op gets &n. */
static rs_code
with_count(struct rs_exp *e, const char *key, int64_t n, key_op *op)
{
	struct kref k;
	rs_code rc;

	if (n < 0)
		return RS_EUSAGE;
	if ((rc = kref_init(e, key, &k)) != RS_OK)
		return rc;
	return with_key(e, &k, TX_SMALL, op, &n);
}

static rs_code
op_set(struct rs_exp *e, const struct kref *k, void *n)
{
	uint32_t l;

	return do_set(e, k, *(const int64_t *)n, &l);
}

rs_code
rs_exp_expect_creations(struct rs_exp *e, const char *key, int64_t n)
{
	rs_code rc;

	if ((rc = with_count(e, key, n, op_set)) == RS_OK)
		rs_info(4, "expectations: %s: expect %lld creations", key,
		    (long long)n);
	return rc;
}

/* First commit: the record is set (add 0, del 0, now) and its old set
 * emptied. A state upstream can be in too (ExpectDeletions with no keys),
 * so a process killed between the commits leaves nothing wrong. */
static rs_code
tx_clear(struct rs_exp *e, const struct kref *k, uint32_t *l, uint32_t m)
{
	rs_code rc;

	if ((rc = tx_begin(e, TX_BASE + TX_POD_FREE * (uint64_t)m)) == RS_OK &&
	    (rc = do_set(e, k, 0, l)) == RS_OK)
		pods_clear(e, *l, &e->ke[*l - 1]);
	return tx_end(e, rc);
}

/* Second transaction, left for with_key to end: the new set, and del =
 * its size. */
static rs_code
tx_fill(struct rs_exp *e, uint32_t l, const struct kref *pods, size_t n,
    size_t d)
{
	struct kent *ke = &e->ke[l - 1];
	size_t i;
	rs_code rc;

	rc = tx_begin(e, TX_BASE + TX_POD_ADD * (uint64_t)d);
	for (i = 0; rc == RS_OK && i < n && e->bad == NULL; i++)
		if (pod_find(e, l, &pods[i], NULL) == 0)
			rc = pod_add(e, l, ke, &pods[i]);
	if (rc == RS_OK)
		set64(e, &ke->del, ke->npods);
	return rc;
}

static int
kref_cmp(const void *a, const void *b)
{
	const struct kref *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->s, y->s, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* How many distinct keys; sorts a copy. */
static rs_code
distinct(const struct kref *k, size_t n, size_t *out)
{
	struct kref *c;
	size_t i;

	*out = 0;
	if (n == 0)
		return RS_OK;
	if ((c = malloc(n * sizeof *c)) == NULL)
		return RS_ENOMEM;
	memcpy(c, k, n * sizeof *c);
	qsort(c, n, sizeof *c, kref_cmp);
	for (i = 0; i < n; i++)
		if (i == 0 || kref_cmp(&c[i - 1], &c[i]) != 0)
			(*out)++;
	free(c);
	return RS_OK;
}

/* The new set of expect_deletions: n pod keys, d of them distinct. */
struct podset {
	const struct kref *pods;
	size_t n, d;
};

/* Replacing a set frees entries and takes entries; one transaction may
 * not do both, or a rolled-back free would bring back an entry whose key
 * was overwritten (key bytes are not logged). So: two commits in one
 * lock hold (the first here, the second by with_key), with room checked
 * and backed before the first, so that the second cannot run out of it. */
static rs_code
op_expect_deletions(struct rs_exp *e, const struct kref *k, void *arg)
{
	const struct podset *ps = arg;
	const struct exp_state *s = &e->h->s;
	uint32_t l, m = 0;
	uint64_t take, d = ps->d;
	rs_code rc;

	if ((l = key_find(e, k, NULL)) != 0)
		m = e->ke[l - 1].npods;
	if (e->bad)
		return RS_EPARSE;
	if (m > s->pod_live || d > (uint64_t)e->f.pod_cap - s->pod_live + m)
		return RS_EFULL;
	take = d > s->pod_hwm - s->pod_live + (uint64_t)m ?
	    d - (s->pod_hwm - s->pod_live + (uint64_t)m) : 0;
	if (take > 0 && (rc = back_entries32(e, 1,
	    (uint32_t)(s->pod_hwm + take))) != RS_OK)
		return rc;
	if ((rc = undo_reserve(e, TX_BASE + TX_POD_ADD * d)) != RS_OK)
		return rc;
	if ((rc = tx_clear(e, k, &l, m)) != RS_OK)
		return rc;
	return tx_fill(e, l, ps->pods, ps->n, ps->d);
}

rs_code
rs_exp_expect_deletions(struct rs_exp *e, const char *key,
    const char *const *pods, size_t n)
{
	struct podset ps = { .n = n };
	struct kref k, *pk = NULL;
	size_t i;
	rs_code rc;

	if ((rc = kref_init(e, key, &k)) != RS_OK)
		return rc;
	if (n > 0 && (pk = calloc(n, sizeof *pk)) == NULL)
		return RS_ENOMEM;
	ps.pods = pk;
	for (i = 0; i < n; i++)
		if ((rc = kref_init(e, pods[i], &pk[i])) != RS_OK)
			goto out;
	if ((rc = distinct(pk, n, &ps.d)) != RS_OK)
		goto out;
	if (ps.d > e->f.pod_cap) {
		rc = RS_EFULL;
		goto out;
	}
	rc = with_key(e, &k, TX_SIZED, op_expect_deletions, &ps);
	if (rc == RS_OK)
		rs_info(4, "expectations: %s: expect %zu deletions", key, ps.d);
out:
	free(pk);
	return rc;
}

static rs_code
op_lower(struct rs_exp *e, const struct kref *k, void *n)
{
	uint32_t l;

	if ((l = key_find(e, k, NULL)) != 0)
		set64(e, &e->ke[l - 1].add,
		    sub64(e->ke[l - 1].add, *(const int64_t *)n));
	return RS_OK;
}

rs_code
rs_exp_lower_creations(struct rs_exp *e, const char *key, int64_t n)
{
	return with_count(e, key, n, op_lower);
}

rs_code
rs_exp_creation_observed(struct rs_exp *e, const char *key)
{
	return rs_exp_lower_creations(e, key, 1);
}

/* A pod key in, and whether it was awaited (its entry) out. */
struct observed {
	struct kref pod;
	uint32_t found;
};

static rs_code
op_observe(struct rs_exp *e, const struct kref *k, void *arg)
{
	struct observed *o = arg;
	struct kent *ke;
	uint32_t l;

	if ((l = key_find(e, k, NULL)) == 0 ||
	    (o->found = pod_find(e, l, &o->pod, NULL)) == 0)
		return RS_OK;
	ke = &e->ke[l - 1];
	pod_remove(e, ke, o->found);
	set64(e, &ke->del, sub64(ke->del, 1));
	return RS_OK;
}

rs_code
rs_exp_deletion_observed(struct rs_exp *e, const char *key, const char *pod)
{
	struct observed o = { .found = 0 };
	struct kref k;
	rs_code rc;

	if ((rc = kref_init(e, key, &k)) != RS_OK ||
	    (rc = kref_init(e, pod, &o.pod)) != RS_OK ||
	    (rc = with_key(e, &k, TX_SMALL, op_observe, &o)) != RS_OK)
		return rc;
	rs_info(4, "expectations: %s: deletion of %s %s", key, pod,
	    o.found ? "observed" : "not awaited");
	return RS_OK;
}

/* What a read needs in (the time, taken before waiting for the lock) and
 * gives out. */
struct reading {
	int64_t now;
	enum rs_exp_why why;
	struct rs_exp_record *out;
};

static rs_code
op_judge(struct rs_exp *e, const struct kref *k, void *arg)
{
	struct reading *r = arg;
	uint32_t l;

	if ((l = key_find(e, k, NULL)) != 0)
		r->why = judge(&e->ke[l - 1], r->now);
	return RS_OK;
}

rs_code
rs_exp_satisfied(struct rs_exp *e, const char *key, int *ok,
    enum rs_exp_why *why)
{
	struct reading r = { .now = exp_clock(), .why = RS_EXP_NO_RECORD };
	struct kref k;
	rs_code rc;

	*ok = 1;
	if ((rc = kref_init(e, key, &k)) != RS_OK ||
	    (rc = with_key(e, &k, TX_READ, op_judge, &r)) != RS_OK)
		return rc;
	*ok = r.why != RS_EXP_PENDING;
	if (why)
		*why = r.why;
	return RS_OK;
}

static rs_code
op_delete(struct rs_exp *e, const struct kref *k, void *arg)
{
	uint32_t l, n, *where = NULL;
	rs_code rc;

	if ((l = key_find(e, k, &where)) == 0)
		return RS_OK;
	n = e->ke[l - 1].npods < e->f.pod_cap ? e->ke[l - 1].npods :
	    e->f.pod_cap;
	if ((rc = tx_begin(e, TX_BASE + TX_POD_FREE * (uint64_t)n)) == RS_OK)
		key_remove(e, l, where);
	return rc;
}

rs_code
rs_exp_delete(struct rs_exp *e, const char *key)
{
	struct kref k;
	rs_code rc;

	if ((rc = kref_init(e, key, &k)) != RS_OK)
		return rc;
	return with_key(e, &k, TX_SIZED, op_delete, NULL);
}

/* ---- inspection ---- */

void
rs_exp_record_free(struct rs_exp_record *r)
{
	free(r->pods);
	r->pods = NULL;
	r->npods = 0;
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Copies entry l; under the lock. One allocation holds the pointers and
 * the strings. */
static rs_code
copy_record(struct rs_exp *e, uint32_t l, int64_t now,
    struct rs_exp_record *r)
{
	const struct kent *ke = &e->ke[l - 1];
	const struct pent *pe;
	size_t i, n = ke->npods, bytes = 0;
	uint32_t p;
	char *s;

	memset(r, 0, sizeof *r);
	if (ke->klen == 0 || ke->klen > RS_EXP_KEY_MAX || n > e->f.pod_cap) {
		damaged(e, "key entry damaged");
		return RS_EPARSE;
	}
	memcpy(r->key, ke->key, ke->klen);
	r->key[ke->klen] = '\0';
	r->add = ke->add;
	r->del = ke->del;
	r->timestamp_ns = ke->ts;
	r->age_ns = sub64(now, ke->ts);
	r->why = judge(ke, now);
	for (i = 0, p = ke->pods; i < n; i++, p = pe->onext) {
		if ((pe = pod_at(e, p)) == NULL)
			return RS_EPARSE;
		if (pe->klen > RS_EXP_KEY_MAX) {
			damaged(e, "pod entry damaged");
			return RS_EPARSE;
		}
		bytes += pe->klen + 1;
	}
	if (p != 0) {
		damaged(e, "pod-key set size mismatch");
		return RS_EPARSE;
	}
	if (n == 0)
		return RS_OK;
	if ((r->pods = malloc(n * sizeof(char *) + bytes)) == NULL)
		return RS_ENOMEM;
	s = (char *)(r->pods + n);
	for (i = 0, p = ke->pods; i < n; i++, p = pe->onext) {
		pe = &e->pe[p - 1];
		r->pods[i] = s;
		memcpy(s, pe->key, pe->klen);
		s[pe->klen] = '\0';
		s += pe->klen + 1;
	}
	r->npods = n;
	qsort(r->pods, n, sizeof(char *), str_cmp);
	return RS_OK;
}

static rs_code
op_copy(struct rs_exp *e, const struct kref *k, void *arg)
{
	struct reading *r = arg;
	uint32_t l;

	if ((l = key_find(e, k, NULL)) == 0)
		return RS_ENOTFOUND;
	return copy_record(e, l, r->now, r->out);
}

rs_code
rs_exp_get(struct rs_exp *e, const char *key, struct rs_exp_record *out)
{
	struct reading r = { .now = exp_clock(), .out = out };
	struct kref k;
	rs_code rc;

	memset(out, 0, sizeof *out);
	if ((rc = kref_init(e, key, &k)) != RS_OK)
		return rc;
	if ((rc = with_key(e, &k, TX_READ, op_copy, &r)) != RS_OK)
		rs_exp_record_free(out);
	return rc;
}

rs_code
rs_exp_next(struct rs_exp *e, size_t *cursor, struct rs_exp_record *out)
{
	int64_t now = exp_clock();
	size_t i;
	rs_code rc;

	memset(out, 0, sizeof *out);
	if ((rc = lock(e)) != RS_OK)
		return rc;
	rc = e->bad ? RS_EPARSE : RS_EEOF;
	for (i = *cursor; rc == RS_EEOF && i < e->h->s.key_hwm; i++)
		if (e->ke[i].state == KEY_LIVE) {
			rc = copy_record(e, (uint32_t)i + 1, now, out);
			*cursor = i + 1;
		}
	if ((rc = finish(e, rc)) != RS_OK)
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

rs_code
rs_exp_dump(struct rs_exp *e, struct rs_line_writer *w)
{
	struct rs_exp_record r;
	size_t cursor = 0;
	char *line;
	rs_code rc;

	while ((rc = rs_exp_next(e, &cursor, &r)) == RS_OK) {
		rc = rs_exp_record_json(&r, &line);
		rs_exp_record_free(&r);
		if (rc != RS_OK)
			return rc;
		rc = rs_line_put(w, line, strlen(line));
		cJSON_free(line);
		if (rc != RS_OK)
			return rc;
	}
	return rc == RS_EEOF ? RS_OK : rc;
}

rs_code
rs_exp_stats(struct rs_exp *e, struct rs_exp_stats *st)
{
	const struct exp_state *s = &e->h->s;
	rs_code rc;

	memset(st, 0, sizeof *st);
	if ((rc = lock(e)) != RS_OK)
		return rc;
	st->keys = s->key_live;
	st->keys_cap = e->f.key_cap;
	st->pods = s->pod_live;
	st->pods_cap = e->f.pod_cap;
	st->commits = s->commits;
	st->recoveries = s->recoveries;
	st->rollbacks = s->rollbacks;
	st->resets = s->resets;
	st->file_size = e->f.file_size;
	unlock(e);
	return RS_OK;
}

rs_code
rs_exp_reset(struct rs_exp *e)
{
	rs_code rc;

	if ((rc = lock(e)) != RS_OK)
		return rc;
	tables_clear(e);
	unlock(e);
	return RS_OK;
}

/* ---- consistency check ---- */

struct chk {
	struct rs_exp *e;
	uint8_t *kseen, *pseen;
	char *why;
	size_t whylen;
	int bad;
};

static int
fail(struct chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
fail(struct chk *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->bad && c->why && c->whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(c->why, c->whylen, fmt, ap);
		va_end(ap);
	}
	c->bad = 1;
	return -1;
}

static int
chk_string(struct chk *c, const char *what, uint32_t i, const char *key,
    uint16_t klen, uint64_t hash)
{
	if (klen == 0 || klen > RS_EXP_KEY_MAX || key[klen] != '\0' ||
	    strlen(key) != klen)
		return fail(c, "%s %u: bad key length", what, i);
	if (siphash(c->e->f.seed, key, klen) != hash)
		return fail(c, "%s %u: hash does not match key", what, i);
	return 0;
}

static int
chk_keys(struct chk *c)
{
	struct rs_exp *e = c->e;
	const struct exp_state *s = &e->h->s;
	uint32_t b, l, i, n = 0, nfree = 0;
	const struct kent *ke;

	for (b = 0; b < e->f.key_nbuckets; b++)
		for (l = e->kb[b]; l != 0; l = ke->hnext) {
			if (l > s->key_hwm)
				return fail(c, "key bucket %u: link %u out of "
				    "range", b, l);
			ke = &e->ke[l - 1];
			if (c->kseen[l - 1]++)
				return fail(c, "key %u linked twice", l);
			if (ke->state != KEY_LIVE)
				return fail(c, "key %u on a chain but not live",
				    l);
			if (chk_string(c, "key", l, ke->key, ke->klen,
			    ke->hash) < 0)
				return -1;
			if ((ke->hash & (e->f.key_nbuckets - 1)) != b)
				return fail(c, "key %u in the wrong bucket", l);
			n++;
		}
	if (n != s->key_live)
		return fail(c, "%u keys reachable, %u counted live", n,
		    s->key_live);
	for (l = s->key_free; l != 0; l = ke->hnext) {
		if (l > s->key_hwm)
			return fail(c, "key free list: link out of range");
		ke = &e->ke[l - 1];
		if (c->kseen[l - 1]++ || ke->state != KEY_FREE)
			return fail(c, "key free list: entry %u live or "
			    "linked twice", l);
		nfree++;
	}
	for (i = 0; i < s->key_hwm; i++)
		if (!c->kseen[i])
			return fail(c, "key entry %u lost (neither live nor "
			    "free)", i + 1);
	(void)nfree;
	return 0;
}

static int
chk_pod_hash(struct chk *c)
{
	struct rs_exp *e = c->e;
	const struct exp_state *s = &e->h->s;
	uint32_t b, l, n = 0;
	const struct pent *pe;

	for (b = 0; b < e->f.pod_nbuckets; b++)
		for (l = e->pb[b]; l != 0; l = pe->hnext) {
			if (l > s->pod_hwm)
				return fail(c, "pod bucket %u: link out of "
				    "range", b);
			pe = &e->pe[l - 1];
			if (c->pseen[l - 1]++)
				return fail(c, "pod %u linked twice", l);
			if (pe->state != POD_LIVE)
				return fail(c, "pod %u on a chain but not live",
				    l);
			if (chk_string(c, "pod", l, pe->key, pe->klen,
			    pe->hash) < 0)
				return -1;
			if (pe->owner == 0 || pe->owner > s->key_hwm ||
			    e->ke[pe->owner - 1].state != KEY_LIVE)
				return fail(c, "pod %u: owner %u not live", l,
				    pe->owner);
			if (pod_bucket(e, pe->hash, pe->owner) != b)
				return fail(c, "pod %u in the wrong bucket", l);
			n++;
		}
	if (n != s->pod_live)
		return fail(c, "%u pods reachable, %u counted live", n,
		    s->pod_live);
	for (l = s->pod_free; l != 0; l = pe->hnext) {
		if (l > s->pod_hwm)
			return fail(c, "pod free list: link out of range");
		pe = &e->pe[l - 1];
		if (c->pseen[l - 1]++ || pe->state != POD_FREE)
			return fail(c, "pod free list: entry %u live or "
			    "linked twice", l);
	}
	for (l = 0; l < s->pod_hwm; l++)
		if (!c->pseen[l])
			return fail(c, "pod entry %u lost", l + 1);
	return 0;
}

/* Every live pod in exactly one set, the set of its owner, the sizes
 * right, the back links right. */
static int
chk_sets(struct chk *c)
{
	struct rs_exp *e = c->e;
	const struct exp_state *s = &e->h->s;
	uint32_t i, l, prev, n, total = 0;
	const struct kent *ke;
	const struct pent *pe;

	memset(c->pseen, 0, s->pod_hwm);
	for (i = 0; i < s->key_hwm; i++) {
		ke = &e->ke[i];
		if (ke->state != KEY_LIVE)
			continue;
		n = 0;
		prev = 0;
		for (l = ke->pods; l != 0; prev = l, l = pe->onext) {
			if (l > s->pod_hwm)
				return fail(c, "key %u: pod link out of range",
				    i + 1);
			pe = &e->pe[l - 1];
			if (c->pseen[l - 1]++)
				return fail(c, "pod %u in two sets", l);
			if (pe->state != POD_LIVE || pe->owner != i + 1)
				return fail(c, "key %u: pod %u not its own",
				    i + 1, l);
			if (pe->oprev != prev)
				return fail(c, "pod %u: back link wrong", l);
			n++;
		}
		if (n != ke->npods)
			return fail(c, "key %u: %u pods, counted %u", i + 1, n,
			    ke->npods);
		total += n;
	}
	if (total != s->pod_live)
		return fail(c, "%u pods in sets, %u live", total, s->pod_live);
	return 0;
}

rs_code
rs_exp_check(struct rs_exp *e, char *why, size_t whylen)
{
	struct chk c = { .e = e, .why = why, .whylen = whylen };
	rs_code rc;

	if (why && whylen)
		why[0] = '\0';
	if ((rc = lock(e)) != RS_OK)
		return rc;
	if (e->bad) {
		fail(&c, "%s", e->bad);
		goto out;
	}
	c.kseen = calloc(e->h->s.key_hwm + 1, 1);
	c.pseen = calloc(e->h->s.pod_hwm + 1, 1);
	if (c.kseen == NULL || c.pseen == NULL) {
		rc = RS_ENOMEM;
		goto out;
	}
	if (chk_keys(&c) == 0 && chk_pod_hash(&c) == 0)
		chk_sets(&c);
out:
	unlock(e);
	free(c.kseen);
	free(c.pseen);
	if (rc == RS_OK && c.bad)
		rc = RS_EPARSE;
	return rc;
}
