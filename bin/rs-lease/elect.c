/* elect.c: client-go's LeaderElector as one event loop.
 *
 * An attempt is tryAcquireOrRenew: the leader first PUTs its renewal over
 * the Lease it last wrote (the optimistic fast path); otherwise, or if that
 * fails, GET the Lease (POST it when missing), decide (decide.c), and PUT
 * with the resourceVersion read. A candidate tries every retry period plus
 * up to 1.2 times as much again (client-go's jitter), and also at the moment
 * the record it watches would expire. The leader renews every retry period
 * and has lost the lease when no renewal succeeded for the renew deadline,
 * counted from the start of the last attempt that did; or at once when it
 * reads another holder's name in the Lease: that one is acting already.
 *
 * A candidate also watches its Lease (from the resourceVersion its last
 * read gave), so that it learns of a release or a renewal at once rather
 * than at its next read: a record that changed is observed (its expiry
 * clock restarts) and decided on there and then, and a free or expired
 * Lease is taken by a PUT over the object the watch sent. The periodic
 * read goes on beside it: a watch that fails or is refused only leaves
 * the candidate as it would be without one (the next one waits a retry
 * period, doubling up to WATCH_BACKOFF_MAX). The leader needs no watch:
 * it ends with the first event it sees.
 *
 * Requests are asynchronous, so the deadline holds however slow the API
 * server is: prog is stopped on time, not when a request gives up. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "clock.h"
#include "elect.h"
#include "json.h"
#include "lease.h"
#include "log.h"
#include "resourceversion.h"
#include "run.h"

#define JITTER 1.2               /* client-go's JitterFactor */
#define MAX_WAIT_NS 1000000000LL
#define WATCH_TIMEOUT_S 300       /* reflector's minimum; up to twice it */
#define WATCH_BACKOFF_MAX (300 * 1000000000LL)

enum phase { CANDIDATE, LEADING, STOPPING };
enum why { WHY_NONE, WHY_TERM, WHY_PROG, WHY_LOST };
enum result { RES_NONE, RES_OK, RES_FAIL };

struct el {
	struct rs_kube *k;
	const struct elect_opts *o;
	char coll[512], obj[768];     /* API paths */
	struct elector e;
	cJSON *cur;                   /* the Lease as last read or written */
	int busy;                     /* an attempt is in flight */
	int64_t started;              /* when it started */
	enum result res;              /* its outcome, once known */
	int64_t next;                 /* when the next attempt is due */
	int64_t renewed;              /* start of the last attempt that won */
	enum phase phase;
	enum why why;
	int led;                      /* prog was started */
	int64_t tick;                 /* run_tick's next call, or -1 */
	struct run run;
	char reported[LEASE_ID_MAX + 1];
	/* the watch */
	int watching;                 /* a watch is open */
	int recheck;                  /* news came during an attempt */
	char rv[RS_RV_MAX];           /* where the next watch starts */
	int64_t watch_after;          /* no new watch before this */
	int64_t watch_backoff;
	int64_t watch_started;
	unsigned long events;         /* in the open watch */
};

static void do_get(struct el *l);

static void
attempt_done(struct el *l, enum result r)
{
	l->busy = 0;
	l->res = r;
}

static void
api_error(struct el *l, const char *what, rs_code rc,
    const struct rs_kresp *resp)
{
	if (rc == RS_EAPI && resp->status.code == 409) {
		rs_info(2, "%s lease %s/%s: another candidate wrote first",
		    what, l->o->ns, l->o->name);
		return;
	}
	rs_error("unable to %s lease %s/%s: %s%s%s", what, l->o->ns,
	    l->o->name, rs_strerror(rc), resp->status.message[0] ? ": " : "",
	    resp->status.message);
}

/* Keeps the Lease of an answer as the base of the next PUT. */
static rs_code
take(struct el *l, const struct rs_kresp *resp, struct lease_rec *rec)
{
	cJSON *o;
	rs_code rc;

	if (resp->body == NULL)
		return RS_EPARSE;
	if ((rc = rs_json_parse(resp->body, resp->len, &o, NULL)) != RS_OK)
		goto bad;
	if ((rc = lease_parse(o, rec)) != RS_OK) {
		cJSON_Delete(o);
		goto bad;
	}
	cJSON_Delete(l->cur);
	l->cur = o;
	return RS_OK;
bad:
	rs_error("unable to read lease %s/%s: %s", l->o->ns, l->o->name,
	    rs_strerror(rc));
	return rc;
}

/* Where a watch goes on from: the resourceVersion of what was read last. */
static void
note_rv(struct el *l, const cJSON *o)
{
	const char *rv = rs_json_str(o, "metadata", "resourceVersion", NULL);

	if (rv && strlen(rv) < sizeof l->rv)
		memcpy(l->rv, rv, strlen(rv) + 1);
}

static void
report_leader(struct el *l)
{
	const char *h = l->e.obs.holder;

	if (strcmp(h, l->reported) == 0)
		return;
	snprintf(l->reported, sizeof l->reported, "%s", h);
	if (h[0] == '\0')
		rs_info(1, "lease %s/%s is free", l->o->ns, l->o->name);
	else
		rs_info(1, "lease %s/%s is held by %s", l->o->ns, l->o->name, h);
}

static void
submit(struct el *l, const char *method, const char *path, char *body,
    rs_kube_done_fn fn)
{
	rs_code rc;

	if (body == NULL) {
		rs_error("unable to build the lease: %s", rs_strerror(RS_ENOMEM));
		attempt_done(l, RES_FAIL);
		return;
	}
	rs_info(4, "%s %s", method, path);
	rc = rs_kube_submit(l->k, method, path, NULL, body, strlen(body), fn, l);
	cJSON_free(body);
	if (rc != RS_OK) {
		rs_error("unable to send a request: %s", rs_strerror(rc));
		attempt_done(l, RES_FAIL);
	}
}

static void
on_write(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct el *l = arg;
	struct lease_rec rec;

	if (rc != RS_OK) {
		api_error(l, "update", rc, resp);
		attempt_done(l, RES_FAIL);
		return;
	}
	if (take(l, resp, &rec) != RS_OK) {
		attempt_done(l, RES_FAIL);
		return;
	}
	lease_wrote(&l->e, &rec, rs_mono_ns());
	report_leader(l);
	attempt_done(l, RES_OK);
}

static void
on_fast(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct el *l = arg;

	if (rc == RS_OK) {
		on_write(arg, rc, resp);
		return;
	}
	rs_info(2, "optimistic renewal of %s/%s failed (%s), reading it",
	    l->o->ns, l->o->name, rs_strerror(rc));
	do_get(l);
}

static void
do_put(struct el *l, enum lease_verdict v, rs_kube_done_fn fn)
{
	struct lease_rec rec;

	lease_next(&l->e, v, 0, rs_wall_now(), &rec);
	submit(l, "PUT", l->obj, lease_body(l->cur, l->o->ns, l->o->name,
	    &rec), fn);
}

static void
do_create(struct el *l)
{
	struct lease_rec rec;

	lease_next(&l->e, LEASE_ACQUIRE, 1, rs_wall_now(), &rec);
	submit(l, "POST", l->coll, lease_body(NULL, l->o->ns, l->o->name,
	    &rec), on_write);
}

static void
on_get(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct el *l = arg;
	struct lease_rec rec;
	enum lease_verdict v;

	if (rc == RS_ENOTFOUND) {
		do_create(l);
		return;
	}
	if (rc != RS_OK) {
		api_error(l, "get", rc, resp);
		attempt_done(l, RES_FAIL);
		return;
	}
	if (take(l, resp, &rec) != RS_OK) {
		attempt_done(l, RES_FAIL);
		return;
	}
	note_rv(l, l->cur);
	lease_observe(&l->e, &rec, rs_mono_ns());
	report_leader(l);
	v = lease_decide(&l->e, l->started);
	if (v == LEASE_WAIT) {
		rs_info(4, "lease %s/%s is held by %s and has not expired",
		    l->o->ns, l->o->name, rec.holder);
		attempt_done(l, RES_FAIL);
		return;
	}
	do_put(l, v, on_write);
}

static void
do_get(struct el *l)
{
	rs_info(4, "GET %s", l->obj);
	if (rs_kube_submit(l->k, "GET", l->obj, NULL, NULL, 0, on_get, l) !=
	    RS_OK) {
		rs_error("unable to send a request: %s", rs_strerror(RS_ENOMEM));
		attempt_done(l, RES_FAIL);
	}
}

static void
start_attempt(struct el *l, int64_t now)
{
	l->busy = 1;
	l->res = RES_NONE;
	l->started = now;
	l->recheck = 0;
	if (l->cur && lease_is_leader(&l->e) && lease_valid(&l->e, now))
		do_put(l, LEASE_RENEW, on_fast);
	else
		do_get(l);
}

/* Gives the lease up, as client-go's ReleaseOnCancel: re-read it and, if
 * it still names this candidate, write it free; a conflict reads again.
 * Blocking: prog has stopped, nothing else is waiting. */
static void
release(struct el *l)
{
	int64_t end = rs_mono_ns() + l->o->renew_deadline;
	struct lease_rec rec;
	struct rs_kresp resp;
	char *body;
	rs_code rc;

	while (rs_mono_ns() < end) {
		rc = rs_kube_do(l->k, "GET", l->obj, NULL, NULL, 0, &resp);
		if (rc == RS_OK)
			rc = take(l, &resp, &rec);
		else
			api_error(l, "get", rc, &resp);
		rs_kresp_free(&resp);
		if (rc != RS_OK)
			return;
		lease_observe(&l->e, &rec, rs_mono_ns());
		if (!lease_is_leader(&l->e))
			return;
		lease_release_rec(&l->e, rs_wall_now(), &rec);
		body = lease_body(l->cur, l->o->ns, l->o->name, &rec);
		if (body == NULL)
			return;
		rc = rs_kube_do(l->k, "PUT", l->obj, NULL, body, strlen(body),
		    &resp);
		cJSON_free(body);
		if (rc == RS_OK) {
			rs_info(0, "released lease %s/%s", l->o->ns, l->o->name);
			rs_kresp_free(&resp);
			return;
		}
		api_error(l, "release", rc, &resp);
		rc = resp.status.code == 409 ? RS_EAGAIN : rc;
		rs_kresp_free(&resp);
		if (rc != RS_EAGAIN)
			return;
	}
}

/* A watch event's Lease, observed as a read is: a changed record restarts
 * its expiry clock, and a candidate that may take it does so at once, by
 * a PUT over this very object (its resourceVersion the precondition).
 * During an attempt, the attempt's end looks again. */
static void
on_lease_event(struct el *l, cJSON *obj)
{
	int64_t now = rs_mono_ns();
	struct lease_rec rec;
	enum lease_verdict v;

	if (lease_parse(obj, &rec) != RS_OK) {
		rs_error("unable to read lease %s/%s: %s", l->o->ns,
		    l->o->name, rs_strerror(RS_EPARSE));
		return;
	}
	if (l->busy) {
		l->recheck = 1;
		return;
	}
	cJSON_Delete(l->cur);
	l->cur = obj;
	lease_observe(&l->e, &rec, now);
	report_leader(l);
	v = lease_decide(&l->e, now);
	if (v == LEASE_WAIT)
		return;
	rs_info(2, "lease %s/%s changed to %s: trying now", l->o->ns,
	    l->o->name, rec.holder[0] ? "an expired record" : "free");
	l->busy = 1;
	l->res = RES_NONE;
	l->started = now;
	l->recheck = 0;
	do_put(l, v, on_write);
}

/* One line of the watch. Ends the watch (RS_EEOF) once it is of no more
 * use: the candidate leads or stops, or the server sent an error. */
static rs_code
on_watch_line(void *arg, char *line, size_t len)
{
	struct el *l = arg;
	const char *type, *why;
	cJSON *ev, *obj;

	if (l->led || l->phase != CANDIDATE)
		return RS_EEOF;
	if (rs_json_parse(line, len, &ev, NULL) != RS_OK)
		return RS_EPARSE;
	l->events++;
	type = rs_json_str(ev, "type", NULL);
	obj = cJSON_DetachItemFromObjectCaseSensitive(ev, "object");
	if (type == NULL || obj == NULL || strcmp(type, "ERROR") == 0) {
		why = obj ? rs_json_str(obj, "message", NULL) : NULL;
		rs_info(2, "watch of lease %s/%s: %s", l->o->ns, l->o->name,
		    why ? why : "an event without an object");
		cJSON_Delete(obj);
		cJSON_Delete(ev);
		return RS_EAPI;
	}
	note_rv(l, obj);
	if (strcmp(type, "DELETED") == 0) {
		/* gone: the next attempt reads it missing and creates it */
		if (l->busy)
			l->recheck = 1;
		else
			l->next = rs_mono_ns();
		cJSON_Delete(obj);
	} else if (strcmp(type, "BOOKMARK") == 0) {
		cJSON_Delete(obj);
	} else {
		on_lease_event(l, obj);
		if (l->cur != obj)
			cJSON_Delete(obj);
	}
	cJSON_Delete(ev);
	return RS_OK;
}

/* The watch ended. After a server's own end (its timeout) or one of ours,
 * the next starts at once from the last resourceVersion seen; after a
 * failure, or an end that brought nothing, not before a retry period,
 * doubling: a server refusing watches costs a request now and then. */
static void
on_watch_end(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct el *l = arg;
	int64_t now = rs_mono_ns();

	l->watching = 0;
	if ((rc == RS_OK || rc == RS_EEOF) && l->events > 0) {
		l->watch_backoff = 0;
		l->watch_after = now;
		return;
	}
	l->watch_backoff = l->watch_backoff == 0 ? l->o->retry_period :
	    2 * l->watch_backoff;
	if (l->watch_backoff > WATCH_BACKOFF_MAX)
		l->watch_backoff = WATCH_BACKOFF_MAX;
	l->watch_after = now + l->watch_backoff;
	if (rc != RS_EEOF)
		rs_info(1, "watch of lease %s/%s ended (%s%s%s): reading it "
		    "every retry period", l->o->ns, l->o->name, rs_strerror(rc),
		    resp->status.message[0] ? ": " : "", resp->status.message);
}

static void
watch_start(struct el *l, int64_t now)
{
	char path[1024], *name;
	long t;

	if (l->watching || l->led || l->phase != CANDIDATE || l->rv[0] == 0 ||
	    now < l->watch_after)
		return;
	if ((name = rs_kube_escape(l->o->name)) == NULL)
		return;
	t = WATCH_TIMEOUT_S + (long)(drand48() * WATCH_TIMEOUT_S);
	snprintf(path, sizeof path, "%s?fieldSelector=metadata.name%%3D%s&"
	    "watch=1&allowWatchBookmarks=true&resourceVersion=%s&"
	    "timeoutSeconds=%ld", l->coll, name, l->rv, t);
	free(name);
	rs_info(4, "GET %s", path);
	l->events = 0;
	l->watch_started = now;
	/* a half-open connection: the client's bound, past the server's */
	if (rs_kube_submit_stream(l->k, path, (t + 30) * 1000, on_watch_line,
	    l, on_watch_end, l) == RS_OK)
		l->watching = 1;
	else
		l->watch_after = now + l->o->retry_period;
}

static void
lose(struct el *l, const char *fmt, const char *arg)
{
	char why[512];

	snprintf(why, sizeof why, fmt, arg);
	rs_error("lost lease %s/%s: %s", l->o->ns, l->o->name, why);
	l->why = WHY_LOST;
}

static int64_t
jittered(const struct el *l)
{
	return l->o->retry_period +
	    (int64_t)(drand48() * JITTER * (double)l->o->retry_period);
}

static void
on_result(struct el *l, int64_t now, char **argv, const sigset_t *mask)
{
	enum result r = l->res;
	int64_t exp;

	l->res = RES_NONE;
	if (r == RES_OK) {
		l->renewed = l->started;
		l->next = now + l->o->retry_period;
		/* Won while a signal asked to stop: release, never start. */
		if (l->phase != CANDIDATE || l->why != WHY_NONE)
			return;
		rs_info(0, "acquired lease %s/%s as %s", l->o->ns, l->o->name,
		    l->o->identity);
		l->phase = LEADING;
		l->led = 1;
		if (run_start(&l->run, argv, l->o->kill_after, mask) != RS_OK) {
			l->why = WHY_PROG;
			l->run.code = 111;
		}
		return;
	}
	if (!l->led) {
		l->next = now + jittered(l);
		if (l->recheck) {
			l->recheck = 0;
			l->next = now;
			return;
		}
		exp = lease_expiry(&l->e);
		if (l->e.have_obs && l->e.obs.holder[0] && exp > now &&
		    exp < l->next)
			l->next = exp + 1000000;
		return;
	}
	l->next = now + l->o->retry_period;
	if (l->e.have_obs && l->e.obs.holder[0] && !lease_is_leader(&l->e) &&
	    l->why != WHY_LOST)
		lose(l, "now held by %s", l->e.obs.holder);
}

static int
want_attempt(const struct el *l)
{
	if (l->busy)
		return 0;
	if (l->phase == CANDIDATE || l->phase == LEADING)
		return 1;
	/* Stopping prog: keep the lease until prog is gone. */
	return l->why != WHY_LOST && l->run.pid != 0 && !l->run.exited;
}

static void
read_signals(struct el *l, int sigfd)
{
	struct signalfd_siginfo si;

	while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if ((si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) &&
		    l->why == WHY_NONE) {
			rs_info(1, "got signal %u: stopping", si.ssi_signo);
			l->why = WHY_TERM;
		}
	}
	run_reap(&l->run);
}

/* Returns the exit code when the end has come, else -1. */
static int
step(struct el *l, int64_t now)
{
	if (l->phase == LEADING && l->run.exited && l->why == WHY_NONE)
		l->why = WHY_PROG;
	if (l->phase != CANDIDATE && l->why != WHY_LOST &&
	    !(l->run.exited || l->run.pid == 0) &&
	    now >= l->renewed + l->o->renew_deadline)
		lose(l, "%s", "no renewal succeeded within the renew deadline");
	if (l->why != WHY_NONE && l->phase != STOPPING) {
		l->phase = STOPPING;
		run_stop(&l->run, now);
	}
	if (l->phase != STOPPING)
		return -1;
	if (l->why == WHY_LOST)
		run_stop(&l->run, now);
	l->tick = run_tick(&l->run, now);
	if (l->run.pid != 0 && !l->run.exited)
		return -1;
	if (l->why == WHY_LOST)
		return 111;
	if (l->busy)
		return -1;
	if (lease_is_leader(&l->e))
		release(l);
	return l->why == WHY_PROG ? l->run.code : 0;
}

static int
wait_ms(const struct el *l, int64_t now)
{
	int64_t w = MAX_WAIT_NS, t;

	if (want_attempt(l))
		w = l->next - now;
	if (l->phase == LEADING) {
		t = l->renewed + l->o->renew_deadline - now;
		if (t < w)
			w = t;
	}
	if (l->phase == STOPPING && l->tick >= 0 && l->tick < w)
		w = l->tick;
	if (w > MAX_WAIT_NS)
		w = MAX_WAIT_NS;
	return w <= 0 ? 0 : (int)((w + 999999) / 1000000);
}

int
elect_run(struct rs_kube *k, const struct elect_opts *o, char **argv,
    int sigfd, const sigset_t *mask)
{
	struct el l;
	int64_t now;
	int code;

	memset(&l, 0, sizeof l);
	l.k = k;
	l.o = o;
	snprintf(l.coll, sizeof l.coll,
	    "/apis/coordination.k8s.io/v1/namespaces/%s/leases", o->ns);
	snprintf(l.obj, sizeof l.obj, "%s/%s", l.coll, o->name);
	elector_init(&l.e, o->identity,
	    (long)(o->lease_duration / 1000000000LL));
	l.next = rs_mono_ns();
	rs_info(0, "attempting to acquire lease %s/%s as %s", o->ns, o->name,
	    o->identity);
	for (;;) {
		now = rs_mono_ns();
		if (want_attempt(&l) && now >= l.next)
			start_attempt(&l, now);
		watch_start(&l, now);
		rs_kube_run(k, wait_ms(&l, now), sigfd);
		read_signals(&l, sigfd);
		now = rs_mono_ns();
		if (l.res != RES_NONE)
			on_result(&l, now, argv, mask);
		if ((code = step(&l, now)) >= 0)
			break;
	}
	cJSON_Delete(l.cur);
	return code;
}
