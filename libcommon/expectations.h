/* expectations.h: controller expectations in a shared-memory file.
 *
 * The semantics of upstream's UIDTrackingControllerExpectations
 * (pkg/controller/controller_utils.go): per controller key ("ns/name") an
 * add count, a del count, a timestamp, and the set of pod keys ("ns/name")
 * whose deletion is awaited. A key is satisfied when it has no record, when
 * add <= 0 && del <= 0, or when its record is older than five minutes.
 *
 * Here the store is a file (tmpfs, mode 0600) that several processes map at
 * once: rs-sync raises and observes, rs-apply lowers. Every operation is a
 * transaction under one robust process-shared mutex with an undo log, so a
 * process killed at any point neither wedges the others nor leaves a
 * half-done update behind: the next locker rolls it back. The file format
 * and the crash design are in doc/expectations-file.md.
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
#define RS_EXP_KEYS_DEFAULT 16384
#define RS_EXP_PODS_DEFAULT 65536
#define RS_EXP_CAP_MAX (1u << 22)
/* upstream ExpectationsTimeout */
#define RS_EXP_TIMEOUT_NS (300LL * 1000000000LL)
#define RS_EXP_LOCK_TIMEOUT_MS 5000

struct rs_exp;

/* Options of rs_exp_open; a NULL pointer means all defaults. The
 * capacities apply only when the file is created: an existing file keeps
 * the ones in its header. */
struct rs_exp_opts {
	uint32_t keys;              /* controller keys; 0 = default */
	uint32_t pods;              /* pod keys awaiting deletion; 0 = default */
	int nocreate;               /* RS_ENOTFOUND instead of creating */
	unsigned lock_timeout_ms;   /* give up a lock wait; 0 = default */
};

/* Why a key is (or is not) satisfied. */
enum rs_exp_why {
	RS_EXP_NO_RECORD,   /* never set or deleted: satisfied */
	RS_EXP_FULFILLED,   /* add <= 0 && del <= 0: satisfied */
	RS_EXP_EXPIRED,     /* set more than RS_EXP_TIMEOUT_NS ago: satisfied */
	RS_EXP_PENDING      /* waiting for creations or deletions */
};

/* A copy of one record, made under the lock. */
struct rs_exp_record {
	char key[RS_EXP_KEY_MAX + 1];
	int64_t add, del;
	int64_t timestamp_ns;   /* on the expectations clock (CLOCK_MONOTONIC) */
	int64_t age_ns;         /* clock now minus timestamp_ns, at the copy */
	enum rs_exp_why why;    /* FULFILLED, EXPIRED or PENDING */
	size_t npods;
	char **pods;            /* npods pod keys, sorted; rs_exp_record_free */
};

struct rs_exp_stats {
	uint32_t keys, keys_cap;
	uint32_t pods, pods_cap;
	uint64_t commits;       /* transactions committed */
	uint64_t recoveries;    /* locks taken over from a dead holder */
	uint64_t rollbacks;     /* half-done transactions undone */
	uint64_t resets;        /* tables cleared (reboot or rs_exp_reset) */
	uint64_t file_size;
};

/* Opens path, creating it when missing (mode 0600, capacities from opts).
 * path NULL means rs_state_path("expectations"), its directory prepared.
 * RS_EREFUSED: not a regular file, a symlink, owned by another user, or
 * group/other may access it. RS_EPARSE: not an expectations file, another
 * version, truncated, or a damaged header. RS_ENOTFOUND with nocreate. */
rs_code rs_exp_open(const char *path, const struct rs_exp_opts *opts,
    struct rs_exp **out);
void rs_exp_close(struct rs_exp *e);
const char *rs_exp_path(const struct rs_exp *e);

/* Every operation below returns RS_OK, or: RS_EUSAGE (empty key, negative
 * count), RS_ETOOBIG (key over RS_EXP_KEY_MAX), RS_EFULL (capacity; nothing
 * changed), RS_ETIMEOUT (the lock was held longer than the lock timeout),
 * RS_EPARSE (the file is damaged: nothing changed; rs_exp_reset repairs),
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
/* Removes the record and its pod-key set; no record is not an error. */
rs_code rs_exp_delete(struct rs_exp *e, const char *key);

/* A copy of key's record; RS_ENOTFOUND when it has none. */
rs_code rs_exp_get(struct rs_exp *e, const char *key,
    struct rs_exp_record *out);
/* Iteration: *cursor starts at 0; RS_EEOF after the last record. Each call
 * locks once, so records changed meanwhile may be seen or missed. */
rs_code rs_exp_next(struct rs_exp *e, size_t *cursor,
    struct rs_exp_record *out);
void rs_exp_record_free(struct rs_exp_record *r);
/* One NDJSON line (no newline), documented in doc/expectations-file.md:
 * {"key","add","del","timestamp","age","deleting","satisfied","reason"}.
 * *out is malloc'd. */
rs_code rs_exp_record_json(const struct rs_exp_record *r, char **out);
/* Every record as one line each (rs-sync --expectations-dump). */
rs_code rs_exp_dump(struct rs_exp *e, struct rs_line_writer *w);
const char *rs_exp_why_name(enum rs_exp_why why);

/* Walks every table, chain and free list. RS_OK, or RS_EPARSE with the
 * first problem found written to why (if not NULL). */
rs_code rs_exp_check(struct rs_exp *e, char *why, size_t whylen);
/* Drops every record (crash-safe): the repair for a damaged file. */
rs_code rs_exp_reset(struct rs_exp *e);
rs_code rs_exp_stats(struct rs_exp *e, struct rs_exp_stats *st);

/* Test hooks, process-wide. The clock returns nanoseconds on one timescale
 * for every process sharing a file (default: rs_mono_ns); NULL restores
 * it. The write hook runs after every logged write of a transaction with
 * the number of writes so far (crash tests kill the process there). */
void rs_exp_set_clock(int64_t (*now_ns)(void));
void rs_exp_set_write_hook(void (*hook)(uint64_t nwrites));

#endif
