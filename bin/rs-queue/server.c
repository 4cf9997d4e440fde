#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cJSON.h>

#include "clock.h"
#include "line.h"
#include "listen.h"
#include "log.h"
#include "proto.h"
#include "queue_client.h"
#include "reply.h"
#include "server.h"

/* A client whose replies pile up past OUT_HIGH is not read until they
 * drain below OUT_LOW: memory per client stays bounded. */
#define OUT_HIGH (1u << 20)
#define OUT_LOW (64u << 10)
/* Reads per readiness event, so that one busy client cannot starve the
 * others. */
#define READS_PER_EVENT 8
#define ID_LISTEN (UINT32_MAX - 1)
#define ID_SIGNAL (UINT32_MAX - 2)

struct conn {
	int fd;
	uint32_t id;              /* slot; also the queue's holder id */
	struct rs_line_reader in;
	struct rsq_replies r;     /* in request order */
	uint32_t events;          /* what epoll watches */
	unsigned eof : 1;         /* the client sends no more */
	unsigned paused : 1;      /* not read: replies pile up */
	unsigned closing : 1;     /* close once the replies are written */
	unsigned queued : 1;      /* on the flush list */
};

struct waiter {
	uint32_t conn;
	uint32_t hold;
};

struct server {
	struct rsq q;
	const char *name;
	struct rsq_listener l;
	int ep, sfd, spare;
	struct conn **conns;
	uint32_t nconns, cap;
	uint32_t *freeids;
	uint32_t nfree;
	uint32_t live;
	struct waiter *w;         /* ring of GETs waiting for a key, oldest first */
	size_t whead, wn, wcap;
	uint32_t *flush;          /* connections with replies to write */
	size_t nflush, flushcap;
	int signals;
	int64_t now;
	int64_t drain_timeout;    /* ns; 0: a shutdown waits for ever */
	int64_t drain_deadline;   /* monotonic ns; 0: none running */
};

static int conn_write(struct server *s, struct conn *c);
static int conn_lines(struct server *s, struct conn *c);

static void
oom(void)
{
	rs_fatal(111, "unable to allocate memory: %s", strerror(ENOMEM));
}

static void
watch(struct server *s, struct conn *c)
{
	struct epoll_event ev;
	uint32_t want = (c->paused || c->eof ? 0 : EPOLLIN) |
	    (rsq_reply_ready(&c->r) ? EPOLLOUT : 0);

	if (want == c->events)
		return;
	memset(&ev, 0, sizeof ev);
	ev.events = want;
	ev.data.u32 = c->id;
	if (epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev) < 0)
		rs_fatal(111, "unable to watch a client: %s", strerror(errno));
	c->events = want;
}

static void
mark_flush(struct server *s, struct conn *c)
{
	if (c->queued)
		return;
	if (s->nflush == s->flushcap) {
		size_t n = s->flushcap ? s->flushcap * 2 : 64;
		uint32_t *nf = realloc(s->flush, n * sizeof *nf);

		if (nf == NULL)
			oom();
		s->flush = nf;
		s->flushcap = n;
	}
	s->flush[s->nflush++] = c->id;
	c->queued = 1;
}

static void
reply(struct server *s, struct conn *c, const char *a, size_t alen,
    const char *b, size_t blen)
{
	rsq_reply(&c->r, a, alen, b, blen);
	mark_flush(s, c);
}

static void
reply_str(struct server *s, struct conn *c, const char *text)
{
	reply(s, c, text, strlen(text), NULL, 0);
}

static void
reply_err(struct server *s, struct conn *c, const char *why, const char *key,
    size_t keylen)
{
	char msg[128];
	int n = snprintf(msg, sizeof msg, "ERR %s%s", why, key ? ": " : "");

	reply(s, c, msg, n, key, keylen);
}

static void
answer(struct server *s, struct conn *c, const char *a, const char *key,
    size_t keylen)
{
	rsq_reply_answer(&c->r, a, key, keylen);
	mark_flush(s, c);
}

static void
waiter_push(struct server *s, uint32_t conn, int hold)
{
	if (s->wn == s->wcap) {
		size_t ncap = s->wcap ? s->wcap * 2 : 64, i;
		struct waiter *nw = malloc(ncap * sizeof *nw);

		if (nw == NULL)
			oom();
		for (i = 0; i < s->wn; i++)
			nw[i] = s->w[(s->whead + i) % s->wcap];
		free(s->w);
		s->w = nw;
		s->wcap = ncap;
		s->whead = 0;
	}
	s->w[(s->whead + s->wn) % s->wcap] = (struct waiter){ conn, hold };
	s->wn++;
}

static struct waiter
waiter_pop(struct server *s)
{
	struct waiter w = s->w[s->whead];

	s->whead = (s->whead + 1) % s->wcap;
	s->wn--;
	return w;
}

/* Removes the GETs of a client that went away; rare, so O(n). */
static void
waiter_drop(struct server *s, uint32_t conn)
{
	size_t i, n = s->wn;

	s->wn = 0;
	for (i = 0; i < n; i++) {
		struct waiter w = s->w[(s->whead + i) % s->wcap];

		if (w.conn != conn)
			s->w[(s->whead + s->wn++) % s->wcap] = w;
	}
}

/* Hands queued keys to waiting GETs, oldest GET first. */
static void
dispatch(struct server *s)
{
	while (s->wn > 0 && rsq_len(&s->q) > 0 && !s->q.shutting_down) {
		struct waiter w = waiter_pop(s);
		struct conn *c = s->conns[w.conn];
		uint32_t i = rsq_get(&s->q, w.hold ? RSQ_NONE : c->id, s->now);
		const char *key;
		size_t len;

		key = rsq_key(&s->q, i, &len);
		answer(s, c, "KEY ", key, len);
	}
}

static void
begin_shutdown(struct server *s)
{
	if (s->q.shutting_down)
		return;
	rs_info(1, "shutting down: %llu keys processing",
	    (unsigned long long)s->q.processing);
	rsq_shutdown(&s->q);
	/* A client that never says DONE (a shell's `rs-queue get`, a stage
	 * stopped with SIGSTOP) would hold the server up until a second
	 * signal: the drain gets a deadline, as s6's timeout-kill or
	 * systemd's TimeoutStopSec would give the whole process. */
	if (s->drain_timeout > 0)
		s->drain_deadline = rs_mono_ns() + s->drain_timeout;
	while (s->wn > 0) {
		struct waiter w = waiter_pop(s);

		answer(s, s->conns[w.conn], "SHUTDOWN", NULL, 0);
	}
}

static void
reply_code(struct server *s, struct conn *c, rs_code rc)
{
	if (rc == RS_OK)
		reply_str(s, c, "OK");
	else if (rc == RS_EREFUSED)
		reply_str(s, c, "ERR shutting down");
	else
		reply_str(s, c, "ERR out of memory");
}

static void
do_stats(struct server *s, struct conn *c)
{
	struct rsq_stats st;
	char *json;

	rsq_stats(&s->q, s->now, &st);
	st.clients = s->live;
	st.getters = s->wn;
	if ((json = rsq_stats_json(&st, s->name)) == NULL)
		oom();
	reply(s, c, "STATS ", 6, json, strlen(json));
	cJSON_free(json);
}

static void
do_get(struct server *s, struct conn *c, int hold)
{
	if (s->q.shutting_down) {
		reply_str(s, c, "SHUTDOWN");
		return;
	}
	rsq_reply_wait(&c->r);
	waiter_push(s, c->id, hold);
	dispatch(s);
}

static void
handle(struct server *s, struct conn *c, char *line, size_t len)
{
	struct rsq_req r;
	const char *why = rsq_parse(line, len, &r);
	char num[32];
	int64_t delay;
	rs_code rc;

	if (why != NULL) {
		reply_err(s, c, why, NULL, 0);
		return;
	}
	switch (r.verb) {
	case RSQ_ADD:
		rc = rsq_add(&s->q, r.key, r.keylen, s->now);
		reply_code(s, c, rc);
		break;
	case RSQ_GET:
		do_get(s, c, r.hold);
		return;
	case RSQ_DONE:
		rc = rsq_done(&s->q, r.key, r.keylen, s->now);
		if (rc == RS_ENOTFOUND)
			reply_err(s, c, "not processing", r.key, r.keylen);
		else
			reply_code(s, c, rc);
		break;
	case RSQ_FORGET:
		reply_code(s, c, rsq_forget(&s->q, r.key, r.keylen));
		return;
	case RSQ_RETRY:
		rc = rsq_retry(&s->q, r.key, r.keylen, s->now, &delay);
		/* how long a key is parked, and after how many failures in a
		 * row: what an operator asks when a key seems stuck */
		if (rc == RS_OK)
			rs_info(3, "%.*s: failure %u in a row, retried in %.3f s",
			    (int)r.keylen, r.key, rsq_failures(&s->q, r.key,
			    r.keylen), delay / 1e9);
		reply_code(s, c, rc);
		break;
	case RSQ_AFTER:
		reply_code(s, c, rsq_after(&s->q, r.key, r.keylen, r.delay_ns,
		    s->now));
		break;
	case RSQ_LEN:
		snprintf(num, sizeof num, "LEN %zu", rsq_len(&s->q));
		reply_str(s, c, num);
		return;
	case RSQ_STATS:
		do_stats(s, c);
		return;
	case RSQ_SHUTDOWN:
		begin_shutdown(s);
		reply_str(s, c, "OK");
		return;
	}
	dispatch(s);
}

static void
conn_free(struct server *s, struct conn *c)
{
	s->conns[c->id] = NULL;
	s->freeids[s->nfree++] = c->id;
	s->live--;
	close(c->fd);
	rs_line_reader_free(&c->in);
	rsq_replies_free(&c->r);
	free(c);
}

/* The client is gone: its GETs are void, the keys it held go back. */
static void
conn_close(struct server *s, struct conn *c)
{
	uint32_t id = c->id;

	rs_info(2, "client %u gone", id);
	waiter_drop(s, id);
	conn_free(s, c);
	rsq_release(&s->q, id, s->now);
	dispatch(s);
}

/* The client sends no more. It gets the replies up to its first
 * unanswered GET, then the connection closes; it can never DONE what it
 * holds, so that goes back now. */
static int
conn_eof(struct server *s, struct conn *c)
{
	waiter_drop(s, c->id);
	rsq_reply_drop_waiting(&c->r);
	rsq_release(&s->q, c->id, s->now);
	dispatch(s);
	c->closing = 1;
	return conn_write(s, c);
}

/* Handles the complete lines already read; -1 if c was closed. */
static int
conn_lines(struct server *s, struct conn *c)
{
	char *line;
	size_t len;
	rs_code rc;

	for (;;) {
		if (!c->eof && rsq_reply_pending(&c->r) > OUT_HIGH) {
			c->paused = 1;
			return 0;
		}
		rc = rs_line_next(&c->in, &line, &len);
		if (rc == RS_OK)
			handle(s, c, line, len);
		else if (rc == RS_ETOOBIG)
			reply_err(s, c, "line too long", NULL, 0);
		else
			break;
	}
	if (c->eof)
		return conn_eof(s, c);
	return 0;
}

/* Writes what the socket takes; -1 if c was closed. */
static int
conn_write(struct server *s, struct conn *c)
{
	int r = rsq_reply_send(&c->r, c->fd);

	if (r < 0 || (r == 0 && c->closing)) {
		conn_close(s, c);
		return -1;
	}
	if (c->paused && rsq_reply_pending(&c->r) < OUT_LOW) {
		c->paused = 0;
		if (conn_lines(s, c) < 0)
			return -1;
	}
	watch(s, c);
	return 0;
}

static void
conn_read(struct server *s, struct conn *c)
{
	rs_code rc;
	int i;

	for (i = 0; i < READS_PER_EVENT && !c->paused && !c->eof; i++) {
		rc = rs_line_fill(&c->in);
		if (rc == RS_EAGAIN)
			break;
		if (rc == RS_EEOF)
			c->eof = 1;
		else if (rc != RS_OK) {
			conn_close(s, c);
			return;
		}
		if (conn_lines(s, c) < 0)
			return;
	}
	/* replies queued: flush_all writes them, then watches c once, so
	 * that a reply written at once costs no EPOLLOUT on and off */
	if (!c->queued)
		watch(s, c);
}

static uint32_t
conn_id(struct server *s)
{
	if (s->nfree > 0)
		return s->freeids[--s->nfree];
	if (s->nconns == s->cap) {
		uint32_t n = s->cap ? s->cap * 2 : 64;
		struct conn **nc = realloc(s->conns, n * sizeof *nc);
		uint32_t *nf = realloc(s->freeids, n * sizeof *nf);

		if (nc == NULL || nf == NULL)
			oom();
		s->conns = nc;
		s->freeids = nf;
		s->cap = n;
	}
	return s->nconns++;
}

/* Only our own user (or root) may talk to the queue; the socket's mode
 * says so already, this says it again where the mode cannot. */
static int
peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof cr;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return 0;
	return cr.uid == geteuid() || cr.uid == 0;
}

static void
conn_new(struct server *s, int fd)
{
	struct epoll_event ev;
	struct conn *c;

	if (!peer_allowed(fd)) {
		rs_warn("refusing a client of another user");
		close(fd);
		return;
	}
	if ((c = calloc(1, sizeof *c)) == NULL)
		oom();
	c->fd = fd;
	c->id = conn_id(s);
	if (rsq_holder_reserve(&s->q, c->id) != RS_OK ||
	    rs_line_reader_init(&c->in, fd, RS_QUEUE_LINE_MAX) != RS_OK)
		oom();
	memset(&ev, 0, sizeof ev);
	ev.events = c->events = EPOLLIN;
	ev.data.u32 = c->id;
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		rs_fatal(111, "unable to watch a client: %s", strerror(errno));
	s->conns[c->id] = c;
	s->live++;
	rs_info(2, "client %u connected", c->id);
}

static void
do_accept(struct server *s)
{
	int fd;

	for (;;) {
		fd = accept4(s->l.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			conn_new(s, fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE) {
			/* out of descriptors: turn the client away rather
			 * than spin on a listener that stays readable */
			rs_warn("too many clients: %s", strerror(errno));
			close(s->spare);
			fd = accept(s->l.fd, NULL, NULL);
			if (fd >= 0)
				close(fd);
			s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
			rs_warn("unable to accept a client: %s", strerror(errno));
		}
		return;
	}
}

static void
do_signal(struct server *s)
{
	struct signalfd_siginfo si;

	while (read(s->sfd, &si, sizeof si) == sizeof si) {
		s->signals++;
		if (s->signals > 1)
			rs_info(0, "signal %u: exiting now", si.ssi_signo);
		else
			rs_info(0, "signal %u: shutting down once nothing is "
			    "processing%s", si.ssi_signo, s->drain_timeout > 0 ?
			    ", or at the drain deadline" : "");
		begin_shutdown(s);
	}
}

static void
flush_all(struct server *s)
{
	size_t i;

	/* a write may let a paused client go on and queue more */
	for (i = 0; i < s->nflush; i++) {
		struct conn *c = s->conns[s->flush[i]];

		if (c == NULL || !c->queued)
			continue;
		c->queued = 0;
		conn_write(s, c);
	}
	s->nflush = 0;
}

static int
next_timeout(const struct server *s)
{
	int64_t due = rsq_next_due(&s->q), now = rs_mono_ns(), ms;

	if (s->drain_deadline > 0 && (due < 0 || s->drain_deadline < due))
		due = s->drain_deadline;
	if (due < 0)
		return -1;
	if (due <= now)
		return 0;
	ms = (due - now + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* The shutdown's deadline has passed with keys still out. */
static int
drain_overdue(const struct server *s)
{
	if (s->drain_deadline == 0 || s->now < s->drain_deadline)
		return 0;
	rs_warn("the drain deadline (%.3g s) has passed",
	    (double)s->drain_timeout / 1e9);
	return 1;
}

static void
setup(struct server *s, const struct rsq_server_config *cfg)
{
	struct epoll_event ev;
	sigset_t set;

	memset(s, 0, sizeof *s);
	s->name = cfg->name;
	s->drain_timeout = cfg->drain_timeout_ns;
	if (rsq_init(&s->q, &cfg->queue) != RS_OK)
		oom();
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	s->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (s->sfd < 0 || s->ep < 0)
		rs_fatal(111, "unable to set up the event loop: %s",
		    strerror(errno));
	rsq_listen(cfg->path, &s->l);
	memset(&ev, 0, sizeof ev);
	ev.events = EPOLLIN;
	ev.data.u32 = ID_LISTEN;
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, s->l.fd, &ev) < 0)
		rs_fatal(111, "unable to watch the listener: %s", strerror(errno));
	ev.data.u32 = ID_SIGNAL;
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, s->sfd, &ev) < 0)
		rs_fatal(111, "unable to watch signals: %s", strerror(errno));
	if (cfg->notify_fd >= 0) {
		if (write(cfg->notify_fd, "\n", 1) < 0)
			rs_warn("unable to notify readiness on fd %d: %s",
			    cfg->notify_fd, strerror(errno));
		close(cfg->notify_fd);
	}
	rs_info(0, "serving queue %s on %s", cfg->name, cfg->path);
}

static void
teardown(struct server *s, const char *path)
{
	uint32_t i;

	for (i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];

		if (c == NULL)
			continue;
		/* last words (the OK to SHUTDOWN) if the socket takes them */
		if (rsq_reply_send(&c->r, c->fd) != 0)
			rs_info(2, "client %u: last replies lost", i);
		conn_free(s, c);
	}
	rsq_unlisten(path, &s->l);
	close(s->ep);
	close(s->sfd);
	close(s->spare);
	free(s->conns);
	free(s->freeids);
	free(s->w);
	free(s->flush);
	rsq_free(&s->q);
}

int
rsq_serve(const struct rsq_server_config *cfg)
{
	struct epoll_event ev[64];
	struct server s;
	int n, i, code = 0;

	setup(&s, cfg);
	for (;;) {
		n = epoll_wait(s.ep, ev, 64, next_timeout(&s));
		if (n < 0 && errno != EINTR)
			rs_fatal(111, "unable to wait for events: %s",
			    strerror(errno));
		s.now = rs_mono_ns();
		for (i = 0; i < n; i++) {
			uint32_t id = ev[i].data.u32;
			struct conn *c;

			if (id == ID_LISTEN) {
				do_accept(&s);
				continue;
			}
			if (id == ID_SIGNAL) {
				do_signal(&s);
				continue;
			}
			if ((c = s.conns[id]) == NULL)
				continue;
			if (ev[i].events & EPOLLERR ||
			    (ev[i].events & EPOLLHUP && c->paused)) {
				conn_close(&s, c);
				continue;
			}
			if (ev[i].events & EPOLLOUT && conn_write(&s, c) < 0)
				continue;
			if (ev[i].events & (EPOLLIN | EPOLLHUP))
				conn_read(&s, c);
		}
		s.now = rs_mono_ns();
		if (rsq_tick(&s.q, s.now) > 0)
			dispatch(&s);
		flush_all(&s);
		if (rsq_drained(&s.q))
			break;
		if (s.signals > 1 || drain_overdue(&s)) {
			rs_warn("exiting with %llu keys processing",
			    (unsigned long long)s.q.processing);
			code = 111;
			break;
		}
	}
	teardown(&s, cfg->path);
	rs_info(0, "queue %s: shut down", cfg->name);
	return code;
}
