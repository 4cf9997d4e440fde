/* kube_multi.c: many requests in flight on one curl multi handle.
 * A submitted request takes its token from the bucket at once (a
 * reservation, so requests start in the order submitted) and waits in a
 * FIFO until its start time; rs_kube_run sleeps in poll(2) on libcurl's
 * sockets (the multi_socket interface) until the next start time,
 * libcurl's timer, a transfer's activity or extra_fd, never spinning.
 * Every request whose time has come starts at once, up to max_running:
 * the work and the bucket size what is in flight, not a constant (a
 * slow-start batch of 500 creates is 500 requests on the wire, as
 * client-go's goroutines make it).
 * Over HTTP/2 the transfers share a connection (PIPEWAIT) up to `streams`
 * of them; past that libcurl opens another. The bound is for CPU, not
 * the server: at each event on a connection libcurl 7.88 and 8.x run
 * every transfer of that connection, so the work of a wake-up grows with
 * the streams a connection carries. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "kube_internal.h"
#include "log.h"

#define KUBE_MULTI_RECV_BUFFER 4096

/* Fewer requests in flight than this, and the server drains them in about
 * a round trip: a window could only hold back the answer that unblocks the
 * next step (the tail of a slow-start batch, a reaction), and leave the
 * server idle meanwhile. */
#define SETTLE_MIN_RUNNING 64

static char *
own_copy(char **w, const char *s, size_t n)
{
	char *p = *w;

	memcpy(p, s, n);
	p[n] = '\0';
	*w += n + 1;
	return p;
}

static rs_code
submit(struct rs_kube *k, const char *method, const char *path,
    const char *ctype, const char *body, size_t body_len, int borrow,
    rs_kube_done_fn done, void *arg, struct kreq **out)
{
	size_t ml = strlen(method), pl = strlen(path);
	size_t cl = ctype ? strlen(ctype) : 0, bl = borrow ? 0 : body_len;
	struct kreq *r;
	char *w;

	r = malloc(sizeof *r);
	if (r == NULL)
		return RS_ENOMEM;
	/* One block holds the copies of everything the request sends. */
	w = malloc(ml + pl + cl + bl + 4);
	if (w == NULL) {
		free(r);
		return RS_ENOMEM;
	}
	kreq_init(r, k, NULL, NULL, NULL, NULL, body_len);
	r->own = w;
	r->method = own_copy(&w, method, ml);
	r->path = own_copy(&w, path, pl);
	r->ctype = ctype ? own_copy(&w, ctype, cl) : "application/json";
	if (body == NULL)
		r->body = NULL;
	else
		r->body = borrow ? body : own_copy(&w, body, body_len);
	r->timeout_ms = k->timeout_ms;
	r->done = done;
	r->done_arg = arg;
	r->not_before = rs_mono_ns() + kube_reserve(k);
	kfifo_push(&k->wait, r);
	if (out)
		*out = r;
	return RS_OK;
}

void
rs_kube_set_gate(struct rs_kube *k, rs_kube_gate_fn fn, void *arg)
{
	k->gate = fn;
	k->gate_arg = arg;
}

static void req_complete(struct rs_kube *k, struct kreq *r, rs_code rc);

/* The gate refuses r: it completes here, unsent. */
static int
gated(struct rs_kube *k, struct kreq *r)
{
	char why[sizeof r->resp.status.message];

	if (k->gate == NULL || k->gate(k->gate_arg, r->method, r->path, why,
	    sizeof why))
		return 0;
	snprintf(r->resp.status.message, sizeof r->resp.status.message, "%s",
	    why);
	req_complete(k, r, RS_EREFUSED);
	return 1;
}

rs_code
rs_kube_submit(struct rs_kube *k, const char *method, const char *path,
    const char *ctype, const char *body, size_t body_len,
    rs_kube_done_fn done, void *arg)
{
	return submit(k, method, path, ctype, body, body_len, 0, done, arg,
	    NULL);
}

rs_code
rs_kube_submit_borrowed(struct rs_kube *k, const char *method,
    const char *path, const char *ctype, const char *body, size_t body_len,
    rs_kube_done_fn done, void *arg)
{
	return submit(k, method, path, ctype, body, body_len, 1, done, arg,
	    NULL);
}

rs_code
rs_kube_submit_stream(struct rs_kube *k, const char *path, long timeout_ms,
    rs_kube_line_fn fn, void *arg, rs_kube_done_fn done, void *done_arg)
{
	struct kreq *r;
	rs_code rc;

	rc = submit(k, "GET", path, NULL, NULL, 0, 0, done, done_arg, &r);
	if (rc != RS_OK)
		return rc;
	r->timeout_ms = timeout_ms;
	r->fn = fn;
	r->fn_arg = arg;
	r->async = 1;
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

/* CURLOPT_PREREQFUNCTION: the gate once more as the request leaves, its
 * connection up. A transfer can wait in libcurl long after start_due
 * asked (for a connection another one uses, or one in its handshake, or
 * dialled again after a partition), and libcurl may send it again on a
 * new connection: the fence must hold at each send. */
static int
on_prereq(void *arg, char *ip, char *lip, int port, int lport)
{
	struct kreq *r = arg;
	struct rs_kube *k = r->k;

	(void)ip;
	(void)lip;
	(void)port;
	(void)lport;
	if (k->gate(k->gate_arg, r->method, r->path, r->resp.status.message,
	    sizeof r->resp.status.message))
		return CURL_PREREQFUNC_OK;
	r->cb_rc = RS_EREFUSED;
	return CURL_PREREQFUNC_ABORT;
}

static rs_code
req_start(struct rs_kube *k, struct kreq *r)
{
	rs_code rc;

	rc = kreq_prepare(r);
	if (rc != RS_OK)
		return rc;
	if (k->gate != NULL && (curl_easy_setopt(r->easy,
	    CURLOPT_PREREQFUNCTION, on_prereq) != CURLE_OK ||
	    curl_easy_setopt(r->easy, CURLOPT_PREREQDATA, r) != CURLE_OK)) {
		snprintf(r->resp.status.message, sizeof r->resp.status.message,
		    "unable to set up the request's gate");
		return RS_ECONFIG;
	}
	/* Each running transfer holds a receive buffer, 16 KiB unless told;
	 * the answers here are single objects of a few KiB, and a larger one
	 * only takes more rounds through it. A hint: refused, the default
	 * stays. */
	(void)curl_easy_setopt(r->easy, CURLOPT_BUFFERSIZE,
	    (long)KUBE_MULTI_RECV_BUFFER);
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

/* As many connections as the transfers running need, set before libcurl
 * picks their connections: while the first connection of a burst is in
 * its TLS handshake it is not known to multiplex, and every transfer past
 * a full one would dial its own, up to the bound (16 connections for a
 * burst of 256 that 4 carry). */
static void
conns_size(struct rs_kube *k)
{
	long need = (k->nrunning + k->streams - 1) / k->streams;

	if (need < 1)
		need = 1;
	if (need == k->host_conns)
		return;
	k->host_conns = need;
	curl_multi_setopt(k->multi, CURLMOPT_MAX_HOST_CONNECTIONS, need);
}

/* Starts r on its transport: a stream of kube_h2.c's connections, else
 * a libcurl transfer. */
static rs_code
req_go(struct rs_kube *k, struct kreq *r)
{
	rs_code rc;

	if (kube_h2_takes(k, r)) {
		rc = kube_h2_start(k, r);
		if (rc != RS_EAGAIN)
			return rc;
	}
	if (r->easy == NULL && (r->easy = easy_get(k)) == NULL)
		return RS_ENOMEM;
	return req_start(k, r);
}

/* Starts every request whose time has come; returns how many completed
 * at once (they failed before reaching the network). */
static int
start_due(struct rs_kube *k, int64_t now)
{
	struct kreq *r;
	int n = 0;
	rs_code rc;

	while ((r = k->wait.head) != NULL && r->not_before <= now &&
	    k->nrunning < k->max_running) {
		(void)kfifo_pop(&k->wait);
		if (gated(k, r)) {
			n++;
			continue;
		}
		rc = req_go(k, r);
		if (rc != RS_OK) {
			req_complete(k, r, rc);
			n++;
		}
	}
	conns_size(k);
	kube_h2_pump(k, now);
	return n;
}

/* The time between two answers while many requests were in flight all
 * along (a moving average): what the server takes per request of ours
 * when it has a queue of them. With a few in flight the time between
 * answers is a round trip, not the server's pace. */
static void
answer_pace(struct rs_kube *k, int n)
{
	int64_t now, gap;

	if (n > 0) {
		now = rs_mono_ns();
		if (k->last_answer > 0 && k->ran_since_answer >=
		    SETTLE_MIN_RUNNING) {
			gap = (now - k->last_answer) / n;
			k->answer_gap = k->answer_gap == 0 ? gap :
			    k->answer_gap + (gap - k->answer_gap) / 8;
		}
		k->last_answer = now;
	}
	k->ran_since_answer = k->nrunning;
}

/* A request ended (rc): handed out, or sent once more when kreq_end asks
 * (a 401 that fresh credentials may fix). Returns 1 when handed out. */
static int
finished(struct rs_kube *k, struct kreq *r, rs_code rc)
{
	if (r->resend) {
		kreq_reset(r);
		if (r->easy)
			curl_easy_reset(r->easy);
		/* a resend is a new start: the gate (rs-apply's fence) is
		 * asked again, as the write leaves */
		if (gated(k, r))
			return 1;
		rc = req_go(k, r);
		if (rc == RS_OK)
			return 0;
	}
	req_complete(k, r, rc);
	return 1;
}

/* Hands out finished transfers and streams. */
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
		n += finished(k, r, kreq_finish(r, cc));
	}
	while ((r = kube_h2_done(k)) != NULL) {
		k->nrunning--;
		r->resend = 0;
		if (r->h2_curl) {
			/* never sent: libcurl carries it from here */
			r->h2_curl = 0;
			rs_kresp_free(&r->resp);
			if ((rc = req_go(k, r)) == RS_OK)
				continue;
		} else {
			rc = kreq_end(r, r->h2_cc);
		}
		n += finished(k, r, rc);
	}
	answer_pace(k, n);
	return n;
}

/* CURLMOPT_SOCKETFUNCTION: keeps the set of sockets to poll. */
static int
on_socket(CURL *e, curl_socket_t fd, int what, void *arg, void *sockp)
{
	struct rs_kube *k = arg;
	struct pollfd *p;
	int i;

	(void)e;
	(void)sockp;
	for (i = 0; i < k->nsocks && k->socks[i].fd != fd; i++)
		;
	if (what == CURL_POLL_REMOVE) {
		if (i < k->nsocks)
			k->socks[i] = k->socks[--k->nsocks];
		return 0;
	}
	if (i == k->nsocks) {
		if (k->nsocks == k->socks_cap) {
			int ncap = k->socks_cap ? 2 * k->socks_cap : 4;

			p = realloc(k->socks, ncap * sizeof *p);
			if (p == NULL)
				return -1;
			k->socks = p;
			k->socks_cap = ncap;
		}
		k->nsocks++;
	}
	k->socks[i].fd = fd;
	k->socks[i].events = (what & CURL_POLL_IN ? POLLIN : 0) |
	    (what & CURL_POLL_OUT ? POLLOUT : 0);
	k->socks[i].revents = 0;
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: when libcurl wants to run its timeouts. */
static int
on_timer(CURLM *m, long timeout_ms, void *arg)
{
	struct rs_kube *k = arg;

	(void)m;
	k->timer_at = timeout_ms < 0 ? -1 :
	    rs_mono_ns() + (int64_t)timeout_ms * 1000000;
	return 0;
}

/* The multi_socket interface: libcurl works only on the transfers whose
 * socket is ready or whose timer is due. curl_multi_perform instead polls
 * the connection once per running transfer on every call, 20 polls a
 * request with 64 streams on one HTTP/2 connection. */
void
kube_multi_init(struct rs_kube *k, const struct rs_kube_opts *o)
{
	long streams = o && o->streams > 0 ? o->streams : RS_KUBE_STREAMS;
	long conns;

	k->max_running = o && o->max_running > 0 ? o->max_running :
	    RS_KUBE_MAX_RUNNING;
	if (streams > k->max_running)
		streams = k->max_running;
	conns = (k->max_running + streams - 1) / streams;
	k->streams = streams;
	curl_multi_setopt(k->multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streams);
	/* Bounded (conns_size): with no bound, a burst started at once opens
	 * a connection for nearly every request, since a connection still in
	 * its TLS handshake is not known to multiplex (755 connections for
	 * 1,000 creates). Past the bound, transfers wait for a stream. */
	conns_size(k);
	/* Kept between bursts: libcurl's default keeps 4 a running transfer,
	 * so an idle moment would close them and the next burst would pay a
	 * TLS handshake per connection again. */
	curl_multi_setopt(k->multi, CURLMOPT_MAXCONNECTS, conns + 1);
	k->timer_at = -1;
	curl_multi_setopt(k->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(k->multi, CURLMOPT_SOCKETDATA, k);
	curl_multi_setopt(k->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(k->multi, CURLMOPT_TIMERDATA, k);
}

static void
run_timer(struct rs_kube *k, int64_t now)
{
	int running;

	if (k->timer_at < 0 || k->timer_at > now)
		return;
	k->timer_at = -1;
	curl_multi_socket_action(k->multi, CURL_SOCKET_TIMEOUT, 0, &running);
}

static int
poll_ms(struct rs_kube *k, int64_t now, int64_t deadline)
{
	int64_t until = deadline, h2;

	if (k->wait.head && k->wait.head->not_before < until &&
	    k->nrunning < k->max_running)
		until = k->wait.head->not_before;
	if (k->timer_at >= 0 && k->timer_at < until)
		until = k->timer_at;
	if ((h2 = kube_h2_next(k)) >= 0 && h2 < until)
		until = h2;
	if (until <= now)
		return 0;
	/* Round up: waking early would only loop once more. */
	return (int)((until - now + 999999) / 1000000);
}

/* After a wake-up that brought answers, the answers of a short window are
 * taken in one wake-up: libcurl works through every transfer of a
 * connection at each wake-up, so one per answer costs CPU that, on a small
 * machine, the API server needs. The window never leaves the server idle:
 * it is taken only with many requests in flight, and lasts a quarter of
 * the time the server should take for them (their number times the pace
 * of answers), at most settle_ms; as the work drains, windows shrink and
 * end, so the last answers are taken as they come. extra_fd is still watched meanwhile, so new work starts at once,
 * but the window ends at its deadline however often extra_fd wakes it.
 * Returns 1 when extra_fd is ready. */
static int
settle(struct rs_kube *k, int *ms, int extra_fd)
{
	struct pollfd x = { extra_fd, POLLIN, 0 };
	struct timespec ts;
	int64_t now, left, span;

	if (k->busy && k->settle_ms > 0 && k->nrunning >= SETTLE_MIN_RUNNING &&
	    *ms > 0 && k->answer_gap > 0) {
		now = rs_mono_ns();
		if (k->settle_until == 0) {
			span = k->nrunning * k->answer_gap / 4;
			if (span > (int64_t)k->settle_ms * 1000000)
				span = (int64_t)k->settle_ms * 1000000;
			k->settle_until = now + span;
		}
		left = k->settle_until - now;
		if (left > (int64_t)*ms * 1000000)
			left = (int64_t)*ms * 1000000;
		ts.tv_sec = left / 1000000000;
		ts.tv_nsec = left % 1000000000;
		if (left > 0 && ppoll(&x, 1, &ts, NULL) > 0 && extra_fd >= 0)
			return 1;
		*ms = 0;
	}
	k->busy = 0;
	k->settle_until = 0;
	return 0;
}

/* Polls libcurl's sockets, kube_h2.c's connections and extra_fd; hands
 * each what is ready. Returns 1 when extra_fd is ready. The callbacks
 * change k->socks during curl_multi_socket_action, so the poll works on a
 * copy. */
static int
wait_sockets(struct rs_kube *k, int ms, int extra_fd)
{
	struct pollfd fds[16], *p = fds;
	int n = k->nsocks, nh = kube_h2_fds(k, NULL, 0), i, ev, running;
	int extra = 0;

	if (settle(k, &ms, extra_fd))
		return 1;

	if (n + nh + 1 > (int)(sizeof fds / sizeof fds[0]) &&
	    (p = malloc((n + nh + 1) * sizeof *p)) == NULL) {
		p = fds;
		nh = 0;
		n = (int)(sizeof fds / sizeof fds[0]) - 1;
	}
	if (n > 0)      /* socks is NULL until libcurl opens a socket */
		memcpy(p, k->socks, n * sizeof *p);
	kube_h2_fds(k, p + n, nh);
	p[n + nh].fd = extra_fd;
	p[n + nh].events = POLLIN;
	p[n + nh].revents = 0;
	if (poll(p, n + nh + 1, ms) > 0) {
		for (i = 0; i < n + nh; i++)
			if (p[i].revents != 0)
				k->busy = 1;
		for (i = 0; i < n; i++) {
			if (p[i].revents == 0)
				continue;
			ev = (p[i].revents & (POLLIN | POLLHUP) ?
			    CURL_CSELECT_IN : 0) |
			    (p[i].revents & POLLOUT ? CURL_CSELECT_OUT : 0) |
			    (p[i].revents & (POLLERR | POLLNVAL) ?
			    CURL_CSELECT_ERR : 0);
			curl_multi_socket_action(k->multi, p[i].fd, ev,
			    &running);
		}
		extra = extra_fd >= 0 && p[n + nh].revents != 0;
	}
	/* deadlines too: a late request or dial ends here */
	kube_h2_ready(k, p + n, nh);
	if (p != fds)
		free(p);
	return extra;
}

int
rs_kube_run(struct rs_kube *k, int timeout_ms, int extra_fd)
{
	int64_t now = rs_mono_ns();
	int64_t deadline = now + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) *
	    1000000;
	unsigned long lines = k->async_lines;
	int done;

	for (;;) {
		done = start_due(k, now);
		run_timer(k, rs_mono_ns());
		done += reap(k);
		if (done > 0 || k->async_lines != lines)
			break;
		if (k->wait.n + k->nrunning == 0 && extra_fd < 0)
			break;
		now = rs_mono_ns();
		if (now >= deadline)
			break;
		if (wait_sockets(k, poll_ms(k, now, deadline), extra_fd)) {
			reap(k);
			break;
		}
		if (k->async_lines != lines) {
			reap(k);
			break;
		}
		now = rs_mono_ns();
	}
	return k->wait.n + k->nrunning;
}

void
kube_multi_drop(struct rs_kube *k)
{
	struct kreq *r;

	kube_h2_drop(k);
	while ((r = kube_h2_done(k)) != NULL) {
		k->nrunning--;
		r->done = NULL;
		req_complete(k, r, RS_EIO);
	}
	while ((r = kfifo_pop(&k->wait)) != NULL) {
		r->done = NULL;
		req_complete(k, r, RS_EIO);
	}
	/* Transfers still running: finish none, free all. */
	while ((r = k->run_head) != NULL) {
		run_unlink(k, r);
		r->done = NULL;
		req_complete(k, r, RS_EIO);
	}
}
