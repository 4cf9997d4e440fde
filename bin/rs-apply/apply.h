/* apply.h: rs-apply's internal interfaces. One intent stream in, API writes
 * out; each key's writes run in the upstream order (claims, then creates or
 * deletes, then status, then end) while different keys run side by side on
 * one thread over the curl multi interface. */
#ifndef RS_APPLY_H
#define RS_APPLY_H

#include <stddef.h>
#include <stdint.h>
#include <cJSON.h>

#include "code.h"
#include "expectations.h"
#include "kube.h"
#include "line.h"
#include "strmap.h"

/* The controller object the writes are for; strings point into the intent's
 * JSON tree and live as long as the intent. */
struct owner {
	const char *api_version, *kind, *ns, *name, *uid, *rv;
	const char *resource;          /* replicasets | replicationcontrollers */
	const char *component;         /* the event source */
};

enum op { OP_ADOPT, OP_RELEASE, OP_CREATE, OP_DELETE, OP_STATUS, OP_END,
	OP_EVENT, OP_BAD };

struct intent {
	struct intent *next;
	enum op op;
	unsigned long lineno;
	cJSON *json;                   /* the whole line, owned */
	char *key;                     /* namespace/name, owned; NULL if unknown */
	int has_owner;
	struct owner owner;
	const char *pod_name, *pod_uid;        /* adopt, release */
	long count;                            /* create */
	const cJSON *tmpl;                     /* create */
	const cJSON *pods;                     /* delete: [{name, uid}] */
	const cJSON *object, *old_status;      /* status */
	const char *ev_type, *ev_reason, *ev_message;  /* event */
	int has_requeue;                       /* end */
	double requeue_after;
	double event_at, sent_at;              /* end: wall-clock stamps of
	                                          rs-watch and rs-sync, 0 when
	                                          absent */
	int broken;                    /* end: synthesised, the real one was lost */
	int retry;                     /* end: rs-sync asks for a RETRY (its
	                                  cache is behind our writes) */
	int64_t read_ns;               /* monotonic, when read; 0: never read */
};

/* intent.c */
/* Decodes one line. Always returns an intent (NULL only when out of memory):
 * OP_BAD, with key set when the line named one, for a line that is not a
 * valid intent; the reason has been logged as a warning. */
struct intent *intent_decode(char *line, size_t len, unsigned long lineno);
/* A line that could not be read (too long): OP_BAD without a key. */
struct intent *intent_bad(unsigned long lineno);
/* A synthesised end for a key whose own end never came. */
struct intent *intent_broken_end(const char *key, unsigned long lineno);
void intent_free(struct intent *in);
const char *op_name(enum op op);
/* "/apis/apps/v1/namespaces/NS/replicasets" or the v1 path for RCs. */
char *owner_collection_path(const struct owner *o);

/* key.c: one key's intents and its round state. */
enum owner_check { CHECK_NONE, CHECK_RUNNING, CHECK_OK, CHECK_REFUSED };

struct key {
	char *name;
	struct intent *head, *tail;    /* waiting to run */
	int running;                   /* a step has requests in flight */
	/* the round (reset at each end) */
	int failed;                    /* some write failed: RETRY */
	const char *fail_reason;       /* FailedCreate | FailedDelete, or NULL */
	char *fail_message;            /* for the ReplicaFailure condition */
	enum owner_check check;
	char *check_err;               /* why adoption is refused */
	unsigned long nreq;            /* requests sent this round (for -v) */
	unsigned long moved;           /* pods created or deleted this round */
	struct rs_exp_written wrote;   /* resource versions written this
	                                  round, for rs-sync's guard */
	int64_t round_ns;              /* when its first intent was read, 0:
	                                  not known */
	int in_round;                  /* an intent of this round has run */
	int fenced;                    /* a write of this round was fenced */
	unsigned long fence_mark;      /* its bucket's refusals at the round's
	                                  start */
};

void keys_init(void);
/* Feeds one decoded line to its key (takes in). */
void keys_feed(struct intent *take);
/* End of input: a key left open without its end is finished as failed. */
void keys_input_end(unsigned long lineno);
/* Keys alive (reading, running or waiting). */
size_t keys_alive(void);
/* 1 while a key's intents are being read (its end not yet seen). */
int keys_open(void);
/* The next waiting intent if it is a claim (adopt or release), else NULL:
 * consecutive claims run as one step. */
struct intent *key_take_claim(struct key *k);
/* Called by a step when its last request completed. */
void key_step_done(struct key *k);
/* Records a create/delete failure for the ReplicaFailure condition; the
 * first one of a round wins, as upstream returns the first error. */
void key_fail(struct key *k, const char *reason, const char *message);
/* A write for o succeeded and the server answered with body: its
 * metadata.resourceVersion is kept (the newest per resource) and recorded
 * at the key's end (upstream's WroteAt). resource is "pods", or NULL for
 * the owner's own resource. */
void key_wrote(struct key *k, const struct owner *o, const char *resource,
    const struct rs_kresp *resp);
/* The same for a version known otherwise (rv: a resourceVersion). */
void key_wrote_rv(struct key *k, const struct owner *o, const char *resource,
    const char *rv);
/* An answer's metadata.resourceVersion and metadata.name, read in one
 * pass (its body validated once, not once a field); has_*: a string that
 * fits was there. */
struct answer_meta {
	int has_rv, has_name;
	char rv[128];
	char name[256];                /* a pod name is at most 253 bytes */
};
void answer_meta(const struct rs_kresp *resp, struct answer_meta *m);

/* fence.c: --fence FILE --shards B (doc/sharding.md). */
/* Opens the fence file (path NULL: no fence); fatal when it cannot. */
void fence_init(const char *path, unsigned nbuckets);
int fence_on(void);
/* Whether a request may be sent now: any GET, a write whose bucket's slot
 * has not passed; if not, why (and the refusal is counted against its
 * bucket). Asked as a request is queued (req.c) and again as it leaves,
 * after the client's rate limit (rs_kube_set_gate). */
int fence_gate(void *arg, const char *method, const char *path, char *why,
    size_t len);
/* A round of k begins. */
void fence_round_begin(struct key *k);
/* Whether k's round must send nothing more: a write of its bucket was
 * refused since the round began, or its slot has passed now. */
int fence_key_stopped(struct key *k);

/* latency.c: how long intents and keys take (doc/metrics.md). */
/* Declares the families; stats_open calls it. */
void latency_declare(void);
/* An intent was just read: stamps it; an end's sent_at is observed. */
void latency_read(struct intent *in);
/* A key's end was reported: observes its round and its event's path. */
void latency_end(const struct key *k, const struct intent *end);

/* The steps: each returns 1 when it has requests in flight (it will call
 * key_step_done), 0 when it finished at once. They take their intents. */
int claim_start(struct key *k, struct intent *first);
int create_start(struct key *k, struct intent *in);
int delete_start(struct key *k, struct intent *in);
int status_start(struct key *k, struct intent *in);

/* unknown.c: writes of unknown outcome (req_unknown). */
/* GETs path (taken) until the server answers it (or rs-apply stops), with
 * a short backoff; then fn(arg, rc, resp). */
typedef void (*look_fn)(void *arg, rs_code rc, struct rs_kresp *resp);
void look(struct key *k, char *path, look_fn fn, void *arg);
/* After creates of unknown outcome: the owner's pods (labels: the
 * template's) are listed and the newest version of those it controls
 * kept as written for pods; then(arg) runs once that is done. */
typedef void (*unknown_fn)(void *arg);
void unknown_creates(struct key *k, const struct owner *o,
    const cJSON *labels, unknown_fn then, void *arg);

/* reachable.c: keys failed by the server's refusals, queued again when
 * it is ready. on: there is an rs-queue to tell (not --dry-run or
 * --no-queue). */
void reach_init(int on);
/* Input over (end or TERM): nothing more is parked, no probe more sent. */
void reach_end(void);
/* Every request's fate (resp may be NULL): a refusal, or an answer. */
void reach_seen(const struct rs_kresp *resp);
/* A key's round failed: parked when the last request was refused. */
void reach_park(const char *key);
/* A key's next round began: parked no more. */
void reach_taken(const char *key);

/* req.c: every API request goes through here. */
typedef void (*req_done_fn)(void *arg, rs_code rc, struct rs_kresp *resp);
/* Sends (or, dry-run, prints) one request. done is called exactly once,
 * always later from req_poll/rs_kube_run, never from inside req_send. */
void req_send(const char *method, const char *path, const char *ctype,
    const char *body, req_done_fn done, void *arg);
/* The same, with a body that stays the caller's, unchanged, until done
 * has run: the creates of a batch share one. */
void req_send_borrowed(const char *method, const char *path,
    const char *ctype, const char *body, req_done_fn done, void *arg);
/* A GET sent after `after` seconds (a retry's backoff). */
void req_send_later(double after, const char *method, const char *path,
    req_done_fn done, void *arg);
/* Runs completions that did not need the network (dry-run, local errors)
 * and sends the later requests now due; returns how many completed. */
int req_poll(void);
/* Requests not yet completed, later ones included. */
size_t req_pending(void);
/* Those handed to the API client (not waiting for their time). */
size_t req_in_flight(void);
/* ms, at most, until a later request is due. */
int req_wait_ms(int ms);
/* 1 if a request sent now would not wait for the client's rate limit. */
int req_token_ready(void);
/* 1 when a failed write may have been carried out all the same. */
int req_unknown(rs_code rc, const struct rs_kresp *resp);
/* The message of a failed request, as client-go's error string would be. */
const char *req_errmsg(rs_code rc, const struct rs_kresp *resp, char *buf,
    size_t len);
/* 1 when the Status carries the cause (details.causes[].reason). */
int req_has_cause(const struct rs_kresp *resp, const char *cause);
int req_is(rs_code rc, const struct rs_kresp *resp, const char *reason);

#define CT_SMP "application/strategic-merge-patch+json"

/* events.c: the upstream event recorder (record.EventRecorder with the
 * default EventCorrelator). Best-effort, never fails a key. */
void events_init(void);
/* Starts the next round of event writes if its time has come; from the
 * main loop. */
void events_poll(void);
/* ms, at most ms, until the next round of events may start. */
int events_wait_ms(int ms);
/* 1 when no event waits or is in flight. */
int events_idle(void);
void event_record(const struct owner *o, const char *type, const char *reason,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The fields of an event's tree (event_make): its name, firstTimestamp
 * and count as the correlator decided, lastTimestamp from t. */
struct event_form {
	const char *type, *reason, *message;
	const char *component;         /* reportingComponent */
	const char *instance;          /* reportingInstance */
	const char *name, *first;
	long count;
	long long t;                   /* ns */
};
cJSON *event_make(const struct owner *o, const struct event_form *f);

/* correlate.c: the EventCorrelator (spam filter, aggregator, logger). */
struct corr_event {                /* an event as the recorder makes it */
	const struct owner *o;
	const char *type, *reason, *message;
	long long t;                   /* metav1.Now(), ns */
};
struct corr_result {
	int skip;                      /* dropped by the spam filter */
	cJSON *event;                  /* owned by the caller */
	long count;
	char *patch;                   /* cJSON_free; NULL for a new event */
};
void corr_init(void);
/* The caches are kept from ev's fields; out's event (and patch) is made
 * only when the spam filter lets it through. */
rs_code corr_correlate(const struct corr_event *ev, struct corr_result *out);

/* lru.c: string-keyed LRU cache (golang/groupcache/lru as client-go uses). */
struct lru_entry;
struct lru {
	struct rs_strmap map;
	struct lru_entry *head, *tail; /* most recent first */
	size_t len, max;
	void (*free_value)(void *);
};
void lru_init(struct lru *c, size_t max, void (*free_value)(void *));
void *lru_get(struct lru *c, const char *key);
/* Inserts or replaces (the old value is freed), evicting the oldest. */
rs_code lru_add(struct lru *c, const char *key, void *value);

/* effects.c: rs-queue and the expectations file. */
struct fx_opts {
	const char *queue_path;        /* NULL: default */
	const char *exp_path;          /* NULL: default */
	int no_queue;
	int64_t hold;                  /* --queue-hold, ns */
};
void fx_init(const struct fx_opts *o);
/* DONE, then FORGET or RETRY, then AFTER (only without failure). */
void fx_end(const char *key, int failed, int moved, int has_after,
    double after);
/* ADD: the key queued again at once, past a rate-limited retry. */
rs_code fx_add(const char *key);
/* Holds the expectations file locked shared from the first intent on, so a
 * starting rs-sync waits for this process before it drops the records. */
void fx_hold(void);
void fx_lower_creations(const char *key, long n);
/* WroteAt for the writes of a round (before the key's end is reported). */
void fx_wrote(const char *key, const struct rs_exp_written *w);
void fx_deletion_observed(const char *key, const char *pod_key);
/* Moves queue traffic without blocking, the keys' ends held back while
 * answers_due (--queue-hold); the most milliseconds to wait before the
 * next call. */
int fx_io(int answers_due);
/* Blocking: every request out and answered (at exit). */
void fx_close(void);

/* The process. */
struct app {
	struct rs_kube *kube;          /* NULL with --dry-run */
	int dry_run;
	struct rs_line_writer out;     /* --dry-run output */
	size_t concurrency;
	int stopping;                  /* TERM: finishing what is in flight */
};
extern struct app app;

#endif
