/* events.c: Events about the owner, as client-go's record.EventRecorder with
 * the default broadcaster writes them: name "<owner>.<hex unix nanos>",
 * source and reportingComponent replicaset-controller (or
 * replication-controller), the correlator's counting and aggregation
 * (correlate.c), a PATCH of count/lastTimestamp/message for a repeat and a
 * POST when the repeated event is gone. Best-effort: a failed write is
 * logged, never retried for long, and never fails a key.
 * Events are started in the order they were recorded, from a queue of at
 * most 1,000 (past it they are dropped). The broadcaster's sink writes
 * them one at a time, so that a storm of events takes one request's share
 * of the API server and of the rate limit beside the pod writes; written
 * so, each answer woke rs-apply on its own, some 1,000 wake-ups in a churn
 * of 1,000 creates (bench/results/cpu.md section 17). They go in rounds
 * instead: a round is the first event in the queue and, while the rate
 * limit's bucket holds a token, more distinct ones, up to EVENTS_IN_FLIGHT;
 * the next round starts when all of its writes are answered and
 * EVENT_ROUND_NS after it began. Up to 8 writes of some 3 ms in 20 ms: on
 * average about one in flight, as before, and the pace of a serial writer
 * at a few milliseconds a round trip. A repeat of an event waiting or in
 * flight merges into it (its latest count goes out once, after the write
 * in flight). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apply.h"
#include "clock.h"
#include "json.h"
#include "log.h"

/* upstream maxQueuedEvents: past it events are dropped */
#define MAX_PENDING 1000
/* A round of event writes: the first in the queue, and more while the
 * rate limit's bucket holds a token, up to EVENTS_IN_FLIGHT; the next
 * round when all are answered, EVENT_ROUND_NS after this one began. */
#define EVENTS_IN_FLIGHT 8
#define EVENT_ROUND_NS (20 * 1000000LL)

struct ew {
	struct ew *next;               /* in the queue */
	char *name, *ns;
	char *body;                    /* the latest state, printed (cJSON_free):
	                                * a queue of 1,000 trees would take
	                                * megabytes */
	char *patch;                   /* cJSON_free; NULL: POST */
	int creating;                  /* the request in flight is a POST */
	int dirty;                     /* a newer state waits */
	int flying;                    /* its write is in flight */
};

static struct rs_strmap writes;   /* name -> ew, queued or in flight */
static struct ew *head, *tail;     /* waiting to be written */
static int inflight;
static int64_t round_at;           /* when the last round began */
static long long last_ns;
static unsigned long dropped;

void
events_init(void)
{
	rs_strmap_init(&writes);
	corr_init();
}

/* metav1.Now() in nanoseconds, strictly increasing so that two events of
 * one object never get one name. */
static long long
now_ns(void)
{
	struct timespec ts;
	long long n;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	if (n <= last_ns)
		n = last_ns + 1;
	return last_ns = n;
}

static void ew_send(struct ew *w);

static void
ew_free(struct ew *w)
{
	rs_strmap_del(&writes, w->name);
	free(w->name);
	free(w->ns);
	cJSON_free(w->body);
	cJSON_free(w->patch);
	free(w);
}

static void
ew_start(void)
{
	struct ew *w = head;

	head = w->next;
	if (head == NULL)
		tail = NULL;
	w->next = NULL;
	w->flying = 1;
	inflight++;
	ew_send(w);
}

/* A round waits: events queued, none in flight. */
static int
round_waits(void)
{
	return head != NULL && inflight == 0;
}

/* ns until the next round may start (0 or less: now) */
static int64_t
round_in(int64_t now)
{
	return round_at + EVENT_ROUND_NS - now;
}

/* From the main loop only: an event is recorded inside the completion of
 * the write it reports, before that completion sends the key's next
 * writes. */
void
events_poll(void)
{
	int64_t now;

	if (!round_waits() || round_in(now = rs_mono_ns()) > 0)
		return;
	round_at = now;
	ew_start();
	while (head != NULL && inflight < EVENTS_IN_FLIGHT && req_token_ready())
		ew_start();
}

int
events_wait_ms(int ms)
{
	int64_t left;

	if (!round_waits())
		return ms;
	left = round_in(rs_mono_ns());
	if (left <= 0)
		return 0;
	left = (left + 999999) / 1000000;
	return left < ms ? (int)left : ms;
}

int
events_idle(void)
{
	return head == NULL && inflight == 0;
}

static void
ew_queue(struct ew *w)
{
	w->next = NULL;
	if (tail != NULL)
		tail->next = w;
	else
		head = w;
	tail = w;
}

static void
ew_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct ew *w = arg;
	char buf[128];

	if (rc != RS_OK && !w->creating && !w->dirty &&
	    req_is(rc, resp, "NotFound")) {
		/* the event being counted is gone: write it anew */
		cJSON_free(w->patch);
		w->patch = NULL;
		ew_send(w);
		return;
	}
	if (rc == RS_OK)
		rs_info(5, "event %s/%s written", w->ns, w->name);
	else if (req_is(rc, resp, "AlreadyExists") ||
	    req_has_cause(resp, "NamespaceTerminating"))
		rs_info(5, "event %s/%s refused: %s", w->ns, w->name,
		    req_errmsg(rc, resp, buf, sizeof buf));
	else
		rs_warn("unable to write event %s/%s: %s", w->ns, w->name,
		    req_errmsg(rc, resp, buf, sizeof buf));
	w->flying = 0;
	inflight--;
	if (w->dirty)
		ew_queue(w);    /* its repeat, recorded meanwhile, goes last */
	else
		ew_free(w);
}

static void
ew_send(struct ew *w)
{
	char *path;

	w->dirty = 0;
	w->creating = w->patch == NULL;
	if (w->creating) {
		if (asprintf(&path, "/api/v1/namespaces/%s/events", w->ns) < 0)
			goto oom;
		req_send("POST", path, NULL, w->body, ew_done, w);
	} else {
		if (asprintf(&path, "/api/v1/namespaces/%s/events/%s", w->ns,
		    w->name) < 0)
			goto oom;
		req_send("PATCH", path, CT_SMP, w->patch, ew_done, w);
	}
	free(path);
	return;
oom:
	rs_fatal(111, "unable to write an event: %s", rs_strerror(RS_ENOMEM));
}

/* A repeat of an event that has a write queued or in flight. A queued
 * creation stays a creation, of the latest state. */
static void
ew_merge(struct ew *w, struct corr_result *r, char *body)
{
	cJSON_free(w->body);
	w->body = body;
	if (!w->flying && w->patch == NULL) {
		cJSON_free(r->patch);
		return;
	}
	cJSON_free(w->patch);
	w->patch = r->patch;
	if (w->flying)
		w->dirty = 1;
}

/* Hands the correlated event to its writer (takes r's event and patch). */
static void
write_event(struct corr_result *r)
{
	const char *name = rs_json_str(r->event, "metadata", "name", NULL);
	const char *ns = rs_json_str(r->event, "metadata", "namespace", NULL);
	struct ew *w = rs_strmap_get(&writes, name);
	char *body;

	if (w == NULL && writes.len >= MAX_PENDING) {
		if (dropped++ % 100 == 0)
			rs_warn("too many events waiting to be written: "
			    "dropped %lu so far", dropped);
		cJSON_Delete(r->event);
		cJSON_free(r->patch);
		return;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(
	    cJSON_GetObjectItem(r->event, "metadata"), "resourceVersion");
	if ((body = rs_json_print(r->event)) == NULL)
		goto oom;
	if (w != NULL) {
		ew_merge(w, r, body);
		cJSON_Delete(r->event);
		return;
	}
	if ((w = calloc(1, sizeof *w)) == NULL || (w->name = strdup(name)) ==
	    NULL || (w->ns = strdup(ns)) == NULL ||
	    rs_strmap_put(&writes, w->name, w, NULL) != RS_OK)
		goto oom;
	cJSON_Delete(r->event);
	w->body = body;
	w->patch = r->patch;
	ew_queue(w);
	return;
oom:
	rs_fatal(111, "unable to write an event: %s", rs_strerror(RS_ENOMEM));
}

/* recorder.makeEvent plus generateEvent's source and reporting fields,
 * with the correlator's name, firstTimestamp and count. */
cJSON *
event_make(const struct owner *o, const struct event_form *f)
{
	cJSON *e = cJSON_CreateObject(), *m, *io, *src;
	char ts[32];

	if (e == NULL)
		return NULL;
	rs_format_rfc3339(f->t / 1e9, ts);
	cJSON_AddStringToObject(e, "kind", "Event");
	cJSON_AddStringToObject(e, "apiVersion", "v1");
	m = cJSON_AddObjectToObject(e, "metadata");
	cJSON_AddStringToObject(m, "name", f->name);
	cJSON_AddStringToObject(m, "namespace", o->ns);
	io = cJSON_AddObjectToObject(e, "involvedObject");
	cJSON_AddStringToObject(io, "kind", o->kind);
	cJSON_AddStringToObject(io, "namespace", o->ns);
	cJSON_AddStringToObject(io, "name", o->name);
	cJSON_AddStringToObject(io, "uid", o->uid);
	cJSON_AddStringToObject(io, "apiVersion", o->api_version);
	if (o->rv != NULL)
		cJSON_AddStringToObject(io, "resourceVersion", o->rv);
	cJSON_AddStringToObject(e, "reason", f->reason);
	cJSON_AddStringToObject(e, "message", f->message);
	src = cJSON_AddObjectToObject(e, "source");
	cJSON_AddStringToObject(src, "component", o->component);
	cJSON_AddStringToObject(e, "firstTimestamp", f->first);
	cJSON_AddStringToObject(e, "lastTimestamp", ts);
	cJSON_AddNumberToObject(e, "count", f->count);
	cJSON_AddStringToObject(e, "type", f->type);
	cJSON_AddNullToObject(e, "eventTime");
	cJSON_AddStringToObject(e, "reportingComponent", f->component);
	cJSON_AddStringToObject(e, "reportingInstance", f->instance);
	return e;
}

void
event_record(const struct owner *o, const char *type, const char *reason,
    const char *fmt, ...)
{
	struct corr_result r;
	struct corr_event ev = { .o = o, .type = type, .reason = reason };
	char message[1280];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	rs_info(3, "event %s %s/%s %s %s: %s", o->kind, o->ns, o->name, type,
	    reason, message);
	if (app.dry_run)
		return;
	ev.message = message;
	ev.t = now_ns();
	if (corr_correlate(&ev, &r) != RS_OK)
		rs_fatal(111, "unable to record an event: %s",
		    rs_strerror(RS_ENOMEM));
	if (r.skip) {
		rs_info(3, "event %s/%s %s dropped by the spam filter", o->ns,
		    o->name, reason);
		return;
	}
	write_event(&r);
}
