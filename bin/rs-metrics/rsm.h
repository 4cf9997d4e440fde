/* rsm.h: rs-metrics' parts. main.c parses flags; http.c serves (on
 * libmicrohttpd); queue.c asks rs-queue for STATS; stages.c reads the
 * stages' stats files; shard.c the shard file; scrape.c renders /metrics; health.c answers
 * /healthz and /readyz. */
#ifndef RSM_H
#define RSM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cJSON.h>

#define RSM_LISTEN_DEFAULT "127.0.0.1:10267"
#define RSM_STAGES_DEFAULT "rs-watch,rs-sync,rs-apply"
#define RSM_STALE_DEFAULT 10.0          /* seconds */
#define RSM_QUEUE_TIMEOUT_MS 2000       /* rs-queue's STATS answer */
#define RSM_CONN_MAX_DEFAULT 64         /* connections at once */
#define RSM_TIMEOUT_DEFAULT 10.0        /* seconds from accept to last byte */
#define RSM_CONN_MEMORY 8704            /* each connection's: head, our answer's */

struct rsm_opts {
	const char *listen;
	char *queue;                   /* rs-queue's socket */
	char *stats_dir;               /* $RS_STATE_DIR/stats */
	char *shard_file;              /* rs-lease --shards' shard file */
	char **stages;                 /* required by /healthz, */
	size_t nstages;
	char *stage_list;              /* pointing into this copy */
	double stale;
	size_t max_conns;              /* connections at once */
	int64_t timeout_ms;            /* from accept to the last byte */
	int notify_fd;                 /* -1: none */
};

/* queue.c: rs-queue's STATS JSON, malloc'd; NULL with why filled when the
 * queue is not there or does not answer within timeout_ms. */
char *rsm_queue_stats(const char *path, int timeout_ms, char *why,
    size_t whylen);

/* stages.c: the stats files, sorted by stage name. */
struct rsm_stage {
	char name[64];
	double age;                    /* seconds since last written */
	cJSON *json;                   /* NULL when unreadable: see err */
	char err[160];
};

struct rsm_stages {
	struct rsm_stage *v;
	size_t n;
};

/* Reads every <stage>.json in dir; a missing dir is no stage. */
void rsm_stages_load(const char *dir, struct rsm_stages *out);
void rsm_stages_free(struct rsm_stages *s);
const struct rsm_stage *rsm_stage_find(const struct rsm_stages *s,
    const char *name);

/* shard.c: the shard families from the shard file at path; nothing
 * when there is none. */
void rsm_shard(FILE *f, const char *path);

/* scrape.c: the body of /metrics. */
void rsm_scrape(FILE *f, const struct rsm_opts *o);

/* health.c: the body of /healthz (ready 0) or /readyz (ready 1); returns
 * 1 when every check passed. verbose: the list of checks even then. */
int rsm_health(FILE *f, const struct rsm_opts *o, int ready, int verbose);

/* http.c: serves until TERM or INT; returns the exit code. */
int rsm_serve(const struct rsm_opts *o);

#endif
