/* kube_h2.c: the asynchronous requests on HTTP/2 connections of their
 * own, libnghttp2 over OpenSSL, without libcurl: libcurl 7.88 spends
 * 35-80 us of CPU a request more than nghttp2 alone (bench/results/
 * cpu.md, section 7), and rs-apply's writes are most of its CPU.
 *
 * Only what means the same as on libcurl comes here (kube_h2_init): an
 * https server reached without a proxy, a bearer token and/or the
 * kubeconfig's client certificate. A server whose ALPN is not h2, or an
 * exec plugin that hands out a client certificate, turns it off for
 * good: the requests waiting go to libcurl, none of them sent.
 *
 * A request waits here (its token taken, its slot in max_running) until
 * a connection has a stream free: min(streams, the server's
 * SETTINGS_MAX_CONCURRENT_STREAMS) each. When all are full and more
 * wait, another is dialled, only as many as the waiting need; idle ones
 * are kept for the next burst, closed on GOAWAY once their streams end,
 * on an error or at EOF. The gate (rs-apply's fence) is asked right
 * before a request becomes a stream on a connection that is up. A stream
 * the server surely never saw (REFUSED_STREAM, past a GOAWAY, its HEADERS
 * not out when the connection died) waits for another once; any other
 * failure after its HEADERS went out is the caller's (resp.sent = 1):
 * nothing is sent again that the server may have carried out.
 *
 * A blocking stream (rs-watch's watches, kube_perform) goes the same way
 * on a set of connections of its own (kube_h2_stream), which asks no gate.
 *
 * Each pass hands libnghttp2's output (nghttp2_session_mem_send) to one
 * SSL_write, and feeds what SSL_read gives to nghttp2_session_mem_recv.
 * Results and failures are told in libcurl's terms (CURLcode, errbuf) so
 * that kreq_end decodes them as it does libcurl's. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "clock.h"
#include "kube_internal.h"
#include "log.h"

#define H2_READ_BUF   16384
#define H2_OUT_MAX    65536          /* output held before SSL_write */
#define H2_REDIAL_NS  (100 * 1000000LL)
#define H2_WINDOW     (1 << 24)      /* connection receive window */

enum { C_DIAL, C_TLS, C_UP };

struct h2conn {
	struct kh2 *h;
	int fd;
	int state;
	SSL *ssl;
	nghttp2_session *sess;
	struct addrinfo *ai, *ai_next;   /* addresses still to try */
	int64_t deadline;                /* of the dial and handshake */
	int ssl_want;                    /* POLLOUT: SSL waits to write */
	int nstreams;
	int fresh;                       /* no request went on it yet */
	int goaway;
	int dead;                        /* a callback saw it fail */
	unsigned char *out;
	size_t out_len, out_cap;
	struct h2conn *next;
};

/* The server as every set of one client reaches it: made with k->h2,
 * its owner, and freed with it. */
struct h2server {
	SSL_CTX *ctx;
	nghttp2_session_callbacks *cbs;
	char *host, *port;               /* dialled (no brackets) */
	char *authority;                 /* :authority, as libcurl's Host */
	char *vname;                     /* SNI and the certificate's name */
	int vname_ip;
};

struct kh2 {
	struct rs_kube *k;
	struct h2server *srv;            /* k->h2's */
	struct h2conn *conns;
	struct kfifo wait;                    /* no stream yet */
	struct kreq *run_head, *run_tail;     /* all taken, by start */
	struct kfifo done;
	int64_t redial_at;
	int off;                         /* libcurl for good */
};

/* A blocking stream's set (kube_h2_stream's), which asks no gate, not
 * the asynchronous requests' k->h2. */
static int
borrowed(const struct kh2 *h)
{
	return h != h->k->h2;
}

static void
err_say(struct kreq *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->errbuf, sizeof r->errbuf, fmt, ap);
	va_end(ap);
}

static void
run_unlink(struct kh2 *h, struct kreq *r)
{
	if (r->rprev)
		r->rprev->rnext = r->rnext;
	else
		h->run_head = r->rnext;
	if (r->rnext)
		r->rnext->rprev = r->rprev;
	else
		h->run_tail = r->rprev;
	r->rprev = r->rnext = NULL;
}

/* r is out of every list but the running one: it ends with cc. */
static void
finish(struct kh2 *h, struct kreq *r, CURLcode cc, int sent)
{
	run_unlink(h, r);
	r->h2_cc = cc;
	r->h2c = NULL;
	r->resp.http2 = 1;
	if (cc != CURLE_OK)
		r->resp.sent = sent;
	kfifo_push(&h->done, r);
}

/* r's stream surely never reached the server (refused by it, past its
 * GOAWAY, or its HEADERS not out when the connection died): it waits for
 * another stream once, the gate asked again then, as libcurl and
 * client-go send such a request again. Returns 0 when it may not. */
static int
requeue(struct kh2 *h, struct kreq *r)
{
	if (r->h2_again++ > 0 || r->cb_rc != RS_OK)
		return 0;
	r->h2c = NULL;
	r->h2_id = 0;
	r->h2_headers = 0;
	r->resp.code = 0;
	r->retry_after = 0;
	kfifo_push_front(&h->wait, r);
	return 1;
}

/* Out of its stream (a timeout, a drop): libnghttp2 forgets it, the
 * server is told to stop. */
static void
stream_detach(struct kreq *r)
{
	struct h2conn *c = r->h2c;

	if (c == NULL || r->h2_id <= 0)
		return;
	nghttp2_session_set_stream_user_data(c->sess, r->h2_id, NULL);
	nghttp2_submit_rst_stream(c->sess, NGHTTP2_FLAG_NONE, r->h2_id,
	    NGHTTP2_CANCEL);
	c->nstreams--;
	r->h2c = NULL;
}

/* ---- libnghttp2's callbacks: they only note; no connection dies in
 * them. */

static ssize_t
body_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
    uint32_t *flags, nghttp2_data_source *src, void *u)
{
	struct kreq *r = nghttp2_session_get_stream_user_data(s, id);
	size_t left;

	(void)src;
	(void)u;
	if (r == NULL)          /* timed out: its stream is being reset */
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	left = r->body_len - r->body_off;
	if (left > len)
		left = len;
	memcpy(buf, r->body + r->body_off, left);
	r->body_off += left;
	if (r->body_off == r->body_len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)left;
}

static int
on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
    size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *u)
{
	struct kreq *r;
	char buf[32];
	long code;

	(void)flags;
	(void)u;
	if (f->hd.type != NGHTTP2_HEADERS ||
	    (r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id)) ==
	    NULL)
		return 0;
	if (nlen == 12 && memcmp(name, "content-type", 12) == 0) {
		snprintf(r->h2_ctype, sizeof r->h2_ctype, "%.*s", (int)vlen,
		    (const char *)value);
		return 0;
	}
	if (vlen >= sizeof buf)
		return 0;
	memcpy(buf, value, vlen);
	buf[vlen] = '\0';
	if (nlen == 7 && memcmp(name, ":status", 7) == 0) {
		code = atol(buf);
		if (code >= 200)        /* not an interim 1xx */
			r->resp.code = code;
	} else if (nlen == 11 && memcmp(name, "retry-after", 11) == 0) {
		r->retry_after = atoi(buf);
	}
	return 0;
}

static int
on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *p,
    size_t len, void *u)
{
	struct kreq *r = nghttp2_session_get_stream_user_data(s, id);

	(void)flags;
	(void)u;
	if (r == NULL || r->cb_rc != RS_OK)
		return 0;
	kreq_data(r, r->resp.code, (const char *)p, len);
	if (r->cb_rc != RS_OK)
		nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id,
		    NGHTTP2_CANCEL);
	return 0;
}

static int
on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
	struct kreq *r;

	(void)u;
	if (f->hd.type == NGHTTP2_HEADERS &&
	    (r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id)))
		r->h2_headers = 1;
	return 0;
}

static int
on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
	struct h2conn *c = u;

	(void)s;
	if (f->hd.type != NGHTTP2_GOAWAY)
		return 0;
	c->goaway = 1;
	rs_info(4, "HTTP/2 connection to %s: GOAWAY (%s, last stream %d): "
	    "no new request goes on it", c->h->k->cfg->server,
	    nghttp2_http2_strerror(f->goaway.error_code),
	    f->goaway.last_stream_id);
	return 0;
}

/* A stream's end. REFUSED_STREAM is also how libnghttp2 closes the
 * streams past a GOAWAY's last stream: the server never saw them. */
static int
on_close(nghttp2_session *s, int32_t id, uint32_t err, void *u)
{
	struct h2conn *c = u;
	struct kreq *r = nghttp2_session_get_stream_user_data(s, id);

	if (r == NULL)
		return 0;
	nghttp2_session_set_stream_user_data(s, id, NULL);
	c->nstreams--;
	if (r->cb_rc != RS_OK) {
		finish(c->h, r, CURLE_WRITE_ERROR, 1);
	} else if (err == NGHTTP2_NO_ERROR && r->resp.code > 0) {
		finish(c->h, r, CURLE_OK, 1);
	} else if (err == NGHTTP2_REFUSED_STREAM && requeue(c->h, r)) {
		rs_info(4, "%s %s: stream refused by the server, sent again",
		    r->method, r->path);
	} else if (err == NGHTTP2_REFUSED_STREAM) {
		err_say(r, "the server refused the stream (REFUSED_STREAM or "
		    "past its GOAWAY)");
		finish(c->h, r, CURLE_HTTP2_STREAM, 0);
	} else {
		err_say(r, "HTTP/2 stream %d was not closed cleanly: %s", id,
		    nghttp2_http2_strerror(err));
		finish(c->h, r, CURLE_HTTP2_STREAM, r->h2_headers);
	}
	return 0;
}

/* ---- connections */

static int
conn_alive(const struct h2conn *c)
{
	return !c->dead && !c->goaway;
}

static void
conn_free(struct h2conn *c)
{
	if (c->sess)
		nghttp2_session_del(c->sess);
	if (c->ssl)
		SSL_free(c->ssl);
	if (c->fd >= 0)
		close(c->fd);
	if (c->ai)
		freeaddrinfo(c->ai);
	free(c->out);
	free(c);
}

static void
conn_unlink(struct kh2 *h, struct h2conn *c)
{
	struct h2conn **pp;

	for (pp = &h->conns; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = c->next;
}

/* A blocking stream (a GET) that no answer has come to yet may go again on
 * another connection, as libcurl sends a request again when the reused
 * connection it went on dies first: a kept connection the server closed
 * while idle, seen only once a watch went on it. */
static int
unanswered_stream(const struct kreq *r)
{
	return r->fn != NULL && !r->async && r->resp.code == 0;
}

/* c failed (cc, why): its streams end, sent as far as their HEADERS went;
 * a connection that never came up fails the waiting requests too, unless
 * another may still carry them. */
static void
conn_die(struct h2conn *c, CURLcode cc, const char *why)
{
	struct kh2 *h = c->h;
	struct h2conn *o;
	struct kreq *r, *nx;
	int up = c->state == C_UP, other = 0;

	conn_unlink(h, c);
	for (r = h->run_head; r; r = nx) {
		nx = r->rnext;
		if (r->h2c != c)
			continue;
		if (c->sess && r->h2_id > 0)
			nghttp2_session_set_stream_user_data(c->sess,
			    r->h2_id, NULL);
		if ((!r->h2_headers || unanswered_stream(r)) &&
		    requeue(h, r))
			continue;
		snprintf(r->errbuf, sizeof r->errbuf, "%s", why);
		finish(h, r, cc, r->h2_headers);
	}
	for (o = h->conns; o; o = o->next)
		other |= conn_alive(o);
	if (!up && !other) {
		while ((r = kfifo_pop(&h->wait)) != NULL) {
			snprintf(r->errbuf, sizeof r->errbuf, "%s", why);
			finish(h, r, cc, 0);
		}
	}
	/* a dial that failed while others carry the rest: the next one
	 * waits a little, not at once and again */
	if (!up && other)
		h->redial_at = rs_mono_ns() + H2_REDIAL_NS;
	rs_info(4, "HTTP/2 connection to %s closed: %s", h->k->cfg->server,
	    why);
	conn_free(c);
}

static void
ssl_why(char *buf, size_t len, const char *what)
{
	unsigned long e = ERR_get_error();
	char es[256];

	if (e == 0)
		snprintf(buf, len, "%s: %s", what, errno ? strerror(errno) :
		    "connection closed");
	else {
		ERR_error_string_n(e, es, sizeof es);
		snprintf(buf, len, "%s: %s", what, es);
	}
	ERR_clear_error();
}

/* Takes what libnghttp2 has to send, up to H2_OUT_MAX. Returns 0, or -1
 * with c gone. */
static int
conn_take(struct h2conn *c)
{
	const uint8_t *d;
	ssize_t n;
	unsigned char *nb;
	size_t ncap;
	char why[300];

	while (c->out_len < H2_OUT_MAX &&
	    (n = nghttp2_session_mem_send(c->sess, &d)) != 0) {
		if (n < 0) {
			snprintf(why, sizeof why, "HTTP/2 error: %s",
			    nghttp2_strerror((int)n));
			conn_die(c, CURLE_HTTP2, why);
			return -1;
		}
		if (c->out_len + (size_t)n > c->out_cap) {
			ncap = c->out_cap ? c->out_cap : 16384;
			while (ncap < c->out_len + (size_t)n)
				ncap *= 2;
			if ((nb = realloc(c->out, ncap)) == NULL) {
				conn_die(c, CURLE_OUT_OF_MEMORY,
				    "out of memory");
				return -1;
			}
			c->out = nb;
			c->out_cap = ncap;
		}
		memcpy(c->out + c->out_len, d, (size_t)n);
		c->out_len += (size_t)n;
	}
	return 0;
}

/* What libnghttp2 has to send, in one SSL_write a pass (more only past
 * H2_OUT_MAX). Returns 0, or -1 with c gone. */
static int
conn_send(struct h2conn *c)
{
	char why[300];
	int n, e;

	for (;;) {
		if (conn_take(c) < 0)
			return -1;
		c->ssl_want = 0;
		if (c->out_len == 0)
			return 0;
		ERR_clear_error();
		errno = 0;
		n = SSL_write(c->ssl, c->out, (int)c->out_len);
		if (n > 0) {
			memmove(c->out, c->out + n, c->out_len - (size_t)n);
			c->out_len -= (size_t)n;
			continue;
		}
		e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
			c->ssl_want = e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
			return 0;
		}
		ssl_why(why, sizeof why, "send failure");
		conn_die(c, CURLE_SEND_ERROR, why);
		return -1;
	}
}

/* The server closed TCP without TLS's close_notify, as a stopping API
 * server does: OpenSSL 3 calls it an error of its own. */
static int
closed_unannounced(int e)
{
	if (e == SSL_ERROR_SYSCALL)
		return ERR_peek_error() == 0 && errno == 0;
	return e == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) ==
	    SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

/* Reads all there is. Returns 0, or -1 with c gone. */
static int
conn_recv(struct h2conn *c)
{
	unsigned char buf[H2_READ_BUF];
	char why[300];
	ssize_t rv;
	int n, e;

	for (;;) {
		ERR_clear_error();
		errno = 0;
		n = SSL_read(c->ssl, buf, sizeof buf);
		if (n > 0) {
			rv = nghttp2_session_mem_recv(c->sess, buf, (size_t)n);
			if (rv < 0) {
				snprintf(why, sizeof why, "HTTP/2 error: %s",
				    nghttp2_strerror((int)rv));
				conn_die(c, CURLE_HTTP2, why);
				return -1;
			}
			continue;
		}
		e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_READ)
			return 0;
		if (e == SSL_ERROR_WANT_WRITE) {
			c->ssl_want = POLLOUT;
			return 0;
		}
		if (e == SSL_ERROR_ZERO_RETURN || closed_unannounced(e)) {
			ERR_clear_error();
			snprintf(why, sizeof why, "connection closed by the "
			    "server");
		} else
			ssl_why(why, sizeof why, "receive failure");
		conn_die(c, CURLE_RECV_ERROR, why);
		return -1;
	}
}

/* A write's answer is a few KiB; a watch's stream may carry a list of
 * 100,000 objects, read as it comes: its window is the connection's. */
static void
conn_settings(struct h2conn *c)
{
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
		    borrowed(c->h) ? H2_WINDOW : 1 << 20 },
	};

	nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv,
	    sizeof iv / sizeof iv[0]);
	nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0,
	    H2_WINDOW);
}

static void fall_back(struct kh2 *h, const char *why);

/* The TLS handshake, a step. Returns 0, or -1 with c gone. */
static int
conn_tls(struct h2conn *c)
{
	struct kh2 *h = c->h;
	const unsigned char *alpn = NULL;
	unsigned alen = 0;
	long vr;
	char why[400];
	int n, e;

	ERR_clear_error();
	errno = 0;
	n = SSL_do_handshake(c->ssl);
	if (n != 1) {
		e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			c->ssl_want = e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
			return 0;
		}
		vr = SSL_get_verify_result(c->ssl);
		if (ERR_GET_REASON(ERR_peek_error()) ==
		    SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL) {
			/* a server that refuses h2 by an alert rather
			 * than by its choice */
			ERR_clear_error();
			fall_back(h, "the server does not offer HTTP/2 (ALPN)");
			conn_die(c, CURLE_HTTP2, "the server does not offer "
			    "HTTP/2");
		} else if (vr != X509_V_OK) {
			ERR_clear_error();
			snprintf(why, sizeof why, "SSL certificate problem: %s",
			    X509_verify_cert_error_string(vr));
			conn_die(c, CURLE_PEER_FAILED_VERIFICATION, why);
		} else {
			ssl_why(why, sizeof why, "TLS handshake");
			conn_die(c, CURLE_SSL_CONNECT_ERROR, why);
		}
		return -1;
	}
	SSL_get0_alpn_selected(c->ssl, &alpn, &alen);
	if (alen != 2 || memcmp(alpn, "h2", 2) != 0) {
		/* before any request went on it: they all go to libcurl */
		fall_back(h, "the server does not offer HTTP/2 (ALPN)");
		conn_die(c, CURLE_HTTP2, "the server does not offer HTTP/2");
		return -1;
	}
	if (nghttp2_session_client_new(&c->sess, h->srv->cbs, c) != 0) {
		conn_die(c, CURLE_OUT_OF_MEMORY, "out of memory");
		return -1;
	}
	conn_settings(c);
	c->state = C_UP;
	c->ssl_want = 0;
	rs_info(4, "HTTP/2 connection to %s up", h->k->cfg->server);
	return conn_send(c);
}

static int
sock_opts(int fd)
{
	int one = 1, idle = 30;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof idle);
	return 0;
}

/* Starts a connect to the next address. Returns 0, or -1 with c gone. */
static int
conn_connect(struct h2conn *c)
{
	struct addrinfo *a;
	char why[300];
	int err = 0;

	while ((a = c->ai_next) != NULL) {
		c->ai_next = a->ai_next;
		if (c->fd >= 0)
			close(c->fd);
		c->fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, a->ai_protocol);
		if (c->fd < 0) {
			err = errno;
			continue;
		}
		sock_opts(c->fd);
		if (connect(c->fd, a->ai_addr, a->ai_addrlen) == 0 ||
		    errno == EINPROGRESS)
			return 0;
		err = errno;
	}
	snprintf(why, sizeof why, "Failed to connect to %s port %s: %s",
	    c->h->srv->host, c->h->srv->port,
	    strerror(err ? err : ECONNREFUSED));
	conn_die(c, CURLE_COULDNT_CONNECT, why);
	return -1;
}

static int
conn_ssl(struct h2conn *c)
{
	const struct h2server *s = c->h->srv;
	X509_VERIFY_PARAM *vp;

	c->ssl = SSL_new(s->ctx);
	if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1)
		return -1;
	SSL_set_connect_state(c->ssl);
	if (!s->vname_ip &&
	    SSL_set_tlsext_host_name(c->ssl, s->vname) != 1)
		return -1;
	if (c->h->k->cfg->insecure)
		return 0;
	vp = SSL_get0_param(c->ssl);
	X509_VERIFY_PARAM_set_hostflags(vp,
	    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	return (s->vname_ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, s->vname) :
	    X509_VERIFY_PARAM_set1_host(vp, s->vname, 0)) == 1 ? 0 : -1;
}

/* The TCP connect ended (writable or an error). */
static int
conn_connected(struct h2conn *c)
{
	int err = 0;
	socklen_t el = sizeof err;

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		err = errno;
	if (err == EINPROGRESS || err == EALREADY)
		return 0;
	if (err != 0) {
		/* the next address, or the failure */
		if (c->ai_next == NULL) {
			char why[300];

			snprintf(why, sizeof why, "Failed to connect to %s "
			    "port %s: %s", c->h->srv->host, c->h->srv->port,
			    strerror(err));
			conn_die(c, CURLE_COULDNT_CONNECT, why);
			return -1;
		}
		return conn_connect(c);
	}
	if (conn_ssl(c) < 0) {
		conn_die(c, CURLE_SSL_CONNECT_ERROR, "unable to set up TLS");
		return -1;
	}
	c->state = C_TLS;
	return conn_tls(c);
}

/* A new connection; getaddrinfo(3) blocks here, at dial time, as it
 * would in libcurl's threaded resolver's caller waiting for it: the API
 * server is most often an address, or a name in /etc/hosts. */
static void
conn_dial(struct kh2 *h, int64_t now)
{
	struct addrinfo hints, *ai = NULL;
	struct h2conn *c;
	char why[300];
	int e;

	c = calloc(1, sizeof *c);
	if (c == NULL)
		return;
	c->h = h;
	c->fd = -1;
	c->fresh = 1;
	c->deadline = now + (int64_t)h->k->connect_ms * 1000000;
	c->next = h->conns;
	h->conns = c;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((e = getaddrinfo(h->srv->host, h->srv->port, &hints, &ai)) != 0) {
		snprintf(why, sizeof why, "Could not resolve host: %s (%s)",
		    h->srv->host, gai_strerror(e));
		conn_die(c, CURLE_COULDNT_RESOLVE_HOST, why);
		return;
	}
	c->ai = c->ai_next = ai;
	rs_info(4, "HTTP/2: dialling %s port %s", h->srv->host, h->srv->port);
	conn_connect(c);
}

/* ---- requests onto streams */

static int
is_upload(const struct kreq *r)
{
	return r->body != NULL || strcmp(r->method, "POST") == 0 ||
	    strcmp(r->method, "PUT") == 0 || strcmp(r->method, "PATCH") == 0;
}

#define NV(n, v, l, f) do { \
	nv[nn].name = (uint8_t *)(n); nv[nn].namelen = strlen(n); \
	nv[nn].value = (uint8_t *)(v); nv[nn].valuelen = (l); \
	nv[nn].flags = (f); nn++; \
} while (0)

/* r becomes a stream of c. Returns 0, or -1 (r not taken). */
static int
stream_open(struct h2conn *c, struct kreq *r)
{
	struct kh2 *h = c->h;
	nghttp2_nv nv[10];
	nghttp2_data_provider prd = { { .ptr = NULL }, body_read };
	char len[32], *auth = NULL;
	int nn = 0;
	int32_t id;

	NV(":method", r->method, strlen(r->method), 0);
	NV(":path", r->path, strlen(r->path), 0);
	NV(":scheme", "https", 5, 0);
	NV(":authority", h->srv->authority, strlen(h->srv->authority), 0);
	NV("user-agent", h->k->user_agent, strlen(h->k->user_agent), 0);
	NV("accept", r->accept, strlen(r->accept), 0);
	if (is_upload(r)) {
		snprintf(len, sizeof len, "%zu", r->body ? r->body_len : 0);
		NV("content-type", r->ctype, strlen(r->ctype), 0);
		NV("content-length", len, strlen(len), 0);
	}
	if (r->cred.token) {
		if (asprintf(&auth, "Bearer %s", r->cred.token) < 0)
			return -1;
		/* never in the server's HPACK table */
		NV("authorization", auth, strlen(auth),
		    NGHTTP2_NV_FLAG_NO_INDEX);
	}
	r->body_off = 0;
	id = nghttp2_submit_request(c->sess, NULL, nv, (size_t)nn,
	    r->body && r->body_len > 0 ? &prd : NULL, r);
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	if (id < 0)
		return -1;
	r->h2_id = id;
	r->h2c = c;
	r->resp.connects = c->fresh;
	c->fresh = 0;
	c->nstreams++;
	return 0;
}

static long
conn_room(const struct h2conn *c)
{
	uint32_t srv;
	long cap = c->h->k->streams;

	if (c->state != C_UP || !conn_alive(c))
		return 0;
	srv = nghttp2_session_get_remote_settings(c->sess,
	    NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
	if ((long)srv < cap)
		cap = (long)srv;
	return cap - c->nstreams;
}

/* Gives waiting requests the free streams of c, the gate asked for each
 * as it leaves; then sends. Returns 0, or -1 with c gone. */
static int
conn_fill(struct h2conn *c)
{
	struct kh2 *h = c->h;
	struct rs_kube *k = h->k;
	struct kreq *r;
	long room = conn_room(c);

	while (room > 0 && (r = kfifo_pop(&h->wait)) != NULL) {
		if (!borrowed(h) && k->gate && !k->gate(k->gate_arg, r->method,
		    r->path, r->resp.status.message,
		    sizeof r->resp.status.message)) {
			r->cb_rc = RS_EREFUSED;
			finish(h, r, CURLE_ABORTED_BY_CALLBACK, 0);
			continue;
		}
		if (stream_open(c, r) < 0) {
			err_say(r, "unable to open an HTTP/2 stream");
			finish(h, r, CURLE_HTTP2, 0);
			continue;
		}
		room--;
	}
	return conn_send(c);
}

/* ---- the interface kube_multi.c drives */

static void
fall_back(struct kh2 *h, const char *why)
{
	struct kreq *r;

	if (h->off)
		return;
	h->off = 1;
	if (borrowed(h)) {      /* kube_h2_stream's: for every thread's */
		__atomic_store_n(&h->k->h2_streams_off, 1, __ATOMIC_RELAXED);
		rs_info(1, "API streams to %s on libcurl from now on: %s",
		    h->k->cfg->server, why);
	} else {
		rs_info(1, "API requests to %s on libcurl from now on: %s",
		    h->k->cfg->server, why);
	}
	while ((r = kfifo_pop(&h->wait)) != NULL) {
		r->h2_curl = 1;
		finish(h, r, CURLE_OK, 0);
	}
}

int
kube_h2_takes(struct rs_kube *k, const struct kreq *r)
{
	return k->h2 != NULL && !k->h2->off && r->fn == NULL;
}

static rs_code
h2_start(struct kh2 *h, struct kreq *r)
{
	rs_code rc;

	rc = kreq_cred(r);
	if (rc != RS_OK)
		return rc;
	if (r->cred.cert) {
		fall_back(h, "the exec plugin gives a client certificate");
		return RS_EAGAIN;
	}
	r->h2c = NULL;
	r->h2_id = 0;
	r->h2_headers = 0;
	r->h2_curl = 0;
	r->h2_again = 0;
	r->h2_ctype[0] = '\0';
	kfifo_push(&h->wait, r);
	r->rnext = NULL;
	r->rprev = h->run_tail;
	if (h->run_tail)
		h->run_tail->rnext = r;
	else
		h->run_head = r;
	h->run_tail = r;
	return RS_OK;
}

rs_code
kube_h2_start(struct rs_kube *k, struct kreq *r)
{
	rs_code rc = h2_start(k->h2, r);

	if (rc == RS_OK)
		k->nrunning++;
	return rc;
}

static void
timeouts(struct kh2 *h, int64_t now)
{
	struct h2conn *c, *nx;
	struct kreq *r;
	char why[128];

	/* started in order, with one timeout: the first is the oldest */
	while ((r = h->run_head) != NULL && r->timeout_ms > 0 &&
	    r->start_ns + (int64_t)r->timeout_ms * 1000000 <= now) {
		err_say(r, "Operation timed out after %ld milliseconds",
		    r->timeout_ms);
		if ((c = r->h2c) != NULL) {
			stream_detach(r);
			finish(h, r, CURLE_OPERATION_TIMEDOUT, r->h2_headers);
			conn_send(c);   /* the RST_STREAM */
		} else {
			kfifo_remove(&h->wait, r);
			finish(h, r, CURLE_OPERATION_TIMEDOUT, 0);
		}
	}
	for (c = h->conns; c; c = nx) {
		nx = c->next;
		if (c->state != C_UP && c->deadline <= now) {
			snprintf(why, sizeof why, "Connection timed out after "
			    "%ld milliseconds", h->k->connect_ms);
			conn_die(c, CURLE_OPERATION_TIMEDOUT, why);
		}
	}
}

/* Closes what is done with: a connection past a GOAWAY (or whose session
 * ended) once its streams are over. */
static void
reap_conns(struct kh2 *h)
{
	struct h2conn *c, *nx;

	for (c = h->conns; c; c = nx) {
		nx = c->next;
		if (c->state == C_UP && c->nstreams <= 0 && c->out_len == 0 &&
		    (c->goaway || (!nghttp2_session_want_read(c->sess) &&
		    !nghttp2_session_want_write(c->sess)))) {
			conn_unlink(h, c);
			rs_info(4, "HTTP/2 connection to %s closed after its "
			    "GOAWAY", h->k->cfg->server);
			conn_free(c);
		}
	}
}

static void
h2_pump(struct kh2 *h, int64_t now)
{
	struct h2conn *c, *nx;
	long dialling;

	timeouts(h, now);
	for (c = h->conns; c && h->wait.n > 0; c = nx) {
		nx = c->next;
		if (conn_room(c) > 0)
			conn_fill(c);
	}
	reap_conns(h);
	if (h->wait.n == 0 || h->off || now < h->redial_at)
		return;
	/* as many connections as the waiting need */
	dialling = 0;
	for (c = h->conns; c; c = c->next)
		if (c->state != C_UP)
			dialling++;
	while (h->wait.n > dialling * h->k->streams && h->redial_at <= now) {
		conn_dial(h, now);
		dialling++;
	}
}

void
kube_h2_pump(struct rs_kube *k, int64_t now)
{
	if (k->h2)
		h2_pump(k->h2, now);
}

static int
h2_fds(struct kh2 *h, struct pollfd *p, int max)
{
	struct h2conn *c;
	int n = 0;

	for (c = h->conns; c; c = c->next) {
		if (c->fd < 0)
			continue;
		if (n < max) {
			p[n].fd = c->fd;
			p[n].events = c->state == C_DIAL ? POLLOUT :
			    POLLIN | c->ssl_want |
			    (c->state == C_UP && c->out_len > 0 ? POLLOUT : 0);
			p[n].revents = 0;
		}
		n++;
	}
	return n;
}

int
kube_h2_fds(struct rs_kube *k, struct pollfd *p, int max)
{
	return k->h2 ? h2_fds(k->h2, p, max) : 0;
}

static void
conn_ready(struct h2conn *c, short ev)
{
	switch (c->state) {
	case C_DIAL:
		conn_connected(c);
		return;
	case C_TLS:
		conn_tls(c);
		return;
	}
	if ((ev & (POLLIN | POLLHUP | POLLERR)) || c->ssl_want) {
		if (conn_recv(c) < 0)
			return;
	}
	conn_fill(c);
}

static void
h2_ready(struct kh2 *h, const struct pollfd *p, int n)
{
	struct h2conn *c, *nx;
	int i;

	/* the connections as h2_fds listed them: none came or went since */
	for (c = h->conns, i = 0; c && i < n; c = nx) {
		nx = c->next;
		if (c->fd < 0)
			continue;
		if (p[i].fd == c->fd && p[i].revents != 0)
			conn_ready(c, p[i].revents);
		i++;
	}
	h2_pump(h, rs_mono_ns());
}

void
kube_h2_ready(struct rs_kube *k, const struct pollfd *p, int n)
{
	if (k->h2)
		h2_ready(k->h2, p, n);
}

static int64_t
h2_next(struct kh2 *h)
{
	struct h2conn *c;
	struct kreq *r;
	int64_t t = -1, d;

	if ((r = h->run_head) != NULL && r->timeout_ms > 0)
		t = r->start_ns + (int64_t)r->timeout_ms * 1000000;
	for (c = h->conns; c; c = c->next)
		if (c->state != C_UP && (t < 0 || c->deadline < t))
			t = c->deadline;
	/* past, it holds nothing back: a poll that ends at once would spin */
	if (h->wait.n > 0 && !h->off && (d = h->redial_at) > rs_mono_ns() &&
	    (t < 0 || d < t))
		t = d;
	return t;
}

int64_t
kube_h2_next(struct rs_kube *k)
{
	return k->h2 ? h2_next(k->h2) : -1;
}

struct kreq *
kube_h2_done(struct rs_kube *k)
{
	struct kh2 *h = k->h2;

	return h == NULL ? NULL : kfifo_pop(&h->done);
}

void
kube_h2_drop(struct rs_kube *k)
{
	struct kh2 *h = k->h2;
	struct kreq *r;

	if (h == NULL)
		return;
	while ((r = kfifo_pop(&h->wait)) != NULL)
		finish(h, r, CURLE_ABORTED_BY_CALLBACK, 0);
	while ((r = h->run_head) != NULL) {
		stream_detach(r);
		finish(h, r, CURLE_ABORTED_BY_CALLBACK, r->h2_headers);
	}
}

/* ---- a blocking stream (rs-watch's watches) on a connection of its
 * caller's own: kube_perform's slot keeps it between calls, one thread at
 * a time, as libcurl's slot keeps its connection. Such a connection asks
 * no gate (a write's fence is the asynchronous requests'). */

#define H2_BLOCK_FDS 8

static struct kh2 *
h2_borrow(const struct kh2 *o)
{
	struct kh2 *h = calloc(1, sizeof *h);

	if (h == NULL)
		return NULL;
	h->k = o->k;
	h->srv = o->srv;
	return h;
}

/* Waits at most ms for h's connections, and works on what came. */
static void
h2_poll(struct kh2 *h, int ms)
{
	struct pollfd p[H2_BLOCK_FDS];
	int n = h2_fds(h, p, H2_BLOCK_FDS);

	if (n > H2_BLOCK_FDS)
		n = H2_BLOCK_FDS;
	if (poll(p, (nfds_t)n, ms) > 0)
		h2_ready(h, p, n);
}

/* r, stopped by its caller, leaves every list; its stream is reset. */
static void
h2_cancel(struct kh2 *h, struct kreq *r)
{
	struct h2conn *c = r->h2c;

	if (c != NULL) {
		stream_detach(r);
		conn_send(c);
	} else {
		kfifo_remove(&h->wait, r);
	}
	run_unlink(h, r);
}

/* The poll's timeout: the next deadline, and at most 100 ms when r->stop
 * is to be looked at (as libcurl's slot does), else a second. */
static int
h2_wait_ms(struct kh2 *h, const struct kreq *r, int64_t now)
{
	int64_t t = h2_next(h), ms = r->stop ? 100 : 1000;

	if (t >= 0 && t - now < ms * 1000000)
		ms = t <= now ? 0 : (t - now) / 1000000 + 1;
	return (int)ms;
}

int
kube_h2_streams(const struct rs_kube *k, const struct kreq *r)
{
	return k->h2 != NULL && r->fn != NULL && !r->async &&
	    !__atomic_load_n(&k->h2_streams_off, __ATOMIC_RELAXED);
}

rs_code
kube_h2_stream(struct rs_kube *k, struct kh2 **hp, struct kreq *r,
    int *stopped)
{
	struct kh2 *h = *hp;
	unsigned long lines;
	int64_t now;
	rs_code rc;

	*stopped = 0;
	r->h2_curl = 1;
	if (h == NULL && (h = *hp = h2_borrow(k->h2)) == NULL)
		return RS_OK;
	/* what came on its connections while no stream was on them (a
	 * GOAWAY, a close, a PING, a handshake's end) first */
	h2_poll(h, 0);
	if (h->off)
		return RS_OK;
	r->h2_curl = 0;
	if ((rc = h2_start(h, r)) != RS_OK) {
		if (rc == RS_EAGAIN)
			r->h2_curl = 1;
		return rc == RS_EAGAIN ? RS_OK : rc;
	}
	for (;;) {
		now = rs_mono_ns();
		h2_pump(h, now);
		if (kfifo_pop(&h->done) != NULL)   /* r: the only one */
			return RS_OK;
		if (r->stop && *r->stop) {
			h2_cancel(h, r);
			*stopped = 1;
			return RS_OK;
		}
		lines = r->lines;
		h2_poll(h, h2_wait_ms(h, r, now));
		if (r->batch && r->lines != lines)
			kreq_batch_idle(r, r->h2c != NULL);
	}
}

/* ---- setup */

/* Why libcurl must carry the requests, or NULL. */
static const char *
not_direct(const struct rs_kube_config *c)
{
	static const char *const env[] = { "https_proxy", "HTTPS_PROXY",
	    "all_proxy", "ALL_PROXY" };
	const char *v;
	size_t i;

	if (strncasecmp(c->server, "https://", 8) != 0)
		return "the server is not https";
	if (c->proxy_url)
		return "the kubeconfig names a proxy";
	/* libcurl honours them (unless no_proxy names the host): any set
	 * at all, and libcurl decides */
	for (i = 0; i < sizeof env / sizeof env[0]; i++)
		if ((v = getenv(env[i])) != NULL && v[0] != '\0')
			return "a proxy is set in the environment";
	if (c->username || c->password)
		return "basic authentication";
	return NULL;
}

static int
ca_load(SSL_CTX *ctx, const struct rs_kube_config *c)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	X509 *x;
	BIO *b;
	int n = 0;

	if (c->ca_data == NULL)
		return c->ca_file ? SSL_CTX_load_verify_locations(ctx,
		    c->ca_file, NULL) == 1 : SSL_CTX_set_default_verify_paths(
		    ctx) == 1;
	/* only the cluster's CA, as client-go */
	b = BIO_new_mem_buf(c->ca_data, (int)c->ca_data_len);
	if (b == NULL)
		return 0;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		n += X509_STORE_add_cert(st, x) == 1;
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(b);
	return n > 0;
}

static int
cert_load(SSL_CTX *ctx, const struct rs_kube_config *c)
{
	EVP_PKEY *key;
	X509 *x;
	BIO *b;
	int ok;

	if (c->cert_data == NULL)
		return c->cert_file == NULL ||
		    (SSL_CTX_use_certificate_chain_file(ctx, c->cert_file) ==
		    1 && SSL_CTX_use_PrivateKey_file(ctx, c->key_file ?
		    c->key_file : c->cert_file, SSL_FILETYPE_PEM) == 1);
	if ((b = BIO_new_mem_buf(c->cert_data, (int)c->cert_data_len)) ==
	    NULL)
		return 0;
	ok = (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL &&
	    SSL_CTX_use_certificate(ctx, x) == 1;
	X509_free(x);
	/* the rest of the chain */
	while (ok && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
			X509_free(x);
			ok = 0;
		}
	BIO_free(b);
	ERR_clear_error();
	if (!ok || c->key_data == NULL ||
	    (b = BIO_new_mem_buf(c->key_data, (int)c->key_data_len)) == NULL)
		return 0;
	key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	ok = key != NULL && SSL_CTX_use_PrivateKey(ctx, key) == 1;
	EVP_PKEY_free(key);
	BIO_free(b);
	return ok && SSL_CTX_check_private_key(ctx) == 1;
}

static SSL_CTX *
ctx_new(const struct rs_kube_config *c, const char **why)
{
	static const unsigned char alpn[] = "\x02h2";
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	*why = "unable to set up TLS";
	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1) != 0)
		goto fail;
	if (c->insecure) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		*why = "unable to load the CA certificate";
		if (!ca_load(ctx, c))
			goto fail;
	}
	*why = "unable to load the client certificate";
	if (!cert_load(ctx, c))
		goto fail;
	return ctx;
fail:
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return NULL;
}

static char *
unbracket(const char *s)
{
	size_t n = strlen(s);

	if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
		return strndup(s + 1, n - 2);
	return strdup(s);
}

static int
is_ip(const char *s)
{
	unsigned char b[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* Where to dial, what to call the server (:authority, as kube_endpoint's
 * Host), and the name its certificate must have (tls-server-name, else
 * the host). */
static int
names(struct h2server *s, const struct rs_kube_config *c)
{
	char *host = NULL, *port = NULL, *eport = NULL;
	CURLU *u = curl_url();
	int ok = 0;

	if (u == NULL)
		return 0;
	if (curl_url_set(u, CURLUPART_URL, c->server, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) !=
	    CURLUE_OK)
		goto out;
	if (curl_url_get(u, CURLUPART_PORT, &eport, 0) != CURLUE_OK)
		eport = NULL;
	s->host = unbracket(host);
	s->port = strdup(port);
	if (asprintf(&s->authority, "%s%s%s", host, eport ? ":" : "",
	    eport ? eport : "") < 0)
		s->authority = NULL;
	s->vname = unbracket(c->tls_server_name ? c->tls_server_name : host);
	ok = s->host && s->port && s->authority && s->vname;
	if (ok)
		s->vname_ip = is_ip(s->vname);
out:
	curl_free(host);
	curl_free(port);
	curl_free(eport);
	curl_url_cleanup(u);
	return ok;
}

static nghttp2_session_callbacks *
callbacks(void)
{
	nghttp2_session_callbacks *cb;

	if (nghttp2_session_callbacks_new(&cb) != 0)
		return NULL;
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb,
	    on_data);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb,
	    on_frame_send);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb,
	    on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	return cb;
}

static void
server_free(struct h2server *s)
{
	if (s == NULL)
		return;
	if (s->cbs)
		nghttp2_session_callbacks_del(s->cbs);
	SSL_CTX_free(s->ctx);
	free(s->host);
	free(s->port);
	free(s->authority);
	free(s->vname);
	free(s);
}

static struct h2server *
server_new(const struct rs_kube_config *c, const char **why)
{
	struct h2server *s = calloc(1, sizeof *s);

	*why = "out of memory";
	if (s != NULL && names(s, c) && (s->cbs = callbacks()) != NULL &&
	    (s->ctx = ctx_new(c, why)) != NULL)
		return s;
	server_free(s);
	return NULL;
}

void
kube_h2_init(struct rs_kube *k, const struct rs_kube_opts *o)
{
	const struct rs_kube_config *c = k->cfg;
	const char *why;
	struct kh2 *h;

	if (o == NULL || o->http_client != RS_KUBE_HTTP_DIRECT)
		return;
	if ((why = not_direct(c)) != NULL) {
		rs_info(1, "API requests to %s on libcurl, not direct HTTP/2: "
		    "%s", c->server, why);
		return;
	}
	h = calloc(1, sizeof *h);
	if (h == NULL)
		return;
	if ((h->srv = server_new(c, &why)) == NULL) {
		/* libcurl says it again, request by request */
		rs_info(1, "API requests to %s on libcurl, not direct HTTP/2: "
		    "%s", c->server, why);
		free(h);
		return;
	}
	h->k = k;
	k->h2 = h;
	rs_info(1, "API requests to %s on direct HTTP/2 (libnghttp2 %s, %s)",
	    c->server, nghttp2_version(0)->version_str,
	    OpenSSL_version(OPENSSL_VERSION));
}

void
kube_h2_close(struct kh2 *h)
{
	struct h2conn *c;

	if (h == NULL)
		return;
	while ((c = h->conns) != NULL) {
		h->conns = c->next;
		conn_free(c);
	}
	if (!borrowed(h))
		server_free(h->srv);
	free(h);
}

/* k->h2 last, once every borrowed set is closed: they share its srv. */
void
kube_h2_free(struct rs_kube *k)
{
	kube_h2_close(k->h2);
	k->h2 = NULL;
}
