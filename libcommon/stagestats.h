/* stagestats.h: a stage's figures, published as one JSON object in a stats
 * file for rs-metrics (doc/metrics.md).
 *
 * One set per process. A stage opens it once with its name; the file is
 * $RS_STATE_DIR/stats/<stage>.json (directory 0700, file 0600), written
 * whole to a temporary file and renamed over, so a reader sees either the
 * old or the new object, never half of one. rs_stagestats_flush rewrites it
 * at most once a second; a stage calls it from its loop (waking at least
 * once a second: rs_stagestats_timeout_ms), which is also the heartbeat
 * that rs-metrics' /healthz checks. rs_stagestats_close writes a last time.
 *
 * Figures are Prometheus families: counters and gauges set or added to by
 * name, histograms observed; each sample is named by its labels, given as
 * "name=value,name=value" (values without commas; NULL or "" for none).
 * A family must be declared before its samples are touched; touching an
 * undeclared family, or one past the bounds, does nothing.
 *
 * Thread-safe: the API client counts requests from any thread. Everything
 * is a no-op (and cheap) while no set is open: a tool that does not publish
 * stats pays one mutex per API request. Failures to write are warned about
 * once, then again only after a success. */
#ifndef RS_STAGESTATS_H
#define RS_STAGESTATS_H

#include <stddef.h>
#include <stdint.h>

#include "code.h"

#define RS_STAGESTATS_INTERVAL_NS 1000000000LL  /* at most one write a second */
#define RS_STAGESTATS_FAMILIES 64
#define RS_STAGESTATS_SAMPLES 1024
#define RS_STAGESTATS_LABELS_MAX 256            /* bytes of a label string */

enum rs_stat_type { RS_STAT_COUNTER, RS_STAT_GAUGE, RS_STAT_HISTOGRAM };

/* Opens the set of stage (lower-case letters, digits, '-'; at most 32)
 * under $RS_STATE_DIR/stats and writes the file once. RS_EUSAGE for a bad
 * name or when a set is already open, RS_EIO or RS_EREFUSED (the directory
 * is not ours or is open to others), RS_ENOMEM. The caller goes on without
 * stats if it likes: nothing else fails because of it. */
rs_code rs_stagestats_open(const char *stage);
/* Writes a last time (if open), then forgets everything. */
void rs_stagestats_close(void);
/* The file's path while open, else NULL. */
const char *rs_stagestats_path(void);

/* Declares a family; declaring it again with the same type is a no-op.
 * RS_EUSAGE for a bad name or a type clash, RS_EFULL past the bound.
 * bounds (histograms only) are the upper bounds of the buckets,
 * increasing, without +Inf; they are copied. */
rs_code rs_stagestats_declare(const char *name, enum rs_stat_type type,
    const char *help, const double *bounds, size_t nbounds);

/* Counters and gauges. */
void rs_stagestats_set(const char *name, const char *labels, double v);
void rs_stagestats_add(const char *name, const char *labels, double delta);
/* Histograms. */
void rs_stagestats_observe(const char *name, const char *labels, double v);

/* The pipeline's latency histograms (doc/metrics.md) share one set of
 * buckets, fine enough for what one stage adds (tens of microseconds) and
 * wide enough for what a user waits (a scale-up at a low QPS): 10 us to
 * 50 s, 1-2-5 in each decade. Declares such a family. */
rs_code rs_stagestats_declare_latency(const char *name, const char *help);
/* Observes now - at, seconds since a wall-clock stamp another stage took
 * (rs_wall_now()): nothing when at <= 0 (no stamp), 0 when the difference
 * is negative (the clock was stepped back between the two readings). */
void rs_stagestats_observe_since(const char *name, const char *labels,
    double at, double now);

/* The API client's figures, under client-go's names:
 * rest_client_requests_total{code,method,host} (code "<error>" when no
 * answer came) and rest_client_request_duration_seconds{verb,host} with
 * client-go's buckets (seconds < 0: not observed, for watches), each with
 * a label stage=<stage> so that several stages' figures stay apart.
 * server is the API server URL; host is its host[:port]. */
void rs_stagestats_request(const char *server, const char *method, long code,
    double seconds);

/* 1 when open and a second has passed since the last write. */
int rs_stagestats_due(int64_t now_ns);
/* Writes the file when due: 1 written, 0 not due (or not open), -1 failed
 * (warned). now_ns is rs_mono_ns(). */
int rs_stagestats_flush(int64_t now_ns);
/* Writes the file now: RS_OK, or RS_EIO / RS_ENOMEM (warned). */
rs_code rs_stagestats_write(int64_t now_ns);
/* Milliseconds until the next write is due (0 if due), for a poll
 * timeout; -1 when not open. */
int rs_stagestats_timeout_ms(int64_t now_ns);

#endif
