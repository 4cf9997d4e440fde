/* kube.c: the API client over libcurl: setup, one request's options and
 * result, and the blocking call. Streams are in kube_stream.c, the multi
 * interface in kube_multi.c, error decoding in kube_status.c, credentials
 * in kube_auth.c.
 *
 * Never logged, at any verbosity: request headers (they carry the bearer
 * token), request bodies (a Secret's data), response headers. At -v 8 a
 * request is logged as method, URL, code and latency; at -v 9 the body of
 * an error answer too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clock.h"
#include "kube_internal.h"
#include "log.h"
#include "stagestats.h"

#define SETOPT(e, o, v) do { \
	if (cc == CURLE_OK) \
		cc = curl_easy_setopt((e), (o), (v)); \
} while (0)

/* Debian's libcurl loads GnuTLS (through librtmp), whose constructor
 * initialises it, p11-kit modules included, in every process that links
 * libcurl: about 0.8 MB resident and half a millisecond at start for a
 * library we never call. GnuTLS skips that when the program defines this (its
 * GNUTLS_SKIP_GLOBAL_INIT); the Makefile exports it so that the dynamic
 * linker binds GnuTLS's call to this definition. */
int _gnutls_global_init_skip(void);
int
_gnutls_global_init_skip(void)
{
	return 1;
}

static pthread_once_t kube_once = PTHREAD_ONCE_INIT;
static CURLcode kube_global_rc;

static void
kube_global_init(void)
{
	kube_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void
share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
	struct rs_kube *k = u;

	pthread_mutex_lock(&k->share_mu[d]);
}

static void
share_unlock(CURL *h, curl_lock_data d, void *u)
{
	struct rs_kube *k = u;

	pthread_mutex_unlock(&k->share_mu[d]);
}

void
rs_kresp_free(struct rs_kresp *r)
{
	free(r->body);
	rs_kstatus_clear(&r->status);
	memset(r, 0, sizeof *r);
}

const struct rs_kube_config *
rs_kube_config(const struct rs_kube *k)
{
	return k->cfg;
}

/* With tls-server-name, the URL names that host (so that curl sends it as
 * SNI and checks the certificate against it) and CONNECT_TO sends the
 * connection to the real server; libcurl has no separate SNI option. The
 * Host header keeps the real server's name, as Go's client does. */
static rs_code
kube_endpoint(struct rs_kube *k)
{
	const struct rs_kube_config *c = k->cfg;
	char *host = NULL, *port = NULL, *eport = NULL, *url = NULL, *s;
	rs_code rc = RS_ECONFIG;
	CURLU *u;

	if (c->tls_server_name == NULL) {
		k->base = strdup(c->server);
		return k->base ? RS_OK : RS_ENOMEM;
	}
	u = curl_url();
	if (u == NULL)
		return RS_ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, c->server, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) !=
	    CURLUE_OK) {
		rs_error("unable to use server %s: not a URL", c->server);
		goto out;
	}
	rc = RS_ENOMEM;
	if (curl_url_get(u, CURLUPART_PORT, &eport, 0) != CURLUE_OK)
		eport = NULL;
	if (asprintf(&s, "%s:%s:%s:%s", c->tls_server_name, port, host,
	    port) < 0)
		goto out;
	k->connect_to = curl_slist_append(NULL, s);
	free(s);
	if (k->connect_to == NULL)
		goto out;
	if (asprintf(&k->host_hdr, "Host: %s%s%s", host, eport ? ":" : "",
	    eport ? eport : "") < 0) {
		k->host_hdr = NULL;
		goto out;
	}
	if (curl_url_set(u, CURLUPART_HOST, c->tls_server_name, 0) !=
	    CURLUE_OK || curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK)
		goto out;
	k->base = strdup(url);
	if (k->base == NULL)
		goto out;
	for (s = k->base + strlen(k->base); s > k->base && s[-1] == '/'; s--)
		s[-1] = '\0';
	rc = RS_OK;
out:
	curl_free(host);
	curl_free(port);
	curl_free(eport);
	curl_free(url);
	curl_url_cleanup(u);
	return rc;
}

static rs_code
kube_curl_init(struct rs_kube *k, const struct rs_kube_opts *o)
{
	int i;

	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&k->share_mu[i], NULL);
	k->share = curl_share_init();
	k->multi = curl_multi_init();
	if (k->share == NULL || k->multi == NULL)
		return RS_ENOMEM;
	curl_share_setopt(k->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(k->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(k->share, CURLSHOPT_USERDATA, k);
	curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(k->share, CURLSHOPT_SHARE,
	    CURL_LOCK_DATA_SSL_SESSION);
	curl_multi_setopt(k->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
	kube_multi_init(k, o);
	return RS_OK;
}

rs_code
rs_kube_new(struct rs_kube_config *take, const struct rs_kube_opts *o,
    struct rs_kube **out)
{
	struct rs_kube *k;
	char err[1024] = "";
	rs_code rc;

	*out = NULL;
	pthread_once(&kube_once, kube_global_init);
	if (kube_global_rc != CURLE_OK) {
		rs_kube_config_free(take);
		rs_error("unable to initialize libcurl: %s",
		    curl_easy_strerror(kube_global_rc));
		return RS_ENOMEM;
	}
	k = calloc(1, sizeof *k);
	if (k == NULL) {
		rs_kube_config_free(take);
		return RS_ENOMEM;
	}
	k->cfg = take;
	pthread_mutex_init(&k->mu, NULL);
	rs_bucket_init(&k->bucket, o ? o->qps : 0, o ? o->burst : 0);
	k->timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : 60000;
	k->settle_ms = o ? o->settle_ms : 0;
	/* client-go dials with a 30 s timeout. */
	k->connect_ms = k->timeout_ms < 30000 ? k->timeout_ms : 30000;
	if (o && o->user_agent)
		k->user_agent = strdup(o->user_agent);
	else if (asprintf(&k->user_agent, "%s/0.1", rs_log_prog()) < 0)
		k->user_agent = NULL;
	rc = k->user_agent ? kube_curl_init(k, o) : RS_ENOMEM;
	if (rc == RS_OK)
		rc = kube_endpoint(k);
	if (rc == RS_OK) {
		rc = rs_kauth_new(k->cfg, &k->auth, err, sizeof err);
		if (rc != RS_OK && err[0])
			rs_error("%s", err);
	}
	if (rc == RS_OK)
		kube_h2_init(k, o);
	if (rc != RS_OK) {
		rs_kube_free(k);
		return rc;
	}
	*out = k;
	return RS_OK;
}

static void
slot_free(struct kslot *s)
{
	kube_h2_close(s->h2);
	curl_easy_cleanup(s->easy);
	curl_multi_cleanup(s->multi);
	free(s);
}

void
rs_kube_free(struct rs_kube *k)
{
	struct kslot *s;
	int i;

	if (k == NULL)
		return;
	if (k->multi)
		kube_multi_drop(k);
	while ((s = k->idle) != NULL) {   /* their streams' h2 borrows k's */
		k->idle = s->next;
		slot_free(s);
	}
	kube_h2_free(k);
	for (i = 0; i < k->nspare; i++)
		curl_easy_cleanup(k->spare[i]);
	curl_multi_cleanup(k->multi);
	free(k->socks);
	curl_share_cleanup(k->share);
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&k->share_mu[i]);
	pthread_mutex_destroy(&k->mu);
	rs_kauth_free(k->auth);
	curl_slist_free_all(k->connect_to);
	free(k->host_hdr);
	free(k->base);
	free(k->user_agent);
	rs_kube_config_free(k->cfg);
	free(k);
}

int64_t
kube_reserve(struct rs_kube *k)
{
	int64_t d;

	pthread_mutex_lock(&k->mu);
	d = rs_bucket_reserve(&k->bucket, rs_mono_ns());
	pthread_mutex_unlock(&k->mu);
	return d;
}

int
rs_kube_token_ready(struct rs_kube *k)
{
	int ready;

	pthread_mutex_lock(&k->mu);
	ready = rs_bucket_ready(&k->bucket, rs_mono_ns());
	pthread_mutex_unlock(&k->mu);
	return ready;
}

void
kube_wait_token(struct rs_kube *k)
{
	int64_t d = kube_reserve(k);
	struct timespec ts;

	if (d <= 0)
		return;
	rs_info(9, "client-side rate limit: waiting %lld ms",
	    (long long)(d / 1000000));
	ts.tv_sec = d / 1000000000;
	ts.tv_nsec = d % 1000000000;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void
kreq_init(struct kreq *r, struct rs_kube *k, const char *method,
    const char *path, const char *ctype, const char *body, size_t body_len)
{
	memset(r, 0, sizeof *r);
	r->k = k;
	r->method = method;
	r->path = path;
	r->ctype = ctype ? ctype : "application/json";
	r->accept = "application/json";
	r->body = body;
	r->body_len = body_len;
}

void
kreq_reset(struct kreq *r)
{
	rs_kresp_free(&r->resp);
	r->cap = 0;
	r->retry_after = 0;
	r->cb_rc = RS_OK;
	r->line_len = 0;
	r->errbuf[0] = '\0';
	r->attempt++;
}

void
kreq_release(struct kreq *r)
{
	curl_slist_free_all(r->headers);
	r->headers = NULL;
	rs_kcred_free(&r->cred);
	free(r->line);
	r->line = NULL;
	free(r->own);
	r->own = NULL;
}

/* Appends an answer's bytes to r->resp.body: a 2xx one up to
 * KUBE_MAX_BODY, an error's first KUBE_MAX_ERRBODY. Returns len, or 0 with
 * r->cb_rc set. */
size_t
kreq_body(struct kreq *r, long code, const char *p, size_t len)
{
	size_t max, ncap;
	char *nb;

	max = code >= 200 && code < 300 ? KUBE_MAX_BODY : KUBE_MAX_ERRBODY;
	if (r->resp.len + len > max) {
		if (max == KUBE_MAX_ERRBODY)
			return len;     /* the start of an error says enough */
		r->cb_rc = RS_ETOOBIG;
		return 0;
	}
	if (r->resp.len + len + 1 > r->cap) {
		/* most answers are one object of a few KiB */
		ncap = r->cap ? r->cap : 4096;
		while (ncap < r->resp.len + len + 1)
			ncap *= 2;
		nb = realloc(r->resp.body, ncap);
		if (nb == NULL) {
			r->cb_rc = RS_ENOMEM;
			return 0;
		}
		r->resp.body = nb;
		r->cap = ncap;
	}
	memcpy(r->resp.body + r->resp.len, p, len);
	r->resp.len += len;
	r->resp.body[r->resp.len] = '\0';
	return len;
}

size_t
kreq_data(struct kreq *r, long code, const char *p, size_t len)
{
	if (r->fn && code >= 200 && code < 300)
		return kube_stream_data(r, p, len);
	return kreq_body(r, code, p, len);
}

static size_t
kreq_write(char *p, size_t sz, size_t n, void *arg)
{
	struct kreq *r = arg;
	size_t len = sz * n;
	long code = 0;

	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
	return kreq_data(r, code, p, len);
}

static size_t
kreq_header(char *p, size_t sz, size_t n, void *arg)
{
	struct kreq *r = arg;
	size_t len = sz * n;
	char buf[32];

	if (len > 12 && len < 12 + sizeof buf &&
	    strncasecmp(p, "Retry-After:", 12) == 0) {
		memcpy(buf, p + 12, len - 12);
		buf[len - 12] = '\0';
		r->retry_after = atoi(buf);
	}
	return len;
}

static rs_code
kreq_headers(struct kreq *r)
{
	struct curl_slist *h = NULL, *t;
	char *auth = NULL, accept[128];

	snprintf(accept, sizeof accept, "Accept: %s", r->accept);
	h = curl_slist_append(h, accept);
	/* No "Expect: 100-continue" round trip before large bodies. */
	if (h && (h = curl_slist_append(t = h, "Expect:")) == NULL)
		curl_slist_free_all(t);
	if (h && r->body) {
		char ct[256];

		snprintf(ct, sizeof ct, "Content-Type: %s", r->ctype);
		if ((h = curl_slist_append(t = h, ct)) == NULL)
			curl_slist_free_all(t);
	}
	if (h && r->k->host_hdr &&
	    (h = curl_slist_append(t = h, r->k->host_hdr)) == NULL)
		curl_slist_free_all(t);
	if (h && r->cred.token) {
		if (asprintf(&auth, "Authorization: Bearer %s",
		    r->cred.token) < 0)
			auth = NULL;
		if (auth == NULL || (h = curl_slist_append(t = h, auth)) ==
		    NULL)
			curl_slist_free_all(t);
		if (auth) {
			explicit_bzero(auth, strlen(auth));
			free(auth);
		}
	}
	if (h == NULL)
		return RS_ENOMEM;
	r->headers = h;
	return RS_OK;
}

/* A POST is not idempotent, and libcurl sends a request again, body and
 * all, when the reused connection it went on dies before any answer: the
 * apiserver may have carried the first one out (a pod created twice). So a
 * POST body goes through a callback that refuses to rewind: such a resend
 * fails instead, as client-go never retries a POST either. PUT and PATCH
 * carry preconditions (resourceVersion, UID); DELETE is idempotent. */
static size_t
kreq_read(char *buf, size_t size, size_t n, void *arg)
{
	struct kreq *r = arg;
	size_t left = r->body_len - r->body_off;

	if (left > size * n)
		left = size * n;
	if (left > 0)
		memcpy(buf, r->body + r->body_off, left);
	r->body_off += left;
	return left;
}

static int
kreq_noseek(void *arg, curl_off_t off, int origin)
{
	(void)arg;
	(void)off;
	(void)origin;
	return CURL_SEEKFUNC_FAIL;
}

static CURLcode
kreq_method(struct kreq *r)
{
	CURLcode cc = CURLE_OK;
	CURL *e = r->easy;

	if (strcmp(r->method, "GET") == 0 && r->body == NULL) {
		SETOPT(e, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(r->method, "HEAD") == 0) {
		SETOPT(e, CURLOPT_NOBODY, 1L);
	} else if (strcmp(r->method, "POST") == 0) {
		r->body_off = 0;
		SETOPT(e, CURLOPT_POST, 1L);
		SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)r->body_len);
		SETOPT(e, CURLOPT_READFUNCTION, kreq_read);
		SETOPT(e, CURLOPT_READDATA, r);
		SETOPT(e, CURLOPT_SEEKFUNCTION, kreq_noseek);
		SETOPT(e, CURLOPT_SEEKDATA, r);
		/* A body read through the callback goes through a buffer
		 * per transfer, 64 KiB unless told: pod bodies are a few
		 * KiB, and 64 transfers run at once. */
		SETOPT(e, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
	} else if (r->body || strcmp(r->method, "PUT") == 0 ||
	    strcmp(r->method, "PATCH") == 0) {
		/* Always POSTFIELDS: without it libcurl would read stdin. */
		SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)r->body_len);
		SETOPT(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
		SETOPT(e, CURLOPT_CUSTOMREQUEST, r->method);
	} else {
		SETOPT(e, CURLOPT_CUSTOMREQUEST, r->method);
	}
	return cc;
}

static CURLcode
kreq_blob(CURL *e, CURLoption o, const char *p, size_t n)
{
	struct curl_blob b = { (void *)p, n, CURL_BLOB_COPY };

	return curl_easy_setopt(e, o, &b);
}

static CURLcode
kreq_tls(struct kreq *r)
{
	const struct rs_kube_config *c = r->k->cfg;
	const struct rs_kcred *cr = &r->cred;
	CURLcode cc = CURLE_OK;
	CURL *e = r->easy;

	if (c->insecure) {
		SETOPT(e, CURLOPT_SSL_VERIFYPEER, 0L);
		SETOPT(e, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (c->ca_data || c->ca_file) {
		/* Only the cluster's CA, not the system roots, as client-go
		 * does when one is configured. */
		SETOPT(e, CURLOPT_CAPATH, NULL);
		SETOPT(e, CURLOPT_CAINFO, c->ca_file);
		if (cc == CURLE_OK && c->ca_data)
			cc = kreq_blob(e, CURLOPT_CAINFO_BLOB, c->ca_data,
			    c->ca_data_len);
	}
	if (cr->cert || c->cert_data) {
		SETOPT(e, CURLOPT_SSLCERTTYPE, "PEM");
		SETOPT(e, CURLOPT_SSLKEYTYPE, "PEM");
		/* An exec plugin's pair, else the kubeconfig's. */
		if (cc == CURLE_OK)
			cc = kreq_blob(e, CURLOPT_SSLCERT_BLOB,
			    cr->cert ? cr->cert : c->cert_data,
			    cr->cert ? cr->cert_len : c->cert_data_len);
		if (cc == CURLE_OK)
			cc = kreq_blob(e, CURLOPT_SSLKEY_BLOB,
			    cr->key ? cr->key : c->key_data,
			    cr->key ? cr->key_len : c->key_data_len);
	} else if (c->cert_file) {
		SETOPT(e, CURLOPT_SSLCERT, c->cert_file);
		SETOPT(e, CURLOPT_SSLKEY, c->key_file);
	}
	return cc;
}

static CURLcode
kreq_options(struct kreq *r, const char *url)
{
	const struct rs_kube_config *c = r->k->cfg;
	CURLcode cc = CURLE_OK;
	CURL *e = r->easy;

	SETOPT(e, CURLOPT_URL, url);
	SETOPT(e, CURLOPT_SHARE, r->k->share);
	SETOPT(e, CURLOPT_PRIVATE, r);
	SETOPT(e, CURLOPT_NOSIGNAL, 1L);
	SETOPT(e, CURLOPT_ERRORBUFFER, r->errbuf);
	SETOPT(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	SETOPT(e, CURLOPT_PIPEWAIT, 1L);
	SETOPT(e, CURLOPT_CONNECTTIMEOUT_MS, r->k->connect_ms);
	SETOPT(e, CURLOPT_TIMEOUT_MS, r->timeout_ms);
	SETOPT(e, CURLOPT_TCP_KEEPALIVE, 1L);
	SETOPT(e, CURLOPT_TCP_KEEPIDLE, 30L);
	SETOPT(e, CURLOPT_TCP_KEEPINTVL, 30L);
	SETOPT(e, CURLOPT_ACCEPT_ENCODING, "");
	SETOPT(e, CURLOPT_USERAGENT, r->k->user_agent);
	SETOPT(e, CURLOPT_HTTPHEADER, r->headers);
	SETOPT(e, CURLOPT_WRITEFUNCTION, kreq_write);
	SETOPT(e, CURLOPT_WRITEDATA, r);
	SETOPT(e, CURLOPT_HEADERFUNCTION, kreq_header);
	SETOPT(e, CURLOPT_HEADERDATA, r);
	if (r->k->connect_to)
		SETOPT(e, CURLOPT_CONNECT_TO, r->k->connect_to);
	if (c->proxy_url) {
		/* An explicit proxy-url serves every host, as in client-go:
		 * $NO_PROXY does not apply to it. */
		SETOPT(e, CURLOPT_PROXY, c->proxy_url);
		SETOPT(e, CURLOPT_NOPROXY, "");
	}
	if ((c->username || c->password) && r->cred.token == NULL) {
		SETOPT(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		SETOPT(e, CURLOPT_USERNAME, c->username ? c->username : "");
		SETOPT(e, CURLOPT_PASSWORD, c->password ? c->password : "");
	}
	if (cc == CURLE_OK)
		cc = kreq_method(r);
	if (cc == CURLE_OK)
		cc = kreq_tls(r);
	return cc;
}

rs_code
kreq_cred(struct kreq *r)
{
	rs_kcred_free(&r->cred);
	r->start_ns = rs_mono_ns();
	return rs_kauth_get(r->k->auth, &r->cred, r->resp.status.message,
	    sizeof r->resp.status.message);
}

rs_code
kreq_prepare(struct kreq *r)
{
	char *url;
	CURLcode cc;
	rs_code rc;

	curl_slist_free_all(r->headers);
	r->headers = NULL;
	rc = kreq_cred(r);
	if (rc != RS_OK)
		return rc;
	rc = kreq_headers(r);
	if (rc != RS_OK)
		return rc;
	if (asprintf(&url, "%s%s", r->k->base, r->path) < 0)
		return RS_ENOMEM;
	cc = kreq_options(r, url);
	free(url);
	if (cc != CURLE_OK) {
		snprintf(r->resp.status.message, sizeof r->resp.status.message,
		    "unable to set up the request: %s", curl_easy_strerror(cc));
		return cc == CURLE_OUT_OF_MEMORY ? RS_ENOMEM : RS_ECONFIG;
	}
	r->start_ns = rs_mono_ns();
	return RS_OK;
}

static void
kreq_log(const struct kreq *r, const char *what)
{
	if (!RS_V(8))
		return;
	rs_info(8, "%s %s%s %s in %lld milliseconds", r->method, r->k->base,
	    r->path, what, (long long)((rs_mono_ns() - r->start_ns) / 1000000));
}

static int
kreq_is_post(const struct kreq *r)
{
	return r->body != NULL && strcmp(r->method, "POST") == 0;
}

/* Whether a request that got no answer may still have been carried
 * out. A POST's body goes through kreq_read: with none of it read, the
 * server cannot have decoded the object. Other requests are taken as
 * gone once libcurl reached the point of sending them (pretransfer). */
static int
kreq_left(const struct kreq *r)
{
	curl_off_t t = 0;

	if (kreq_is_post(r))
		return r->body_off > 0;
	if (curl_easy_getinfo(r->easy, CURLINFO_PRETRANSFER_TIME_T, &t) !=
	    CURLE_OK)
		return 1;
	return t > 0;
}

static rs_code
kreq_callback_failed(struct kreq *r)
{
	if (r->cb_rc == RS_ETOOBIG)
		snprintf(r->resp.status.message, sizeof r->resp.status.message,
		    "%s larger than %zu MiB", r->fn ? "a line of the response" :
		    "the response", (r->fn ? KUBE_MAX_LINE : KUBE_MAX_BODY) >>
		    20);
	kreq_log(r, "stopped");
	return r->cb_rc;
}

static int
kreq_stopped(const struct kreq *r, CURLcode cc)
{
	return (cc == CURLE_WRITE_ERROR || cc == CURLE_ABORTED_BY_CALLBACK) &&
	    r->cb_rc != RS_OK;
}

static void
kreq_info(struct kreq *r)
{
	long v = 0, n = 0;

	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->resp.code);
	curl_easy_getinfo(r->easy, CURLINFO_HTTP_VERSION, &v);
	curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &n);
	r->resp.http2 = v == CURL_HTTP_VERSION_2_0;
	r->resp.connects = n;
}

/* stats: client-go's rest_client figures, one per attempt (code 0 is
 * "<error>": no answer); a stream is counted, not timed. */
static void
kreq_count(const struct kreq *r)
{
	rs_stagestats_request(r->k->cfg->server, r->method, r->resp.code,
	    r->fn ? -1.0 : (double)(rs_mono_ns() - r->start_ns) / 1e9);
}

/* libcurl's side of a finished transfer: what it says of the answer and
 * of whether the request left. */
rs_code
kreq_finish(struct kreq *r, CURLcode cc)
{
	kreq_info(r);
	/* the gate stops a request before it leaves (a POST whose body went
	 * out on an earlier connection stays sent); the other callbacks
	 * stop an answer that came */
	if (kreq_stopped(r, cc))
		r->resp.sent = r->cb_rc != RS_EREFUSED || (kreq_is_post(r) &&
		    kreq_left(r));
	else if (cc != CURLE_OK)
		r->resp.sent = kreq_left(r);
	return kreq_end(r, cc);
}

rs_code
kreq_end(struct kreq *r, CURLcode cc)
{
	struct rs_kstatus *st = &r->resp.status;
	char what[64];
	rs_code rc;

	kreq_count(r);          /* stats */
	if (kreq_stopped(r, cc))
		return kreq_callback_failed(r);
	if (cc != CURLE_OK) {
		r->resp.refused = cc == CURLE_COULDNT_CONNECT;
		rc = rs_kstatus_transport(st, cc, r->errbuf, r->k->cfg->server);
		kreq_log(r, st->message);
		return rc;
	}
	r->resp.sent = 1;
	snprintf(what, sizeof what, "%ld", r->resp.code);
	kreq_log(r, what);
	if (r->resp.code >= 200 && r->resp.code < 300)
		return r->fn ? kube_stream_flush(r) : RS_OK;
	rs_kstatus_from_body(st, r->resp.code, r->resp.body, r->resp.len,
	    r->retry_after);
	/* fresh credentials, one more attempt: flagged apart from the result,
	 * which a line callback may set to any code */
	if (r->resp.code == 401 && r->attempt == 0 &&
	    rs_kauth_unauthorized(r->k->auth, r->cred.gen)) {
		r->resend = 1;
		return RS_EAGAIN;
	}
	if (RS_V(9) && r->resp.body)
		rs_info(9, "response body: %.*s", (int)(r->resp.len < 4096 ?
		    r->resp.len : 4096), r->resp.body);
	return rs_kstatus_rc(st);
}

static struct kslot *
slot_get(struct rs_kube *k)
{
	struct kslot *s;

	pthread_mutex_lock(&k->mu);
	s = k->idle;
	if (s) {
		k->idle = s->next;
		k->nidle--;
	}
	pthread_mutex_unlock(&k->mu);
	if (s) {
		curl_easy_reset(s->easy);
		return s;
	}
	s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->easy = curl_easy_init();
	s->multi = curl_multi_init();
	if (s->easy == NULL || s->multi == NULL) {
		slot_free(s);
		return NULL;
	}
	return s;
}

static void
slot_put(struct rs_kube *k, struct kslot *s)
{
	pthread_mutex_lock(&k->mu);
	if (k->nidle < KUBE_POOL_IDLE) {
		s->next = k->idle;
		k->idle = s;
		k->nidle++;
		s = NULL;
	}
	pthread_mutex_unlock(&k->mu);
	if (s)
		slot_free(s);
}

/* Lines came in this pass: the batch is out. In a storm (lines came
 * within settle_ms of the last ones), let the next batch gather, until
 * the next multiple of settle_ms on the monotonic clock: the streams of a
 * process that storm together (rs-watch's pods and their owners' echoes)
 * then end their windows at the same instant and their lines go out
 * together, one wake-up of the reader, not one a stream. A stream that
 * storms starts its passes on that grid, so its windows stay settle_ms
 * long; only the first one after a quiet spell is shorter. */
void
kreq_batch_idle(struct kreq *r, int running)
{
	int64_t now, window = r->batch->settle_ms * 1000000LL, until;
	struct timespec ts;
	int storm;

	if (!r->batch->idle(r->fn_arg)) {
		r->batch_last = 0;     /* a list's pass: no storm after it */
		return;
	}
	now = rs_mono_ns();
	storm = r->batch_last > 0 && now - r->batch_last < window;
	if (running && storm) {
		until = (now / window + 1) * window;
		ts.tv_sec = until / 1000000000;
		ts.tv_nsec = until % 1000000000;
		/* the reflectors' threads block signals: a stop is seen
		 * after the window, as it was after a full one */
		(void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
		    NULL);
		now = rs_mono_ns();
	}
	r->batch_last = now;   /* reading goes on from here */
}

/* curl_easy_perform, but polling r->stop every 100 ms. Returns 1 when
 * stopped, else 0 with the transfer's result in *cc. */
static int
slot_run(struct kslot *s, struct kreq *r, CURLcode *cc)
{
	int running = 1, q;
	CURLMsg *m;
	CURLMcode mc;

	*cc = CURLE_OK;
	if ((mc = curl_multi_add_handle(s->multi, s->easy)) != CURLM_OK) {
		*cc = mc == CURLM_OUT_OF_MEMORY ? CURLE_OUT_OF_MEMORY :
		    CURLE_FAILED_INIT;
		return 0;
	}
	while (running) {
		unsigned long lines = r->lines;

		mc = curl_multi_perform(s->multi, &running);
		if (mc != CURLM_OK)
			break;
		if (r->stop && *r->stop)
			break;
		if (r->batch && r->lines != lines)
			kreq_batch_idle(r, running);
		if (running)
			curl_multi_poll(s->multi, NULL, 0, r->stop ? 100 : 1000,
			    NULL);
	}
	if (running) {
		curl_multi_remove_handle(s->multi, s->easy);
		if (mc != CURLM_OK)
			*cc = CURLE_FAILED_INIT;
		return mc == CURLM_OK;
	}
	while ((m = curl_multi_info_read(s->multi, &q)) != NULL)
		if (m->msg == CURLMSG_DONE)
			*cc = m->data.result;
	curl_multi_remove_handle(s->multi, s->easy);
	return 0;
}

/* One attempt on libcurl. */
static rs_code
attempt_curl(struct kslot *s, struct kreq *r, int *stopped)
{
	CURLcode cc;
	rs_code rc;

	*stopped = 0;
	rc = kreq_prepare(r);
	if (rc != RS_OK)
		return rc;
	if (slot_run(s, r, &cc)) {
		kreq_info(r);
		*stopped = 1;
		return RS_OK;
	}
	r->resend = 0;
	return kreq_finish(r, cc);
}

/* One attempt of a stream on its own HTTP/2 connection; r->h2_curl: on
 * libcurl after all. */
static rs_code
attempt_h2(struct kslot *s, struct kreq *r, int *stopped)
{
	rs_code rc;

	rc = kube_h2_stream(r->k, &s->h2, r, stopped);
	if (rc != RS_OK || *stopped || r->h2_curl)
		return rc;
	r->resend = 0;
	return kreq_end(r, r->h2_cc);
}

rs_code
kube_perform(struct rs_kube *k, struct kreq *r)
{
	struct kslot *s = slot_get(k);
	rs_code rc = RS_OK;
	int stopped = 0;

	if (s == NULL)
		return RS_ENOMEM;
	r->easy = s->easy;
	for (;;) {
		r->resend = 0;
		r->h2_curl = 1;         /* unless kube_h2.c takes it */
		if (kube_h2_streams(k, r))
			rc = attempt_h2(s, r, &stopped);
		if (r->h2_curl)
			rc = attempt_curl(s, r, &stopped);
		if (rc == RS_OK && stopped) {
			kreq_count(r);  /* stats */
			kreq_log(r, "stopped");
			break;
		}
		if (!r->resend)
			break;
		kreq_reset(r);
		curl_easy_reset(r->easy);
	}
	r->easy = NULL;
	slot_put(k, s);
	return rc;
}

rs_code
kube_call(struct rs_kube *k, struct kreq *r, struct rs_kresp *resp)
{
	rs_code rc;

	kube_wait_token(k);
	rc = kube_perform(k, r);
	*resp = r->resp;
	memset(&r->resp, 0, sizeof r->resp);
	kreq_release(r);
	return rc;
}

static rs_code
kube_do(struct rs_kube *k, const char *method, const char *path,
    const char *ctype, const char *body, size_t body_len, const char *accept,
    struct rs_kresp *resp)
{
	struct kreq r;

	kreq_init(&r, k, method, path, ctype, body, body_len);
	if (accept)
		r.accept = accept;
	r.timeout_ms = k->timeout_ms;
	return kube_call(k, &r, resp);
}

rs_code
rs_kube_do(struct rs_kube *k, const char *method, const char *path,
    const char *ctype, const char *body, size_t body_len,
    struct rs_kresp *resp)
{
	return kube_do(k, method, path, ctype, body, body_len, NULL, resp);
}

rs_code
rs_kube_get_pb(struct rs_kube *k, const char *path, struct rs_kresp *resp)
{
	return kube_do(k, "GET", path, NULL, NULL, 0, RS_KUBE_PROTOBUF, resp);
}

rs_code
rs_kube_ready(struct rs_kube *k, long timeout_ms)
{
	struct kreq r;
	rs_code rc;

	kreq_init(&r, k, "GET", RS_KUBE_READYZ, NULL, NULL, 0);
	r.timeout_ms = timeout_ms;
	rc = kube_perform(k, &r);
	rs_kresp_free(&r.resp);
	kreq_release(&r);
	return rc;
}

char *
rs_kube_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out, *w;

	out = malloc(strlen(s) * 3 + 1);
	if (out == NULL)
		return NULL;
	for (w = out; *s; s++) {
		unsigned char c = *s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~') {
			*w++ = c;
		} else {
			*w++ = '%';
			*w++ = hex[c >> 4];
			*w++ = hex[c & 15];
		}
	}
	*w = '\0';
	return out;
}
