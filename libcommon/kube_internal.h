/* kube_internal.h: what kube.c, kube_stream.c, kube_multi.c and
 * kube_status.c share; not for tools.
 *
 * Connections: libcurl does not support one connection cache shared by
 * concurrent threads (CURL_LOCK_DATA_CONNECT, documented as unsupported
 * across threads), so the share holds only DNS and TLS sessions, under
 * locks. Blocking calls take a slot (an easy handle with a private multi,
 * whose connection cache keeps connections alive between calls) from a
 * pool; the asynchronous interface has its own multi. */
#ifndef RS_KUBE_INTERNAL_H
#define RS_KUBE_INTERNAL_H

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <curl/curl.h>

#include "kube.h"
#include "kube_auth.h"
#include "ratelimit.h"

#define KUBE_MAX_BODY    ((size_t)1 << 30)   /* a whole response */
#define KUBE_MAX_LINE    ((size_t)64 << 20)  /* one line of a stream */
#define KUBE_MAX_ERRBODY ((size_t)1 << 20)   /* an error answer kept */
#define KUBE_POOL_IDLE   8                   /* idle slots kept */

struct kslot;
struct kh2;

struct kslot {
	CURL *easy;
	CURLM *multi;
	struct kh2 *h2;               /* its streams' own HTTP/2 connection
	                                 (kube_h2_stream), or NULL */
	struct kslot *next;
};

struct kreq;

/* A FIFO of requests linked by their next (kube_fifo.c). */
struct kfifo {
	struct kreq *head, *tail;
	int n;
};
void kfifo_push(struct kfifo *q, struct kreq *r);
void kfifo_push_front(struct kfifo *q, struct kreq *r);
struct kreq *kfifo_pop(struct kfifo *q);
void kfifo_remove(struct kfifo *q, struct kreq *r);

struct rs_kube {
	struct rs_kube_config *cfg;
	struct rs_kauth *auth;
	char *base;                   /* URL prefix (host may be the
	                                 tls-server-name) */
	struct curl_slist *connect_to;
	char *host_hdr;               /* "Host: real-host:port", or NULL */
	char *user_agent;
	long timeout_ms;
	long connect_ms;
	CURLSH *share;
	pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
	pthread_mutex_t mu;           /* bucket and slot pool */
	struct rs_bucket bucket;
	struct kslot *idle;
	int nidle;
	/* The asynchronous side: one thread at a time. */
	CURLM *multi;
	struct kfifo wait;                    /* submitted, not started */
	struct kreq *run_head;                /* in the multi */
	rs_kube_gate_fn gate;                 /* asked as each one starts */
	void *gate_arg;
	int nrunning;
	unsigned long async_lines;    /* handed out by asynchronous streams:
	                                 rs_kube_run returns when it moves */
	int max_running;
	long streams;                 /* per HTTP/2 connection */
	long host_conns;              /* connections allowed now */
	CURL *spare[64];              /* easy handles for reuse */
	int nspare;
	/* What libcurl asks to watch (multi_socket interface). */
	struct pollfd *socks;
	int nsocks, socks_cap;
	int64_t timer_at;             /* curl's timeout (monotonic ns), -1 */
	long settle_ms;
	int busy;                     /* the last poll found a socket ready */
	int64_t settle_until;         /* end of the window gathering answers */
	int64_t last_answer;          /* when answers last came (monotonic) */
	int64_t answer_gap;           /* average ns between answers */
	int ran_since_answer;         /* requests in flight since then (the
	                                 fewest: those after the last answer) */
	struct kh2 *h2;               /* the asynchronous requests' own
	                                 HTTP/2 connections, or NULL: all on
	                                 libcurl */
	int h2_streams_off;           /* a blocking stream found the direct
	                                 client unfit: streams on libcurl
	                                 (atomic: every thread's slots) */
};

/* One request and its response, in any of the three interfaces. */
struct kreq {
	struct rs_kube *k;
	const char *method, *path, *ctype;
	const char *accept;           /* what the answer may come as */
	int framed;                   /* a stream of length-prefixed frames
	                                 (protobuf watch), not of lines */
	const char *body;
	size_t body_len;
	size_t body_off;              /* a POST body's bytes read by libcurl */
	long timeout_ms;              /* 0: none */
	CURL *easy;
	struct curl_slist *headers;
	struct rs_kcred cred;
	char errbuf[CURL_ERROR_SIZE];
	struct rs_kresp resp;
	size_t cap;
	int retry_after;              /* Retry-After header, seconds */
	int attempt;
	int resend;                   /* kreq_finish asks for one more attempt */
	int64_t start_ns;
	/* Streams: fn per line when the answer is 2xx. */
	rs_kube_line_fn fn;
	void *fn_arg;
	const struct rs_kube_batch *batch;
	int64_t batch_last;           /* when lines last came (monotonic) */
	unsigned long lines;          /* handed to fn */
	rs_code cb_rc;                /* why a callback stopped the transfer */
	volatile int *stop;
	int async;                    /* a stream on the multi interface */
	char *line;
	size_t line_len, line_cap;
	/* Asynchronous requests own copies of what they send. */
	char *own;
	rs_kube_done_fn done;
	void *done_arg;
	int64_t not_before;
	struct kreq *next;            /* in the wait FIFO */
	struct kreq *rprev, *rnext;   /* in the running list (libcurl's or
	                                 kube_h2.c's) */
	/* kube_h2.c: the request as an HTTP/2 stream of its own connection */
	void *h2c;                    /* its connection, once it has one */
	int32_t h2_id;                /* its stream, 0 before */
	int h2_headers;               /* its HEADERS went out */
	int h2_curl;                  /* to be started on libcurl instead */
	int h2_again;                 /* streams it had that never reached
	                                 the server */
	CURLcode h2_cc;               /* how it ended, in libcurl's terms */
	char h2_ctype[128];           /* the answer's Content-Type */
};

/* kube.c */
void kreq_init(struct kreq *r, struct rs_kube *k, const char *method,
    const char *path, const char *ctype, const char *body, size_t body_len);
/* Fetches credentials and sets every option of r->easy. */
rs_code kreq_prepare(struct kreq *r);
/* Fetches credentials alone (a transport of its own), and starts the
 * clock of the attempt. */
rs_code kreq_cred(struct kreq *r);
/* Turns a finished transfer into a result; RS_EAGAIN means "send it again
 * with fresh credentials" (a 401 the credentials may fix). */
rs_code kreq_finish(struct kreq *r, CURLcode cc);
/* The same for any transport, which has set resp.code, http2, connects
 * and, unless cc is CURLE_OK, resp.sent; a transport failure or a stop
 * (cb_rc, with CURLE_WRITE_ERROR or CURLE_ABORTED_BY_CALLBACK) is told in
 * libcurl's terms, r->errbuf saying why. */
rs_code kreq_end(struct kreq *r, CURLcode cc);
/* Appends an answer's bytes to the response (code: its status). */
size_t kreq_body(struct kreq *r, long code, const char *p, size_t len);
/* An answer's bytes, to a stream's lines (a 2xx answer to a stream) or
 * to the response. */
size_t kreq_data(struct kreq *r, long code, const char *p, size_t len);
/* A stream's lines came in a pass: its batch's idle callback, and in a
 * storm a pause (running: the stream goes on). */
void kreq_batch_idle(struct kreq *r, int running);
/* Forgets the response of a first attempt before a retry. */
void kreq_reset(struct kreq *r);
void kreq_release(struct kreq *r);
/* Waits for the token bucket (blocking callers). */
void kube_wait_token(struct rs_kube *k);
int64_t kube_reserve(struct rs_kube *k);
/* Runs r on a pooled slot until done, polling r->stop. */
rs_code kube_perform(struct rs_kube *k, struct kreq *r);
/* kube_perform once the bucket gives a token; r's response becomes the
 * caller's *resp, whatever the result, and r is released. */
rs_code kube_call(struct rs_kube *k, struct kreq *r, struct rs_kresp *resp);

/* kube_multi.c: sets up the multi handle's socket and timer callbacks. */
void kube_multi_init(struct rs_kube *k, const struct rs_kube_opts *o);
/* Frees what is queued or in flight, without callbacks. */
void kube_multi_drop(struct rs_kube *k);

/* kube_h2.c: the asynchronous requests on HTTP/2 connections of their
 * own (libnghttp2 over OpenSSL), not libcurl's. kube_multi.c keeps the
 * queue, the bucket, max_running and the settle window for both, and
 * asks here whether a request goes this way. */
/* Decides once whether the server and credentials allow it (o asks for
 * it; https, no proxy, no basic auth); k->h2 stays NULL if not. */
void kube_h2_init(struct rs_kube *k, const struct rs_kube_opts *o);
/* Closes every connection; the requests must be gone (kube_h2_drop). */
void kube_h2_free(struct rs_kube *k);
/* Whether r goes on these connections (a plain request, h2 still on). */
int kube_h2_takes(struct rs_kube *k, const struct kreq *r);
/* Takes r (counted in nrunning): it gets a stream when a connection has
 * one free, the gate asked again right before. RS_EAGAIN: not here after
 * all (credentials this transport does not carry): start it on libcurl. */
rs_code kube_h2_start(struct rs_kube *k, struct kreq *r);
/* Dials, sends what waits, times out what is late. */
void kube_h2_pump(struct rs_kube *k, int64_t now);
/* The connections' descriptors, at most max, into p; returns how many. */
int kube_h2_fds(struct rs_kube *k, struct pollfd *p, int max);
/* Works on the descriptors kube_h2_fds gave, poll(2)'s revents set. */
void kube_h2_ready(struct rs_kube *k, const struct pollfd *p, int n);
/* The next deadline (monotonic ns) of a dial or a request, -1 if none. */
int64_t kube_h2_next(struct rs_kube *k);
/* A finished request (h2_cc, resp filled; h2_curl: to go on libcurl),
 * out of the running list, still counted in nrunning; NULL when none. */
struct kreq *kube_h2_done(struct rs_kube *k);
/* Every request, finished or not, handed out by kube_h2_done, unsent
 * ones first closed: rs_kube_free and kube_multi_drop free them. */
void kube_h2_drop(struct rs_kube *k);
/* Whether r, a blocking stream (a watch), goes on an HTTP/2 connection of
 * its own (k->h2 set up: the server and credentials allow it). */
int kube_h2_streams(const struct rs_kube *k, const struct kreq *r);
/* Runs r to its end on *hp, a connection set of the caller's own, made
 * on first use and kept for the next call; no gate is asked. RS_OK with
 * r->h2_cc and resp set, or with *stopped (r->stop), or with r->h2_curl
 * (libcurl must carry it: h2 turned off, or no memory for the set); else
 * credentials failed. */
rs_code kube_h2_stream(struct rs_kube *k, struct kh2 **hp, struct kreq *r,
    int *stopped);
/* Closes the connections of h, a set kube_h2_stream made, and frees it. */
void kube_h2_close(struct kh2 *h);

/* kube_stream.c: the write callback's line splitter. */
size_t kube_stream_data(struct kreq *r, const char *p, size_t n);
rs_code kube_stream_flush(struct kreq *r);

/* kube_status.c */
/* Fills st from an error answer (any body). */
void rs_kstatus_from_body(struct rs_kstatus *st, long code,
    const char *body, size_t len, int retry_after);
/* Fills st for a transport failure and gives its rs_code. */
rs_code rs_kstatus_transport(struct rs_kstatus *st, CURLcode cc,
    const char *errbuf, const char *server);

#endif
