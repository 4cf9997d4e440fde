/* expectations.h: controller expectations and written resource versions,
 * in an LMDB file shared by the pipeline's processes.
 *
 * The semantics of upstream's UIDTrackingControllerExpectations
 * (pkg/controller/controller_utils.go): per controller key ("ns/name") an
 * add count, a del count, a timestamp, and the set of pod keys ("ns/name")
 * whose deletion is awaited. A key is satisfied when it has no record, when
 * add <= 0 && del <= 0, or when its record is older than five minutes.
 *
 * Beside them, per controller key, the resource versions of the writes made
 * for it (upstream's consistency store, pkg/controller/util/consistency):
 * rs-apply records them, rs-sync waits for its watch to reach them.
 *
 * The store is an LMDB environment in one file (tmpfs, mode 0600, its lock
 * file beside it as PATH-lock) that several processes open at once: rs-sync
 * raises and observes, rs-apply lowers and records. Every operation is one
 * LMDB transaction, so a process killed at any point leaves the state before
 * or after its operation. The contract is in doc/expectations-file.md.
 *
 * All functions are thread-safe. None is async-signal-safe. */
#ifndef RS_EXPECTATIONS_H
#define RS_EXPECTATIONS_H

#include <stddef.h>
#include <stdint.h>

#include "code.h"
#include "line.h"

/* namespace (63) + '/' + name (253) */
#define RS_EXP_KEY_MAX 317
/* 64 MiB of address space; a file on tmpfs takes only the pages written */
#define RS_EXP_MAP_DEFAULT (64u << 20)
#define RS_EXP_MAP_MIN (64u << 10)
/* upstream ExpectationsTimeout */
#define RS_EXP_TIMEOUT_NS (300LL * 1000000000LL)
/* resources one owner's writes may touch (pods and the owner's own kind) */
#define RS_EXP_WRITES_MAX 4
#define RS_EXP_RES_MAX 63
#define RS_EXP_RV_MAX 63
#define RS_EXP_UID_MAX 63

struct rs_exp;

/* Options of rs_exp_open; a NULL pointer means all defaults. */
struct rs_exp_opts {
	size_t map_size;            /* bytes; 0 = RS_EXP_MAP_DEFAULT */
	int nocreate;               /* RS_ENOTFOUND instead of creating */
};

/* Why a key is (or is not) satisfied. */
enum rs_exp_why {
	RS_EXP_NO_RECORD,   /* never set or deleted: satisfied */
	RS_EXP_FULFILLED,   /* add <= 0 && del <= 0: satisfied */
	RS_EXP_EXPIRED,     /* set more than RS_EXP_TIMEOUT_NS ago: satisfied */
	RS_EXP_PENDING      /* waiting for creations or deletions */
};

/* A copy of one record, made in one read transaction. */
struct rs_exp_record {
	char key[RS_EXP_KEY_MAX + 1];
	int64_t add, del;
	int64_t timestamp_ns;   /* on the expectations clock (CLOCK_MONOTONIC) */
	int64_t age_ns;         /* clock now minus timestamp_ns, at the copy */
	enum rs_exp_why why;    /* FULFILLED, EXPIRED or PENDING */
	size_t npods;
	char **pods;            /* npods pod keys, sorted; rs_exp_record_free */
};

/* Where rs_exp_next goes on from; zeroed to start. */
struct rs_exp_cursor {
	char after[RS_EXP_KEY_MAX + 1];
	int started;
};

/* One written resource version: group "" is the core group. */
struct rs_exp_write {
	char group[RS_EXP_RES_MAX + 1];
	char resource[RS_EXP_RES_MAX + 1];
	char rv[RS_EXP_RV_MAX + 1];
};

/* The writes recorded for one owner (upstream's ownerRecord). */
struct rs_exp_written {
	char uid[RS_EXP_UID_MAX + 1];
	size_t n;
	struct rs_exp_write w[RS_EXP_WRITES_MAX];
};

struct rs_exp_stats {
	uint64_t keys;          /* records */
	uint64_t pods;          /* pod keys awaiting deletion, all keys */
	uint64_t written;       /* owners with written resource versions */
	uint64_t map_size;      /* bytes of address space */
	uint64_t map_used;      /* bytes of pages in use (last page + 1) */
	uint64_t page_size;
	uint64_t txnid;         /* transactions committed since creation */
	uint32_t readers, readers_max;
};

/* Opens path, creating it when missing (mode 0600, and its lock file
 * PATH-lock). path NULL means rs_state_path("expectations"), its directory
 * prepared. RS_EREFUSED: not a regular file, a symlink, owned by another
 * user, or group/other may access it. RS_EPARSE: not an expectations file,
 * truncated, or damaged. RS_ENOTFOUND with nocreate. Stale reader slots of
 * dead processes are cleared. */
rs_code rs_exp_open(const char *path, const struct rs_exp_opts *opts,
    struct rs_exp **out);
void rs_exp_close(struct rs_exp *e);
const char *rs_exp_path(const struct rs_exp *e);

/* Every operation below returns RS_OK, or: RS_EUSAGE (empty key, negative
 * count), RS_ETOOBIG (key over RS_EXP_KEY_MAX), RS_EFULL (the map or the
 * file system is full; nothing changed), RS_EPARSE (the file is damaged:
 * nothing changed; rs_exp_reset or removing the file repairs), RS_EIO,
 * RS_ENOMEM. */

/* SetExpectations(key, n, 0): add = n, del = 0, timestamp = now. As
 * upstream, the pod-key set is left as it is. */
rs_code rs_exp_expect_creations(struct rs_exp *e, const char *key, int64_t n);
/* The pod-key set becomes pods[0..n) (duplicates counted once); add = 0,
 * del = the set's size, timestamp = now. */
rs_code rs_exp_expect_deletions(struct rs_exp *e, const char *key,
    const char *const *pods, size_t n);
/* add -= 1; a key without record is ignored. */
rs_code rs_exp_creation_observed(struct rs_exp *e, const char *key);
/* add -= n (LowerExpectations(key, n, 0)); a key without record is ignored. */
rs_code rs_exp_lower_creations(struct rs_exp *e, const char *key, int64_t n);
/* If pod is in key's set: removed, del -= 1. Otherwise ignored. */
rs_code rs_exp_deletion_observed(struct rs_exp *e, const char *key,
    const char *pod);
/* *ok = 1 when satisfied; *why (may be NULL) says which rule decided. On
 * an error *ok is 1 too: upstream syncs when its store fails. */
rs_code rs_exp_satisfied(struct rs_exp *e, const char *key, int *ok,
    enum rs_exp_why *why);
/* Removes the record and its pod-key set; no record is not an error. The
 * written resource versions stay: rs_exp_clear_written. */
rs_code rs_exp_delete(struct rs_exp *e, const char *key);

/* WroteAt: for each of w[0..n), key's record for (group, resource) becomes
 * rv unless it holds a newer one (compared as upstream compares resource
 * versions; one that does not compare is replaced). A record of another
 * owner uid is dropped first. */
rs_code rs_exp_wrote(struct rs_exp *e, const char *key, const char *uid,
    const struct rs_exp_write *w, size_t n);
/* ownerRecord.WroteAt in memory: w into r, the newest per resource kept.
 * RS_EFULL past RS_EXP_WRITES_MAX resources. */
rs_code rs_exp_written_add(struct rs_exp_written *r,
    const struct rs_exp_write *w);
/* A copy of key's written versions; RS_ENOTFOUND when it has none. */
rs_code rs_exp_written(struct rs_exp *e, const char *key,
    struct rs_exp_written *out);
/* Clear: drops key's written versions if uid is NULL or "", or matches. */
rs_code rs_exp_clear_written(struct rs_exp *e, const char *key,
    const char *uid);

/* A copy of key's record; RS_ENOTFOUND when it has none. */
rs_code rs_exp_get(struct rs_exp *e, const char *key,
    struct rs_exp_record *out);
/* Iteration in key order, one transaction a call: records changed
 * meanwhile may be seen or missed. RS_EEOF after the last record. */
rs_code rs_exp_next(struct rs_exp *e, struct rs_exp_cursor *c,
    struct rs_exp_record *out);
void rs_exp_record_free(struct rs_exp_record *r);
/* One NDJSON line (no newline), documented in doc/expectations-file.md:
 * {"key","add","del","timestamp","age","deleting","satisfied","reason"}.
 * *out is malloc'd. */
rs_code rs_exp_record_json(const struct rs_exp_record *r, char **out);
/* Every record as one line each (rs-sync --expectations-dump), from one
 * snapshot. */
rs_code rs_exp_dump(struct rs_exp *e, struct rs_line_writer *w);
const char *rs_exp_why_name(enum rs_exp_why why);

/* Reads every record and checks what a transaction keeps true. RS_OK, or
 * RS_EPARSE with the first problem found written to why (if not NULL). */
rs_code rs_exp_check(struct rs_exp *e, char *why, size_t whylen);
/* Drops every record and written version in one transaction. */
rs_code rs_exp_reset(struct rs_exp *e);
rs_code rs_exp_stats(struct rs_exp *e, struct rs_exp_stats *st);

/* Test hooks, process-wide. The clock returns nanoseconds on one timescale
 * for every process sharing a file (default: rs_mono_ns); NULL restores
 * it. The write hook runs inside a write transaction after each of its
 * writes, with the number of writes so far (crash tests kill the process
 * there). The boot id hook replaces /proc/sys/kernel/random/boot_id. */
void rs_exp_set_clock(int64_t (*now_ns)(void));
void rs_exp_set_write_hook(void (*hook)(uint64_t nwrites));
void rs_exp_set_boot_id(const char *(*boot_id)(void));

#endif
