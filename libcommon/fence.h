/* fence.h: the fence file (doc/sharding.md): until when this instance may
 * write for each bucket, kept by rs-lease, read by rs-apply before every
 * write it sends.
 *
 * One file, mode 0600, both processes on one host (the times are of one
 * boot's CLOCK_MONOTONIC), mapped shared; all numbers in the host's byte
 * order:
 *
 *   offset  size       what
 *   0       8          magic "rsfence1"
 *   8       4          nbuckets B (uint32), 1 to RS_SHARD_BUCKETS_MAX
 *   12      4          0 (reserved)
 *   16      48         the boot id (/proc/sys/kernel/random/boot_id, its
 *                      36 characters, NUL-padded) whose clock the slots use
 *   64      8 * B      slot i (int64): the CLOCK_MONOTONIC time in ns until
 *                      which writes for bucket i may be sent; 0: not held
 *
 * The file is 64 + 8 * B bytes. Each slot is 8-byte aligned and written and
 * read with one atomic 64-bit access, so a reader sees the old deadline or
 * the new one, never a mix; nothing else changes after the header is
 * written. A reader in another boot than the file's finds every slot
 * passed. rs_fence_create (the writer's) zeroes every slot: an instance
 * that starts holds nothing. */
#ifndef RS_FENCE_H
#define RS_FENCE_H

#include <stdint.h>

#include "code.h"

#define RS_FENCE_MAGIC "rsfence1"
#define RS_FENCE_HEADER 64

struct rs_fence;

/* The writer: creates path (or takes the one there, resized), mode 0600,
 * header written, every slot 0. RS_EIO, RS_EREFUSED (a symbolic link),
 * RS_EUSAGE (nbuckets out of range). */
rs_code rs_fence_create(const char *path, unsigned nbuckets,
    struct rs_fence **out);
/* The reader: maps path read-only. RS_ENOTFOUND when there is none yet,
 * RS_ECONFIG when it is no fence file or has not nbuckets slots. */
rs_code rs_fence_open(const char *path, unsigned nbuckets,
    struct rs_fence **out);
void rs_fence_close(struct rs_fence *f);

unsigned rs_fence_buckets(const struct rs_fence *f);
/* The writer's: slot i is deadline (ns, CLOCK_MONOTONIC; 0: not held). */
void rs_fence_set(struct rs_fence *f, unsigned i, int64_t deadline);
/* Slot i; 0 when the file is of another boot. */
int64_t rs_fence_get(const struct rs_fence *f, unsigned i);
/* Whether writes for bucket i may be sent at now (rs_mono_ns()): its
 * deadline is after now. */
int rs_fence_live(const struct rs_fence *f, unsigned i, int64_t now);

#endif
