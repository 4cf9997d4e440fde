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
#include "run.h"

#define JITTER 1.2               /* client-go's JitterFactor */
#define MAX_WAIT_NS 1000000000LL

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
