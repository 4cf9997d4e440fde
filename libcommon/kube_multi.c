/* kube_multi.c: many requests in flight on one curl multi handle.
 * A submitted request takes its token from the bucket at once (a
 * reservation, so requests start in the order submitted) and waits in a
 * FIFO until its start time; rs_kube_run sleeps in curl_multi_poll until
 * the next start time, a transfer's activity or extra_fd, never spinning.
 * Over HTTP/2 the transfers share one connection (PIPEWAIT). At most
 * KUBE_MAX_RUNNING transfers run at once: an API server on a few cores
 * answers no faster with more, and each running transfer holds buffers
 * (and, past the server's stream limit, a connection of its own), so a
 * 500-pod delete would cost megabytes for nothing. */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "kube_internal.h"
#include "log.h"

#define KUBE_MAX_RUNNING 64

static char *
own_copy(char **w, const char *s, size_t n)
{
	char *p = *w;

	memcpy(p, s, n);
	p[n] = '\0';
	*w += n + 1;
	return p;
}

rs_code
rs_kube_submit(struct rs_kube *k, const char *method, const char *path,
    const char *ctype, const char *body, size_t body_len,
    rs_kube_done_fn done, void *arg)
{
	size_t ml = strlen(method), pl = strlen(path);
	size_t cl = ctype ? strlen(ctype) : 0;
	struct kreq *r;
	char *w;

	r = malloc(sizeof *r);
	if (r == NULL)
		return RS_ENOMEM;
	/* One block holds the copies of everything the request sends. */
	w = malloc(ml + pl + cl + body_len + 4);
	if (w == NULL) {
		free(r);
		return RS_ENOMEM;
	}
	kreq_init(r, k, NULL, NULL, NULL, NULL, body_len);
	r->own = w;
	r->method = own_copy(&w, method, ml);
	r->path = own_copy(&w, path, pl);
	r->ctype = ctype ? own_copy(&w, ctype, cl) : "application/json";
	r->body = body ? own_copy(&w, body, body_len) : NULL;
	r->timeout_ms = k->timeout_ms;
	r->done = done;
	r->done_arg = arg;
	r->not_before = rs_mono_ns() + kube_reserve(k);
	if (k->wait_tail)
		k->wait_tail->next = r;
	else
		k->wait_head = r;
	k->wait_tail = r;
	k->nwait++;
	return RS_OK;
}

static CURL *
easy_get(struct rs_kube *k)
{
	CURL *e;

	if (k->nspare > 0) {
		e = k->spare[--k->nspare];
		curl_easy_reset(e);
		return e;
	}
	return curl_easy_init();
}

static void
easy_put(struct rs_kube *k, CURL *e)
{
	if (e == NULL)
		return;
	if (k->nspare < (int)(sizeof k->spare / sizeof k->spare[0]))
		k->spare[k->nspare++] = e;
	else
		curl_easy_cleanup(e);
}

static void
req_complete(struct rs_kube *k, struct kreq *r, rs_code rc)
{
	CURL *e = r->easy;

	r->easy = NULL;
	if (r->done)
		r->done(r->done_arg, rc, &r->resp);
	rs_kresp_free(&r->resp);
	kreq_release(r);
	free(r);
	easy_put(k, e);
}

static rs_code
req_start(struct rs_kube *k, struct kreq *r)
{
	rs_code rc;

	rc = kreq_prepare(r);
	if (rc != RS_OK)
		return rc;
	if (curl_multi_add_handle(k->multi, r->easy) != CURLM_OK) {
		snprintf(r->resp.status.message, sizeof r->resp.status.message,
		    "unable to start the request");
		return RS_ENOMEM;
	}
	k->nrunning++;
	r->rprev = NULL;
	r->rnext = k->run_head;
	if (k->run_head)
		k->run_head->rprev = r;
	k->run_head = r;
	return RS_OK;
}

static void
run_unlink(struct rs_kube *k, struct kreq *r)
{
	curl_multi_remove_handle(k->multi, r->easy);
	k->nrunning--;
	if (r->rprev)
		r->rprev->rnext = r->rnext;
	else
		k->run_head = r->rnext;
	if (r->rnext)
		r->rnext->rprev = r->rprev;
	r->rprev = r->rnext = NULL;
}

/* Starts every request whose time has come; returns how many completed
 * at once (they failed before reaching the network). */
static int
start_due(struct rs_kube *k, int64_t now)
{
	struct kreq *r;
	int n = 0;
	rs_code rc;

	while ((r = k->wait_head) != NULL && r->not_before <= now &&
	    k->nrunning < KUBE_MAX_RUNNING) {
		k->wait_head = r->next;
		if (k->wait_head == NULL)
			k->wait_tail = NULL;
		r->next = NULL;
		k->nwait--;
		r->easy = easy_get(k);
		rc = r->easy ? req_start(k, r) : RS_ENOMEM;
		if (rc != RS_OK) {
			req_complete(k, r, rc);
			n++;
		}
	}
	return n;
}

/* Hands out finished transfers; a 401 that fresh credentials may fix is
 * sent once more instead. */
static int
reap(struct rs_kube *k)
{
	struct kreq *r;
	CURLMsg *m;
	CURLcode cc;
	rs_code rc;
	int q, n = 0;

	while ((m = curl_multi_info_read(k->multi, &q)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		cc = m->data.result;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
		    (char **)&r);
		run_unlink(k, r);
		r->resend = 0;
		rc = kreq_finish(r, cc);
		if (r->resend) {
			kreq_reset(r);
			curl_easy_reset(r->easy);
			rc = req_start(k, r);
			if (rc == RS_OK)
				continue;
		}
		req_complete(k, r, rc);
		n++;
	}
	return n;
}

static int
poll_ms(struct rs_kube *k, int64_t now, int64_t deadline)
{
	int64_t until = deadline;

	if (k->wait_head && k->wait_head->not_before < until &&
	    k->nrunning < KUBE_MAX_RUNNING)
		until = k->wait_head->not_before;
	if (until <= now)
		return 0;
	/* Round up: waking early would only loop once more. */
	return (int)((until - now + 999999) / 1000000);
}

int
rs_kube_run(struct rs_kube *k, int timeout_ms, int extra_fd)
{
	int64_t now = rs_mono_ns();
	int64_t deadline = now + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) *
	    1000000;
	struct curl_waitfd wfd;
	int running, done;

	for (;;) {
		done = start_due(k, now);
		curl_multi_perform(k->multi, &running);
		done += reap(k);
		if (done > 0)
			break;
		if (k->nwait + k->nrunning == 0 && extra_fd < 0)
			break;
		now = rs_mono_ns();
		if (now >= deadline)
			break;
		memset(&wfd, 0, sizeof wfd);
		wfd.fd = extra_fd;
		wfd.events = CURL_WAIT_POLLIN;
		curl_multi_poll(k->multi, extra_fd >= 0 ? &wfd : NULL,
		    extra_fd >= 0, poll_ms(k, now, deadline), NULL);
		if (extra_fd >= 0 && wfd.revents)
			break;
		now = rs_mono_ns();
	}
	return k->nwait + k->nrunning;
}

void
kube_multi_drop(struct rs_kube *k)
{
	struct kreq *r;

	while ((r = k->wait_head) != NULL) {
		k->wait_head = r->next;
		r->done = NULL;
		req_complete(k, r, RS_EIO);
	}
	k->wait_tail = NULL;
	k->nwait = 0;
	/* Transfers still running: finish none, free all. */
	while ((r = k->run_head) != NULL) {
		run_unlink(k, r);
		r->done = NULL;
		req_complete(k, r, RS_EIO);
	}
}
