/* metrics.h: the standard work-queue figures (client-go queue metrics,
 * named as component-base registers them) and their JSON form, the reply
 * to STATS. Histograms use client-go's buckets: 10 ns to 10 s, a factor of
 * ten apart (ExponentialBuckets(10e-9, 10, 10)). */
#ifndef RSQ_METRICS_H
#define RSQ_METRICS_H

#include <stdint.h>

#define RSQ_HIST_BUCKETS 10

extern const double rsq_hist_bounds[RSQ_HIST_BUCKETS];

struct rsq_hist {
	uint64_t n[RSQ_HIST_BUCKETS + 1];   /* per bucket; the last is +Inf */
	uint64_t count;
	double sum;
};

void rsq_hist_observe(struct rsq_hist *h, double seconds);

/* A snapshot of one queue, for STATS. */
struct rsq_stats {
	uint64_t depth;        /* workqueue_depth: keys marked dirty */
	uint64_t len;          /* LEN: keys queued, ready to hand out */
	uint64_t processing;   /* keys handed out, no DONE yet */
	uint64_t waiting;      /* keys in the delay heap */
	uint64_t keys;         /* keys known (interned) */
	uint64_t adds;         /* workqueue_adds_total */
	uint64_t retries;      /* workqueue_retries_total */
	double unfinished;     /* workqueue_unfinished_work_seconds */
	double longest;        /* workqueue_longest_running_processor_seconds */
	struct rsq_hist queue_duration;
	struct rsq_hist work_duration;
	int shutting_down;
	uint64_t clients;      /* set by the server */
	uint64_t getters;      /* GETs waiting for a key; set by the server */
};

/* One line of JSON, malloc'd (free with cJSON_free); NULL on ENOMEM. */
char *rsq_stats_json(const struct rsq_stats *s, const char *name);

#endif
