/* http.c: the endpoints on libmicrohttpd. The library reads and parses
 * the requests, bounds them (connections at once, each one's memory,
 * inactivity) and writes the answers; this file routes, renders the
 * bodies, and runs the daemon in its external mode from one poll loop, so
 * that the handlers run on the main thread like the rest of rs-metrics.
 *
 * Two things the library does not do are done here, on the descriptors
 * it names. A connection has o->timeout_ms from accept to its last byte,
 * however slowly its bytes trickle in (an inactivity timeout lets a byte
 * a second hold a connection for hours): past it, a request whose head
 * never came whole is answered 408, the connection is shut, and the
 * library sees the end and closes it. And a connection the library
 * closes is kept open a moment on a copy of its descriptor, to read and
 * drop what the client still sends: a close with bytes unread is a
 * reset, which can destroy the answer in flight (the 431 to a head too
 * big, whose rest the library never reads). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "clock.h"
#include "log.h"
#include "ratelimit.h"
#include "rsm.h"

#define MS 1000000LL
#define DRAIN_MS 1000
#define NEVER INT64_MAX
#define TEXT "text/plain; charset=utf-8"
#define PROM "text/plain; version=0.0.4; charset=utf-8"

/* A connection and its deadline; mc NULL: a free slot. */
struct conn {
	struct MHD_Connection *mc;
	int fd;
	int late;                      /* answered 408, draining */
	int64_t deadline;
};

/* A closed connection's socket, drained until the client closes or
 * until; fd (our copy) -1: a free slot. */
struct drain {
	int fd;
	int64_t until;
};

struct server {
	const struct rsm_opts *o;
	struct conn *conns;            /* o->max_conns of each */
	struct drain *drains;
	struct pollfd *pf;             /* the library's, then the drains' */
	struct rs_bucket warnings;     /* the library's messages as warnings */
};

static volatile sig_atomic_t stopping;

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

/* The library's messages in ours ("rs-metrics: warning: ..."). Most are
 * about what a client did wrong, so that a flood of bad clients would
 * flood the log: past a burst, they are shown at -v 2 only, with the
 * malformed requests. */
static void
log_mhd(void *cls, const char *fmt, va_list ap)
{
	struct server *s = cls;
	char msg[512];
	size_t n;

	vsnprintf(msg, sizeof msg, fmt, ap);
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	if (rs_bucket_try(&s->warnings, rs_mono_ns()))
		rs_warn("libmicrohttpd: %s", msg);
	else
		rs_info(2, "libmicrohttpd: %s", msg);
}

/* Keeps a copy of fd to read from (the library has shut it for writing,
 * so the client has seen the end of the answer). */
static void
drain_start(struct server *s, int fd)
{
	size_t i;

	for (i = 0; i < s->o->max_conns; i++) {
		if (s->drains[i].fd >= 0)
			continue;
		s->drains[i].fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		s->drains[i].until = rs_mono_ns() + DRAIN_MS * MS;
		return;
	}
}

/* Reads and drops what came; closed at the end, an error or until. */
static void
drain_step(struct drain *dr, short revents, int64_t now)
{
	char sink[4096];
	ssize_t n = 1;

	if (revents != 0)
		while ((n = recv(dr->fd, sink, sizeof sink, MSG_DONTWAIT)) > 0)
			;
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) ||
	    now >= dr->until) {
		close(dr->fd);
		dr->fd = -1;
	}
}

/* Started: a slot with the deadline. Closed: the slot freed, the socket
 * drained (the library closes its descriptor on return). */
static void
on_connection(void *cls, struct MHD_Connection *mc, void **ctx,
    enum MHD_ConnectionNotificationCode what)
{
	struct server *s = cls;
	const union MHD_ConnectionInfo *fd;
	struct conn *c = *ctx;
	size_t i;

	if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (c != NULL) {
			drain_start(s, c->fd);
			c->mc = NULL;
		}
		*ctx = NULL;
		return;
	}
	fd = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	for (i = 0; fd != NULL && i < s->o->max_conns; i++) {
		c = &s->conns[i];
		if (c->mc != NULL)
			continue;
		c->mc = mc;
		c->fd = fd->connect_fd;
		c->late = 0;
		c->deadline = rs_mono_ns() + s->o->timeout_ms * MS;
		*ctx = c;
		return;
	}
}

/* Past its deadline. A head not yet whole (nothing queued) is told 408
 * and shut for writing, and given a moment to read the answer; then, or
 * at once when an answer is queued, the connection is shut both ways and
 * the library closes it. */
static void
expire(struct conn *c, int64_t now)
{
	static const char answer408[] =
	    "HTTP/1.1 408 Request Timeout\r\n"
	    "Connection: close\r\n"
	    "Content-Type: " TEXT "\r\n"
	    "Cache-Control: no-store\r\n"
	    "X-Content-Type-Options: nosniff\r\n"
	    "Content-Length: 16\r\n"
	    "\r\n"
	    "request timeout\n";

	c->deadline = NEVER;
	if (c->late || MHD_get_connection_info(c->mc,
	    MHD_CONNECTION_INFO_HTTP_STATUS) != NULL) {
		shutdown(c->fd, SHUT_RDWR);
		return;
	}
	rs_info(2, "answering 408 to a request not whole in time");
	if (send(c->fd, answer408, sizeof answer408 - 1,
	    MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		rs_info(2, "unable to answer 408: %s", strerror(errno));
	shutdown(c->fd, SHUT_WR);
	c->late = 1;
	c->deadline = now + DRAIN_MS * MS;
}

/* After the wait: the drains read, the connections past due expired. */
static void
step(struct server *s, int64_t now)
{
	size_t i;

	for (i = 0; i < s->o->max_conns; i++) {
		if (s->drains[i].fd >= 0)
			drain_step(&s->drains[i], s->pf[i + 1].revents, now);
		if (s->conns[i].mc != NULL && now >= s->conns[i].deadline)
			expire(&s->conns[i], now);
	}
}

/* The poll set and its timeout in ms: the library's next timeout, the
 * first deadline or the end of a drain, whichever comes first; -1 for
 * none. */
static int
poll_prepare(struct server *s, struct MHD_Daemon *d, int64_t now)
{
	MHD_UNSIGNED_LONG_LONG lib;
	int64_t first = NEVER, ms = -1;
	size_t i;

	for (i = 0; i < s->o->max_conns; i++) {
		s->pf[i + 1].fd = s->drains[i].fd;
		s->pf[i + 1].events = POLLIN;
		s->pf[i + 1].revents = 0;
		if (s->drains[i].fd >= 0 && s->drains[i].until < first)
			first = s->drains[i].until;
		if (s->conns[i].mc != NULL && s->conns[i].deadline < first)
			first = s->conns[i].deadline;
	}
	s->pf[0].revents = 0;
	if (first != NEVER)
		ms = first <= now ? 0 : (first - now + MS - 1) / MS;
	if (MHD_get_timeout(d, &lib) == MHD_YES &&
	    (ms < 0 || (MHD_UNSIGNED_LONG_LONG)ms > lib))
		ms = (int64_t)lib;
	return ms > 1 << 30 ? 1 << 30 : (int)ms;
}

struct count {
	const char *key;
	int n;
};

static enum MHD_Result
count_key(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct count *k = cls;

	(void)kind;
	(void)value;
	if (strcasecmp(key, k->key) == 0)
		k->n++;
	return MHD_YES;
}

/* How many times key comes among the values of that kind. */
static int
count_values(struct MHD_Connection *mc, enum MHD_ValueKind kind,
    const char *key)
{
	struct count k = { key, 0 };

	MHD_get_connection_values(mc, kind, count_key, &k);
	return k.n;
}

/* Queues body (freed by the library when owned) with our headers. */
static enum MHD_Result
respond(struct MHD_Connection *mc, unsigned code, const char *ctype,
    char *body, size_t len, int owned, const char *allow)
{
	struct MHD_Response *r;
	enum MHD_Result ok;

	r = MHD_create_response_from_buffer(len, body, owned ?
	    MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (r == NULL) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	/* one answer a connection: nothing held between requests */
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (allow != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	ok = MHD_queue_response(mc, code, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result
respond_text(struct MHD_Connection *mc, unsigned code, const char *text,
    const char *allow)
{
	return respond(mc, code, TEXT, (char *)text, strlen(text), 0, allow);
}

/* What the library lets through and we do not: a second Host, a body
 * (GET and HEAD carry none here: a Content-Length but 0, any
 * Transfer-Encoding). */
static int
refused(struct MHD_Connection *mc)
{
	const char *len = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_LENGTH);

	return count_values(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST) > 1 ||
	    count_values(mc, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_TRANSFER_ENCODING) > 0 ||
	    (len != NULL && (len[0] == '\0' || len[strspn(len, "0")] != '\0'));
}

/* The path of an origin-form or absolute-form target; NULL if neither. */
static const char *
target_path(const char *t)
{
	const char *p;

	if (*t == '/')
		return t;
	if (strncasecmp(t, "http://", 7) != 0 &&
	    strncasecmp(t, "https://", 8) != 0)
		return NULL;
	p = strchr(t, ':') + 3;
	p = strchr(p, '/');
	return p ? p : "/";
}

/* 0 /metrics, 1 /healthz and /livez, 2 /readyz, -1 none of them. */
static int
endpoint(const char *path)
{
	if (strcmp(path, "/metrics") == 0)
		return 0;
	if (strcmp(path, "/healthz") == 0 || strcmp(path, "/livez") == 0)
		return 1;
	if (strcmp(path, "/readyz") == 0)
		return 2;
	return -1;
}

static enum MHD_Result
serve_endpoint(struct MHD_Connection *mc, int which, const struct rsm_opts *o)
{
	char *body = NULL;
	size_t len = 0;
	int ok = 1;
	FILE *f;

	if ((f = open_memstream(&body, &len)) == NULL)
		return respond_text(mc, 500, "out of memory\n", NULL);
	if (which == 0)
		rsm_scrape(f, o);
	else
		ok = rsm_health(f, o, which == 2, count_values(mc,
		    MHD_GET_ARGUMENT_KIND, "verbose") > 0);
	if (fclose(f) != 0) {
		free(body);
		return respond_text(mc, 500, "out of memory\n", NULL);
	}
	return respond(mc, ok ? 200 : which == 2 ? 503 : 500,
	    which == 0 ? PROM : TEXT, body, len, 1, NULL);
}

/* The library's access handler: called once the head is whole, and
 * answered at once (no body is read). */
static enum MHD_Result
answer(void *cls, struct MHD_Connection *mc, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_len, void **req)
{
	const struct server *s = cls;
	const char *path;
	int which;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)req;
	/* a fragment is never sent (RFC 9110 4.2.5) */
	if (refused(mc) || strchr(url, '#') != NULL ||
	    (path = target_path(url)) == NULL) {
		rs_info(2, "answering 400 to a malformed request");
		return respond_text(mc, MHD_HTTP_BAD_REQUEST, "bad request\n",
		    NULL);
	}
	rs_info(3, "%s %s", method, path);
	if ((which = endpoint(path)) < 0)
		return respond_text(mc, 404, "404 page not found\n", NULL);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return respond_text(mc, 405, "405 method not allowed\n",
		    "GET, HEAD");
	return serve_endpoint(mc, which, s->o);
}

/* Our socket, for ADDR:PORT, [ADDR]:PORT or :PORT, logged; the library
 * takes it as is. */
static int
listen_on(const char *spec)
{
	struct addrinfo hints, *res, *ai;
	char host[256], port[16], name[NI_MAXHOST], serv[NI_MAXSERV];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	const char *colon;
	int fd = -1, one = 1, rc, e = 0;

	colon = strrchr(spec, ':');
	if (spec[0] == '[')
		snprintf(host, sizeof host, "%.*s", (int)(colon - spec - 2),
		    spec + 1);
	else
		snprintf(host, sizeof host, "%.*s", (int)(colon - spec), spec);
	snprintf(port, sizeof port, "%s", colon + 1);
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res)) != 0)
		rs_fatal(111, "unable to listen on %s: %s", spec,
		    gai_strerror(rc));
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, 64) == 0)
			break;
		e = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		rs_fatal(111, "unable to listen on %s: %s", spec, strerror(e));
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
	    getnameinfo((struct sockaddr *)&ss, sl, name, sizeof name, serv,
	    sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		rs_info(0, "listening on http://%s%s%s:%s/",
		    ss.ss_family == AF_INET6 ? "[" : "", name,
		    ss.ss_family == AF_INET6 ? "]" : "", serv);
	return fd;
}

/* TERM and INT stop the loop; they are blocked but while it waits, so
 * that one cannot slip in between the check and the wait. */
static void
setup_signals(sigset_t *waiting)
{
	struct sigaction sa;
	sigset_t term;

	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	sigprocmask(SIG_BLOCK, &term, waiting);
	sigdelset(waiting, SIGTERM);
	sigdelset(waiting, SIGINT);
}

static struct MHD_Daemon *
start(struct server *s, int lfd)
{
	struct MHD_Daemon *d;

	d = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
	    MHD_USE_SUPPRESS_DATE_NO_CLOCK, 0, NULL, NULL, answer, s,
	    MHD_OPTION_EXTERNAL_LOGGER, log_mhd, s,
	    MHD_OPTION_LISTEN_SOCKET, lfd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->o->max_conns,
	    /* inactivity: the deadline comes first, this is the backstop */
	    MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)(s->o->timeout_ms / 1000 + 2),
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)RSM_CONN_MEMORY,
	    MHD_OPTION_STRICT_FOR_CLIENT, 1,
	    MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
	    MHD_OPTION_END);
	if (d == NULL)
		rs_fatal(111, "unable to start the HTTP server on %s",
		    s->o->listen);
	return d;
}

static void
notify_ready(int fd)
{
	if (fd < 0)
		return;
	if (write(fd, "\n", 1) < 0)
		rs_warn("unable to notify readiness on fd %d: %s", fd,
		    strerror(errno));
	close(fd);
}

static void
server_init(struct server *s, const struct rsm_opts *o)
{
	size_t i;

	s->o = o;
	s->conns = calloc(o->max_conns, sizeof *s->conns);
	s->drains = calloc(o->max_conns, sizeof *s->drains);
	s->pf = calloc(o->max_conns + 1, sizeof *s->pf);
	if (s->conns == NULL || s->drains == NULL || s->pf == NULL)
		rs_fatal(111, "unable to allocate: %s", strerror(errno));
	for (i = 0; i < o->max_conns; i++)
		s->drains[i].fd = -1;
	rs_bucket_init(&s->warnings, 1, 10);
}

static void
server_free(struct server *s)
{
	size_t i;

	for (i = 0; i < s->o->max_conns; i++)
		if (s->drains[i].fd >= 0)
			close(s->drains[i].fd);
	free(s->conns);
	free(s->drains);
	free(s->pf);
}

int
rsm_serve(const struct rsm_opts *o)
{
	struct server s;
	struct MHD_Daemon *d;
	struct timespec ts;
	sigset_t waiting;
	int ms, lfd = listen_on(o->listen);

	server_init(&s, o);
	setup_signals(&waiting);
	d = start(&s, lfd);
	s.pf[0].fd = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD)->epoll_fd;
	s.pf[0].events = POLLIN;
	notify_ready(o->notify_fd);
	while (!stopping) {
		ms = poll_prepare(&s, d, rs_mono_ns());
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (ms % 1000) * MS;
		if (ppoll(s.pf, o->max_conns + 1, ms < 0 ? NULL : &ts,
		    &waiting) < 0 && errno != EINTR)
			rs_fatal(111, "unable to poll: %s", strerror(errno));
		if (stopping)
			break;
		step(&s, rs_mono_ns());
		MHD_run(d);
	}
	MHD_stop_daemon(d);            /* closes lfd, too */
	server_free(&s);
	rs_info(1, "terminating");
	return 0;
}
