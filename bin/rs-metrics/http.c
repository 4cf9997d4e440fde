/* http.c: a small HTTP/1.1 server for three GET endpoints. One thread and
 * poll(2); at most RSM_CONN_MAX connections; each one's head (request line
 * and headers) read into a fixed buffer of RSM_REQ_MAX bytes, parsed
 * strictly (RFC 9112), answered once, and the connection closed: no
 * keep-alive, no body, nothing that grows with the client. A connection
 * has RSM_CONN_TIMEOUT_MS from accept to its last byte.
 *
 * After the answer the sending side is shut and what the client still
 * sends is read and dropped for a moment before the close, so that a
 * close with unread data (a TCP reset) cannot destroy the answer in
 * flight. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "rsm.h"

#define MS 1000000LL
#define DRAIN_MS 1000
#define HEADERS_MAX 100

enum cstate { C_READ, C_WRITE, C_DRAIN };

struct conn {
	int fd;
	enum cstate state;
	int64_t deadline;
	size_t inlen;
	char *out;
	size_t outlen, outoff;
	char in[RSM_REQ_MAX + 1];      /* + 1: room for a NUL past the end */
};

struct req {
	char method[16];
	char *target;
	int minor;                     /* HTTP/1.minor */
};

static struct conn *conns[RSM_CONN_MAX];
static volatile sig_atomic_t stopping;

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

/* tchar of RFC 9110: the characters of a token. */
static int
tchar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *
status_text(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

static void
conn_close(size_t i)
{
	struct conn *c = conns[i];

	close(c->fd);
	free(c->out);
	free(c);
	conns[i] = NULL;
}

/* Queues the whole answer and turns the connection to writing. */
static void
respond(struct conn *c, int code, const char *ctype, const char *body,
    size_t blen, int head_only, const char *extra)
{
	char *h;
	int hl;

	hl = asprintf(&h, "HTTP/1.1 %d %s\r\n"
	    "Content-Type: %s\r\n"
	    "Content-Length: %zu\r\n"
	    "Cache-Control: no-store\r\n"
	    "X-Content-Type-Options: nosniff\r\n"
	    "Connection: close\r\n"
	    "%s\r\n", code, status_text(code), ctype, blen, extra ? extra : "");
	c->state = C_WRITE;
	c->outoff = 0;
	if (hl < 0) {
		c->out = NULL;
		c->outlen = 0;
		return;
	}
	if (!head_only && blen > 0) {
		char *all = realloc(h, (size_t)hl + blen);

		if (all == NULL) {
			free(h);
			c->out = NULL;
			c->outlen = 0;
			return;
		}
		memcpy(all + hl, body, blen);
		h = all;
		hl += (int)blen;
	}
	c->out = h;
	c->outlen = (size_t)hl;
}

static void
respond_text(struct conn *c, int code, const char *text, const char *extra)
{
	respond(c, code, "text/plain; charset=utf-8", text, strlen(text), 0,
	    extra);
}

/* The end of the head: the offset just past its empty line, or 0 when it
 * has not all come yet. Empty lines before the request line are skipped
 * (RFC 9112 2.2), so the search starts after them. */
static size_t
head_end(const char *b, size_t len)
{
	size_t i = 0;

	while (i < len && (b[i] == '\r' || b[i] == '\n'))
		i++;
	for (; i + 1 < len; i++) {
		if (b[i] != '\n')
			continue;
		if (b[i + 1] == '\n')
			return i + 2;
		if (b[i + 1] == '\r' && i + 2 < len && b[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* Cuts the next line at *p (LF or CRLF); NULL at the end. A CR anywhere
 * else is an error (*bad). */
static char *
next_line(char **p, char *end, int *bad)
{
	char *s = *p, *nl;

	if (s >= end)
		return NULL;
	nl = memchr(s, '\n', end - s);
	if (nl == NULL)
		nl = end;
	*p = nl < end ? nl + 1 : end;
	if (nl > s && nl[-1] == '\r')
		nl--;
	*nl = '\0';
	if (strchr(s, '\r'))
		*bad = 1;
	return s;
}

/* method SP request-target SP HTTP-version */
static int
parse_request_line(char *s, struct req *r)
{
	char *sp1, *sp2, *p;
	size_t ml;

	if ((sp1 = strchr(s, ' ')) == NULL ||
	    (sp2 = strchr(sp1 + 1, ' ')) == NULL || strchr(sp2 + 1, ' '))
		return 400;
	ml = (size_t)(sp1 - s);
	if (ml == 0 || ml >= sizeof r->method)
		return 400;
	for (p = s; p < sp1; p++)
		if (!tchar((unsigned char)*p))
			return 400;
	memcpy(r->method, s, ml);
	r->method[ml] = '\0';
	*sp2 = '\0';
	r->target = sp1 + 1;
	if (*r->target == '\0')
		return 400;
	for (p = r->target; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return 400;
	p = sp2 + 1;
	if (strlen(p) != 8 || strncmp(p, "HTTP/", 5) != 0 || p[6] != '.' ||
	    p[5] < '0' || p[5] > '9' || p[7] < '0' || p[7] > '9')
		return 400;
	if (p[5] != '1')
		return 505;
	r->minor = p[7] - '0';
	return 0;
}

/* A Content-Length of zero, the only one a GET or HEAD may carry here. */
static int
zero_length(const char *v)
{
	size_t n = strspn(v, "0");

	return n > 0 && v[n + strspn(v + n, " \t")] == '\0';
}

/* field-name ":" OWS field-value OWS; counts Host and refuses a body. */
static int
parse_header(char *s, int *hosts)
{
	char *colon = strchr(s, ':'), *p;

	if (colon == NULL || colon == s)
		return 400;
	for (p = s; p < colon; p++)
		if (!tchar((unsigned char)*p))
			return 400;   /* includes obs-fold and "name :" */
	for (p = colon + 1; *p; p++)
		if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
			return 400;
	*colon = '\0';
	for (p = colon + 1; *p == ' ' || *p == '\t'; p++)
		;
	if (strcasecmp(s, "Host") == 0)
		(*hosts)++;
	else if (strcasecmp(s, "Transfer-Encoding") == 0)
		return 400;
	else if (strcasecmp(s, "Content-Length") == 0 && !zero_length(p))
		return 400;       /* GET and HEAD carry no body here */
	return 0;
}

static int
parse_head(char *b, size_t len, struct req *r)
{
	char *p = b, *end = b + len, *line;
	int bad = 0, hosts = 0, n = 0, code;

	if (memchr(b, '\0', len))
		return 400;
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	line = next_line(&p, end, &bad);
	if (line == NULL || bad)
		return 400;
	if ((code = parse_request_line(line, r)) != 0)
		return code;
	while ((line = next_line(&p, end, &bad)) != NULL && *line) {
		if (bad || ++n > HEADERS_MAX)
			return n > HEADERS_MAX ? 431 : 400;
		if ((code = parse_header(line, &hosts)) != 0)
			return code;
	}
	if (bad)
		return 400;
	/* HTTP/1.1 wants exactly one Host (RFC 9112 3.2) */
	if (hosts > 1 || (r->minor >= 1 && hosts != 1))
		return 400;
	return 0;
}

/* "verbose" among the query's parameters. */
static int
query_verbose(const char *q)
{
	size_t n;

	while (q && *q) {
		n = strcspn(q, "&");
		if ((n == 7 || (n > 7 && q[7] == '=')) &&
		    strncmp(q, "verbose", 7) == 0)
			return 1;
		q = q[n] ? q + n + 1 : NULL;
	}
	return 0;
}

/* The path of an origin-form or absolute-form target (its query already
 * cut off); NULL if neither. */
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

static void
serve_endpoint(struct conn *c, const struct req *r, const char *path,
    const char *query, const struct rsm_opts *o)
{
	int head_only = strcmp(r->method, "HEAD") == 0;
	int which, ok = 1, code;
	char *body = NULL;
	size_t len = 0;
	FILE *f;

	if (strcmp(path, "/metrics") == 0)
		which = 0;
	else if (strcmp(path, "/healthz") == 0 || strcmp(path, "/livez") == 0)
		which = 1;
	else if (strcmp(path, "/readyz") == 0)
		which = 2;
	else {
		respond_text(c, 404, "404 page not found\n", NULL);
		return;
	}
	if (strcmp(r->method, "GET") != 0 && !head_only) {
		respond_text(c, 405, "405 method not allowed\n",
		    "Allow: GET, HEAD\r\n");
		return;
	}
	if ((f = open_memstream(&body, &len)) == NULL) {
		respond_text(c, 500, "out of memory\n", NULL);
		return;
	}
	if (which == 0)
		rsm_scrape(f, o);
	else
		ok = rsm_health(f, o, which == 2, query_verbose(query));
	if (fclose(f) != 0) {
		free(body);
		respond_text(c, 500, "out of memory\n", NULL);
		return;
	}
	code = ok ? 200 : which == 2 ? 503 : 500;
	respond(c, code, which == 0 ? "text/plain; version=0.0.4; charset=utf-8"
	    : "text/plain; charset=utf-8", body, len, head_only, NULL);
	free(body);
}

static void
handle(struct conn *c, size_t end, const struct rsm_opts *o)
{
	struct req r;
	const char *path;
	char *query;
	int code;

	memset(&r, 0, sizeof r);
	code = parse_head(c->in, end, &r);
	if (code != 0) {
		rs_info(2, "answering %d to a malformed request", code);
		respond_text(c, code, code == 431 ?
		    "request header fields too large\n" : code == 505 ?
		    "HTTP version not supported\n" : "bad request\n", NULL);
		return;
	}
	if ((query = strchr(r.target, '?')) != NULL)
		*query++ = '\0';
	/* a fragment is never sent (RFC 9110 4.2.5) */
	if (strchr(r.target, '#') || (path = target_path(r.target)) == NULL) {
		respond_text(c, 400, "bad request\n", NULL);
		return;
	}
	rs_info(3, "%s %s", r.method, path);
	serve_endpoint(c, &r, path, query, o);
}

static void
start_drain(struct conn *c)
{
	int64_t until = rs_mono_ns() + DRAIN_MS * MS;

	shutdown(c->fd, SHUT_WR);
	c->state = C_DRAIN;
	if (until < c->deadline)
		c->deadline = until;
}

/* Returns 0 when the connection is to be closed. */
static int
on_readable(struct conn *c, const struct rsm_opts *o)
{
	char sink[4096];
	ssize_t n;
	size_t end;

	if (c->state == C_DRAIN) {
		n = read(c->fd, sink, sizeof sink);
		return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
	}
	n = read(c->fd, c->in + c->inlen, RSM_REQ_MAX - c->inlen);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0)
		return 0;           /* gone before its head was whole */
	c->inlen += (size_t)n;
	if ((end = head_end(c->in, c->inlen)) != 0)
		handle(c, end, o);
	else if (c->inlen == RSM_REQ_MAX)
		respond_text(c, 431, "request header fields too large\n",
		    NULL);
	return 1;
}

static int
on_writable(struct conn *c)
{
	ssize_t n;

	if (c->out == NULL)
		return 0;           /* out of memory: nothing to say */
	n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
	    MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	c->outoff += (size_t)n;
	if (c->outoff == c->outlen)
		start_drain(c);
	return 1;
}

static void
on_timeout(size_t i)
{
	struct conn *c = conns[i];

	if (c->state == C_READ && c->inlen > 0) {
		/* one last chance to say why, then gone */
		respond_text(c, 408, "request timeout\n", NULL);
		c->deadline = rs_mono_ns() + DRAIN_MS * MS;
		return;
	}
	conn_close(i);
}

static void
accept_all(int lfd)
{
	struct conn *c;
	size_t i;
	int fd;

	for (i = 0; i < RSM_CONN_MAX; i++) {
		if (conns[i] != NULL)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				rs_warn("unable to accept: %s", strerror(errno));
			return;
		}
		if ((c = calloc(1, sizeof *c)) == NULL) {
			close(fd);
			return;
		}
		c->fd = fd;
		c->state = C_READ;
		c->deadline = rs_mono_ns() + RSM_CONN_TIMEOUT_MS * MS;
		conns[i] = c;
	}
}

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

static void
setup_signals(void)
{
	struct sigaction sa;

	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	/* no SA_RESTART: poll returns EINTR and the loop sees stopping */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

static int
poll_timeout(int64_t now)
{
	int64_t first = -1;
	size_t i;

	for (i = 0; i < RSM_CONN_MAX; i++)
		if (conns[i] && (first < 0 || conns[i]->deadline < first))
			first = conns[i]->deadline;
	if (first < 0)
		return -1;
	return first <= now ? 0 : (int)((first - now + MS - 1) / MS);
}

static void
step(struct pollfd *pf, const struct rsm_opts *o)
{
	int64_t now = rs_mono_ns();
	struct conn *c;
	size_t i;
	int keep;

	for (i = 0; i < RSM_CONN_MAX; i++) {
		if ((c = conns[i]) == NULL)
			continue;
		keep = 1;
		if (pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (c->state == C_WRITE)
				keep = on_writable(c);
			else
				keep = on_readable(c, o);
		} else if (pf[i + 1].revents & POLLOUT) {
			keep = on_writable(c);
		}
		if (!keep)
			conn_close(i);
		else if (now >= c->deadline)
			on_timeout(i);
	}
}

int
rsm_serve(const struct rsm_opts *o)
{
	struct pollfd pf[1 + RSM_CONN_MAX];
	size_t i, n;
	int lfd = listen_on(o->listen);

	setup_signals();
	if (o->notify_fd >= 0) {
		if (write(o->notify_fd, "\n", 1) < 0)
			rs_warn("unable to notify readiness on fd %d: %s",
			    o->notify_fd, strerror(errno));
		close(o->notify_fd);
	}
	while (!stopping) {
		for (i = 0, n = 0; i < RSM_CONN_MAX; i++) {
			pf[i + 1].fd = conns[i] ? conns[i]->fd : -1;
			pf[i + 1].events = conns[i] && conns[i]->state ==
			    C_WRITE ? POLLOUT : POLLIN;
			pf[i + 1].revents = 0;
			n += conns[i] != NULL;
		}
		/* full: new clients wait in the backlog */
		pf[0].fd = n < RSM_CONN_MAX ? lfd : -1;
		pf[0].events = POLLIN;
		pf[0].revents = 0;
		if (poll(pf, 1 + RSM_CONN_MAX, poll_timeout(rs_mono_ns())) < 0) {
			if (errno == EINTR)
				continue;
			rs_fatal(111, "unable to poll: %s", strerror(errno));
		}
		step(pf, o);
		if (pf[0].revents & POLLIN)
			accept_all(lfd);
	}
	for (i = 0; i < RSM_CONN_MAX; i++)
		if (conns[i])
			conn_close(i);
	close(lfd);
	rs_info(1, "terminating");
	return 0;
}
