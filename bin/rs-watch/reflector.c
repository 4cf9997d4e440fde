/* reflector.c: the loop of one resource's thread, and what it does when
 * something fails. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "out.h"
#include "reflector.h"

rs_code
reflector_init(struct reflector *r, const struct watch_opts *o,
    const struct resource *res)
{
	memset(r, 0, sizeof *r);
	r->o = o;
	r->res = *res;
	resource_api_version(res, r->api_version, sizeof r->api_version);
	seen_init(&r->seen);
	backoff_init(&r->bo, o->bo_initial, o->bo_max, o->bo_reset);
	atomic_init(&r->hup, 0);
	r->buf.max = o->max_line;
	r->pb = o->protobuf && res->group[0] == '\0' &&
	    strcmp(res->plural, "pods") == 0;
	if ((r->path = resource_path(res, o->ns)) == NULL)
		return RS_ENOMEM;
	return RS_OK;
}

char *
reflector_url(const struct reflector *r, const char *query)
{
	const struct watch_opts *o = r->o;
	char *url;

	if (asprintf(&url, "%s?%s%s%s%s%s%s%s", r->path, query,
	    o->label_q ? "&labelSelector=" : "", o->label_q ? o->label_q : "",
	    o->field_q ? "&fieldSelector=" : "", o->field_q ? o->field_q : "",
	    o->shard_q ? "&shardSelector=" : "", o->shard_q ? o->shard_q : "") < 0)
		return NULL;
	return url;
}

void
reflector_hup(struct reflector *r)
{
	atomic_store(&r->hup, 1);
	r->stop = 1;
}

/* What went wrong, for a message: the server's Status, or the transport
 * error that stands in for it. */
static void
describe(rs_code rc, const struct rs_kresp *resp, char *buf, size_t len)
{
	const struct rs_kstatus *st = &resp->status;

	if (st->code != 0 && st->reason[0])
		snprintf(buf, len, "%s: %s", st->reason, st->message);
	else if (st->code != 0)
		snprintf(buf, len, "HTTP %ld: %s", st->code, st->message);
	else if (st->message[0])
		snprintf(buf, len, "%s", st->message);
	else
		snprintf(buf, len, "%s", rs_strerror(rc));
}

/* How long the question whether a refused server is back may take. */
#define READY_TIMEOUT_MS 1000

/* The backoff step after a refused connection, cut short when the server
 * says it is ready again. The step stands for the list or watch itself,
 * as client-go's; but where nothing listens a connection costs the server
 * nothing, and after an API server restart the step (up to twice the
 * last, 0.8 s doubling) kept the streams away seconds after the server
 * was back, and the stale-cache guard with them. A server that answers
 * but fails the request waits the whole step: only refusals are polled. */
static void
wait_for_server(struct reflector *r, const char *what, int64_t wait)
{
	int64_t every = RS_KUBE_READYZ_EVERY_MS * 1000000LL;
	int64_t end = rs_mono_ns() + wait;

	while (rs_mono_ns() + every < end) {
		sleep_ns(every);
		if (rs_kube_ready(r->o->kube, READY_TIMEOUT_MS) != RS_OK)
			continue;
		rs_info(1, "the API server is ready again: %s of %s at once "
		    "(%.1f s before the backoff's end)", what, r->res.plural,
		    (end - rs_mono_ns()) / 1e9);
		return;
	}
	sleep_ns(end - rs_mono_ns());
}

/* After a failure: wait as the server asked (429 and 5xx with
 * Retry-After) or as the backoff says, then the caller retries. */
static void
failed(struct reflector *r, const char *what, rs_code rc,
    const struct rs_kresp *resp)
{
	long code = resp->status.code ? resp->status.code : resp->code;
	char why[1200];
	int64_t wait;

	describe(rc, resp, why, sizeof why);
	if (!r->synced && strcmp(what, "list") == 0 &&
	    (code == 404 || code == 400)) {
		/* a resource the server does not have, or a selector it does
		 * not take: waiting will not mend the command line */
		out_flush();
		rs_fatal(100, "unable to list %s: %s", r->res.plural, why);
	}
	if ((code == 429 || code >= 500) && resp->status.retry_after > 0)
		wait = resp->status.retry_after * 1000000000LL;
	else
		wait = backoff_next(&r->bo, rs_mono_ns());
	rs_warn("unable to %s %s: %s (retrying in %.1f s%s)", what,
	    r->res.plural, why, wait / 1e9, resp->refused ? ", or when the "
	    "server is ready" : "");
	if (resp->refused)
		wait_for_server(r, what, wait);
	else
		sleep_ns(wait);
}

/* Memory, or an object longer than --max-line: what was read is out, and
 * no retry would fare better (exit 111). */
__attribute__((noreturn)) static void
no_room(struct reflector *r, const char *what, rs_code rc)
{
	out_flush();
	rs_fatal(111, "unable to %s %s: %s", what, r->res.plural,
	    rs_strerror(rc));
}

static void
do_list(struct reflector *r)
{
	struct rs_kresp resp;
	rs_code rc;

	memset(&resp, 0, sizeof resp);
	rc = list_run(r, &resp);
	if (rc == RS_ENOMEM || rc == RS_ETOOBIG)
		no_room(r, "list", rc);
	if (rc != RS_OK)
		failed(r, "list", rc, &resp);
	rs_kresp_free(&resp);
}

/* Answers that say the server does not take a streaming list (an older
 * one, or one with the WatchList feature off): no wait will change them. */
static int
stream_refused(long code)
{
	return code == 400 || code == 404 || code == 405 || code == 406 ||
	    code == 415 || code == 422 || code == 501;
}

/* A streaming list that ended before the bookmark that completes it: it
 * starts over in pages, this pass only, as client-go's reflector falls
 * back to one LIST after a failed watch-list "because making progress is
 * better than deadlocking" (a server whose watch cache lags refuses the
 * stream, not a list); the next list tries the stream again. A server
 * that is down fails the first page too, and the page waits the backoff.
 * A stop (SIGHUP) starts the list over by a stream. */
static void
stream_unfinished(struct reflector *r, rs_code rc, const struct watch_end *end,
    const struct rs_kresp *resp)
{
	long code = resp->status.code ? resp->status.code : resp->code;
	char why[1200];

	if (rc == RS_ENOMEM || rc == RS_ETOOBIG)
		no_room(r, "list", rc);
	if (rc == RS_EAPI && end->events == 0 && !end->why[0] &&
	    stream_refused(code)) {
#define REFUSED "the server does not list %s by a streaming watch (%s): " \
	"listing in pages"
		describe(rc, resp, why, sizeof why);
		if (r->stream_refused)
			rs_info(1, REFUSED, r->res.plural, why);
		else
			rs_warn(REFUSED, r->res.plural, why);
#undef REFUSED
		r->stream_refused = 1;
		list_restart(r, 0, 0);
		return;
	}
	if (r->stop) {
		list_restart(r, 0, 1);
		return;
	}
	if (rc == RS_OK) {
		rs_warn("the streaming list of %s ended after %ld events, "
		    "before it was complete; listing in pages this time",
		    r->res.plural, end->events);
	} else {
		if (rc == RS_EPARSE || (rc == RS_EAPI && end->why[0]))
			snprintf(why, sizeof why, "%s", end->why);
		else
			describe(rc, resp, why, sizeof why);
		rs_warn("the streaming list of %s failed after %ld events (%s); "
		    "listing in pages this time", r->res.plural, end->events,
		    why);
	}
	list_restart(r, 0, 0);
}

/* A stream the server answered 2xx that then failed in transport (a
 * reset, a read that timed out, the server gone): client-go's
 * StreamWatcher takes an EOF, unexpected EOF or timeout for the watch's
 * close, and the reflector watches again at once. */
static int
stream_cut(rs_code rc, const struct rs_kresp *resp)
{
	return (rc == RS_ENET || rc == RS_ETLS || rc == RS_ETIMEOUT) &&
	    resp->code >= 200 && resp->code < 300;
}

/* 410: the resume point is gone, and a list is the cure; the server
 * answered, so it relists at once (client-go waits one backoff step
 * first, as its loop waits after every ListAndWatch). A server that
 * refuses the version its own list just gave (the first watch after a
 * list in pages, nothing received) would make that a loop: that one
 * waits. */
static void
expired(struct reflector *r, const struct watch_end *end,
    const struct rs_kresp *resp)
{
	int again = r->watches == 1 && end->events == 0;

	rs_info(1, "watch of %s from resourceVersion %s: %s; relisting "
	    "after 410%s", r->res.plural, r->rv, end->expired ? end->why :
	    resp->status.message, again ? " (the list's own version: after "
	    "a backoff)" : "");
	r->rv[0] = '\0';
	if (again)
		sleep_ns(backoff_next(&r->bo, rs_mono_ns()));
}

/* A watch ended. Only what says the server is unwell waits a backoff step:
 * a failure to connect or an error status (failed), a bad event, a stream
 * that ended within a second with nothing in it. A stream that was
 * established and then ended, cleanly or cut, is watched again at once. */
static void
do_watch(struct reflector *r)
{
	struct rs_kresp resp;
	struct watch_end end;
	int listing = r->ls.active;
	rs_code rc;

	memset(&resp, 0, sizeof resp);
	r->watches++;
	rc = watch_run(r, &end, &resp);
	if (listing && r->ls.active) {
		stream_unfinished(r, rc, &end, &resp);
	} else if (end.expired || (rc == RS_EAPI && resp.code == 410)) {
		expired(r, &end, &resp);
	} else if (rc == RS_ENOMEM || rc == RS_ETOOBIG) {
		no_room(r, "watch", rc);
	} else if (rc == RS_EPARSE || (rc == RS_EAPI && end.why[0])) {
		/* a bad event says why in end; a bad stream, in resp */
		rs_warn("watch of %s ended: %s", r->res.plural, end.why[0] ?
		    end.why : resp.status.message[0] ? resp.status.message :
		    rs_strerror(rc));
		sleep_ns(backoff_next(&r->bo, rs_mono_ns()));
	} else if (rc != RS_OK && !stream_cut(rc, &resp)) {
		failed(r, "watch", rc, &resp);
	} else if (r->stop) {
		rs_info(2, "watch of %s stopped", r->res.plural);
	} else if (end.ns < 1000000000LL && end.events == 0) {
		/* a server that closes every watch at once must not make us
		 * spin (client-go: "very short watch") */
		rs_warn("watch of %s ended at once with nothing received%s%s",
		    r->res.plural, rc != RS_OK ? ": " : "",
		    rc != RS_OK ? resp.status.message : "");
		sleep_ns(backoff_next(&r->bo, rs_mono_ns()));
	} else if (rc != RS_OK) {
		rs_info(1, "watch of %s cut after %.1f s and %ld events (%s); "
		    "watching again", r->res.plural, end.ns / 1e9, end.events,
		    resp.status.message[0] ? resp.status.message :
		    rs_strerror(rc));
	} else {
		rs_info(2, "watch of %s ended after %.1f s and %ld events; "
		    "watching again", r->res.plural, end.ns / 1e9, end.events);
	}
	rs_kresp_free(&resp);
}

static void *
reflector_main(void *arg)
{
	struct reflector *r = arg;

	for (;;) {
		/* stop is cleared before hup is read, so a SIGHUP is either
		 * seen here or stops the stream about to start */
		r->stop = 0;
		if (atomic_exchange(&r->hup, 0)) {
			rs_info(1, "SIGHUP: listing %s for a full snapshot",
			    r->res.plural);
			list_begin(r, 1);
		} else if (!r->ls.active && r->rv[0] == '\0') {
			list_begin(r, 0);
		}
		if (r->ls.active && !r->ls.streaming)
			do_list(r);
		else
			do_watch(r);
	}
	return NULL;
}

rs_code
reflector_start(struct reflector *r)
{
	return pthread_create(&r->tid, NULL, reflector_main, r) == 0 ?
	    RS_OK : RS_ENOMEM;
}
