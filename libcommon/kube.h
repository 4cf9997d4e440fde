/* kube.h: the Kubernetes API client over libcurl.
 *
 * One struct rs_kube per process holds the resolved configuration, the TLS
 * material, the credential state (static token, token file re-read about
 * once a minute, exec plugin output cached until its expirationTimestamp and
 * refreshed on a 401) and the client-side token bucket (QPS, burst).
 * Connections are kept alive and HTTP/2 is used when the server offers it.
 *
 * Two ways to send:
 *  - rs_kube_do / rs_kube_stream: blocking, thread-safe (each call takes
 *    an easy handle from a pool, and each pooled handle keeps its own
 *    connections alive; DNS and TLS sessions are shared under locks, but
 *    not connections: libcurl does not support one connection cache used
 *    by concurrent threads).
 *  - rs_kube_submit + rs_kube_run: many requests in flight on the curl multi
 *    interface, completions delivered by callback from rs_kube_run; for one
 *    thread at a time.
 *
 * Errors: a non-2xx answer gives RS_EAPI (RS_ENOTFOUND for 404) with the
 * decoded Status in resp->status; transport failures give RS_ENET, RS_ETLS
 * or RS_ETIMEOUT with a message in resp->status.message. */
#ifndef RS_KUBE_H
#define RS_KUBE_H

#include <stddef.h>
#include <cJSON.h>

#include "code.h"
#include "kubeconfig.h"
#include "protobuf.h"

/* A Kubernetes metav1.Status, or a transport error described the same way. */
struct rs_kstatus {
	long code;               /* HTTP status, 0 when none was received */
	char reason[64];         /* NotFound, AlreadyExists, Conflict, Forbidden,
	                            Invalid, Gone, Expired, TooManyRequests, ... */
	char message[1024];
	cJSON *causes;           /* details.causes, owned; may be NULL */
	int retry_after;         /* seconds, from Retry-After or
	                            details.retryAfterSeconds; 0 when none */
};

struct rs_kresp {
	long code;               /* HTTP status */
	char *body;              /* NUL-terminated, malloc'd; may be NULL */
	size_t len;
	struct rs_kstatus status;   /* filled when code is not 2xx */
	int http2;               /* 1 when the answer came over HTTP/2 */
	long connects;           /* new connections this request opened
	                            (0: it reused a kept-alive one) */
	int sent;                /* the request may have reached the server:
	                            an answer came, or it failed after its
	                            connection was up (a POST: after its body
	                            began to go out). 0: surely not carried
	                            out (no connection, refused by the gate) */
	int refused;             /* no connection could be made (refused, no
	                            route): nothing listens there, and trying
	                            again costs the server nothing */
};

void rs_kresp_free(struct rs_kresp *r);

/* Frees st->causes and empties st. */
void rs_kstatus_clear(struct rs_kstatus *st);
/* Fills st from a decoded metav1.Status (e.g. the object of a watch ERROR
 * event); code is the HTTP status, or 0 to take the Status's own code.
 * A missing reason is derived from the code (404 NotFound, 409 Conflict,
 * 410 Gone, 429 TooManyRequests, ...). */
void rs_kstatus_from_json(struct rs_kstatus *st, long code,
    const cJSON *status);
/* The same from a Status in protobuf (its message, without envelope):
 * RS_EPARSE when it is none. */
rs_code rs_kstatus_from_pb(struct rs_kstatus *st, long code,
    struct rs_pbspan status);
/* The rs_code of an API error: RS_ENOTFOUND for 404, else RS_EAPI. */
rs_code rs_kstatus_rc(const struct rs_kstatus *st);

/* The fieldManager of rs-apply's pod writes (creates, adoptions and
 * releases), sent explicitly rather than left to the server to derive
 * from the User-Agent: the managedFields of a pod then say that this
 * controller set its ownerReferences, which is how rs-sync tells its own
 * pods from another controller's (rs-sync(1), Take-over guard). */
#define RS_FIELD_MANAGER "rs-apply"

struct rs_kube_opts {
	double qps;              /* <= 0: unlimited */
	int burst;
	long timeout_ms;         /* whole-request timeout for rs_kube_do; 0 = 60 s */
	const char *user_agent;  /* "rs-apply/0.1" */
	long settle_ms;          /* rs_kube_run: after a wake-up that brought
	                            answers, wait this long before the next
	                            poll, so that one wake-up takes several
	                            (0: none, what is ready is taken) */
	int max_running;         /* asynchronous requests in flight at once
	                            (0: RS_KUBE_MAX_RUNNING) */
	int http_client;         /* the transport of the asynchronous
	                            requests and of the blocking streams
	                            (watches): RS_KUBE_HTTP_CURL (0) or
	                            RS_KUBE_HTTP_DIRECT */
	int streams;             /* HTTP/2 streams per connection; more
	                            requests in flight open more connections
	                            (0: RS_KUBE_STREAMS; the server's own limit
	                            holds when lower) */
};
#define RS_KUBE_MAX_RUNNING 1024
/* libcurl, or HTTP/2 straight on libnghttp2 and OpenSSL: a fraction of
 * libcurl's CPU per request. Direct only where it can mean the same: an
 * https server, no proxy, a bearer token and/or the kubeconfig's client
 * certificate; else, and for blocking requests other than streams, and
 * for asynchronous streams, libcurl. */
#define RS_KUBE_HTTP_CURL   0
#define RS_KUBE_HTTP_DIRECT 1
/* kube-apiserver's own limit (--http2-max-streams-per-connection 0), which
 * client-go fills before it dials another connection: a backlog that
 * built up on a stalled connection then goes out on that one connection
 * when packets flow again, with no handshake still to make. */
#define RS_KUBE_STREAMS     100

struct rs_kube;

/* Takes ownership of cfg in every case. */
rs_code rs_kube_new(struct rs_kube_config *take, const struct rs_kube_opts *o,
    struct rs_kube **out);
void rs_kube_free(struct rs_kube *k);
const struct rs_kube_config *rs_kube_config(const struct rs_kube *k);

/* One request. path starts with "/" and includes the query string. body may
 * be NULL; ctype is its Content-Type (NULL: application/json). resp is
 * always filled (free with rs_kresp_free). */
rs_code rs_kube_do(struct rs_kube *k, const char *method, const char *path,
    const char *ctype, const char *body, size_t body_len, struct rs_kresp *resp);

/* A streaming GET (watch): fn is called with each whole line of the body
 * (NUL-terminated, no newline) as it arrives; fn returning non-RS_OK stops
 * the stream with that code. timeout_ms bounds the whole stream (0: none).
 * A non-2xx answer is returned like rs_kube_do, fn not called. *stop, if not
 * NULL, is polled about every 100 ms; non-zero ends the stream with RS_OK.
 * Reaching timeout_ms ends it with RS_ETIMEOUT; a line longer than 64 MiB
 * with RS_ETOOBIG. */
typedef rs_code (*rs_kube_line_fn)(void *arg, char *line, size_t len);
/* Batching a stream (batch may be NULL): idle(arg) is called each time the
 * lines that had arrived are all handed out (flush what fn buffered). In a
 * storm, when lines came less than settle_ms after the last ones, reading
 * then waits until the next multiple of settle_ms on the monotonic clock
 * (one grid for every stream of the process, so that streams storming
 * together are read together), so that each read brings several lines: fewer,
 * larger writes downstream. The first lines after a quiet spell are never
 * held: a lone event costs no latency, the last of a storm settle_ms at
 * most. idle returns 0 where waiting would gain nothing (a streaming list,
 * whose lines are not written as they come): reading goes on at once. */
struct rs_kube_batch {
	int (*idle)(void *arg);
	long settle_ms;
};
rs_code rs_kube_stream(struct rs_kube *k, const char *path, long timeout_ms,
    rs_kube_line_fn fn, void *arg, const struct rs_kube_batch *batch,
    volatile int *stop, struct rs_kresp *resp);

/* The same in Kubernetes' protobuf (pods and the other built-in types;
 * not custom resources): fn gets each event's frame, its bytes without
 * the 4-byte length before them (a runtime watch event: type, then the
 * object in the envelope rs_pb_unknown reads). A frame cut short at the
 * end of the stream is RS_EPARSE. */
#define RS_KUBE_PROTOBUF "application/vnd.kubernetes.protobuf"
rs_code rs_kube_stream_pb(struct rs_kube *k, const char *path,
    long timeout_ms, rs_kube_line_fn fn, void *arg,
    const struct rs_kube_batch *batch, volatile int *stop,
    struct rs_kresp *resp);
/* A GET answered in protobuf: the body is the object in its envelope. */
rs_code rs_kube_get_pb(struct rs_kube *k, const char *path,
    struct rs_kresp *resp);

/* The server's readiness endpoint, which every authenticated client may
 * read (system:public-info-viewer): asked to learn that a server which
 * refused connections is back. */
#define RS_KUBE_READYZ "/readyz"
/* How often rs-watch and rs-apply ask it while the server refuses
 * connections. The waits a probe cuts short have grown to seconds in an
 * outage (rs-watch's backoff, 0.8 s doubling; a key's retry, 5 ms
 * doubling): a quarter second brings streams and keys back within that
 * of the server. More often would cost more than it gains: a refused
 * connect costs the server nothing, but while it starts it answers each
 * (503), and in rs-apply each takes a token of --kube-api-qps (20 a
 * second). */
#define RS_KUBE_READYZ_EVERY_MS 250

/* GET RS_KUBE_READYZ within timeout_ms, without a token of the rate
 * limiter (a probe, not work): RS_OK when the server says it is ready. */
rs_code rs_kube_ready(struct rs_kube *k, long timeout_ms);

/* Asynchronous: queue a request; done is called from rs_kube_run with the
 * result and the response (borrowed: valid during the call only). Requests
 * wait for their token from the bucket in the order submitted. */
typedef void (*rs_kube_done_fn)(void *arg, rs_code rc, struct rs_kresp *resp);
rs_code rs_kube_submit(struct rs_kube *k, const char *method, const char *path,
    const char *ctype, const char *body, size_t body_len,
    rs_kube_done_fn done, void *arg);
/* The same without a copy of the body, which stays the caller's and must
 * stay as it is until done has been called: a batch of creates sends one
 * body hundreds of times at once. */
rs_code rs_kube_submit_borrowed(struct rs_kube *k, const char *method,
    const char *path, const char *ctype, const char *body, size_t body_len,
    rs_kube_done_fn done, void *arg);
/* A streaming GET (a watch) on the same interface: fn gets each line as
 * it arrives, from within rs_kube_run, which then returns (a line is news
 * the caller may act on at once); done is called once, when the stream
 * ends (RS_OK: the server ended it; fn's code when fn stopped it).
 * timeout_ms bounds the whole stream (0: none). */
rs_code rs_kube_submit_stream(struct rs_kube *k, const char *path,
    long timeout_ms, rs_kube_line_fn fn, void *arg, rs_kube_done_fn done,
    void *done_arg);
/* A check of each queued request as it is about to start, after its token
 * and a free slot, and again each time libcurl is about to send it on a
 * connection that is up: one it refuses (returns 0, why filled) is not
 * sent and completes with RS_EREFUSED and why as its message. rs-apply's
 * fence, which must be read as late as the write leaves, not when it was
 * queued. */
typedef int (*rs_kube_gate_fn)(void *arg, const char *method,
    const char *path, char *why, size_t len);
void rs_kube_set_gate(struct rs_kube *k, rs_kube_gate_fn fn, void *arg);
/* 1 if a request submitted now would find its token in the bucket and
 * so not wait for one. */
int rs_kube_token_ready(struct rs_kube *k);
/* Drives transfers for at most timeout_ms (or until one completes or a
 * stream of rs_kube_submit_stream hands out a line, if sooner), also returning early when extra_fd (>= 0) becomes readable.
 * Returns the number of requests still queued or in flight (streams
 * included). */
int rs_kube_run(struct rs_kube *k, int timeout_ms, int extra_fd);

/* Escapes s for use in a URL query value; malloc'd. */
char *rs_kube_escape(const char *s);

#endif
