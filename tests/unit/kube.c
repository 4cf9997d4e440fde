/* Unit tests for the API client's parts that need no server: Status and
 * transport error decoding, the stream's line splitter, exec plugins and
 * credential caching, and the multi interface's order under the token
 * bucket (against a closed port, so every request fails at once); and an
 * asynchronous stream against a one-answer HTTP server on loopback. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "kube_internal.h"
#include "log.h"

static char tmpdir[64];

static int
setup(void **state)
{
	strcpy(tmpdir, "/tmp/rs-kube-test.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void
test_status_json(void **state)
{
	static const char body[] =
	    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
	    "\"status\":\"Failure\",\"message\":\"Pod \\\"p\\\" is invalid\","
	    "\"reason\":\"Invalid\",\"details\":{\"name\":\"p\",\"kind\":"
	    "\"Pod\",\"causes\":[{\"reason\":\"FieldValueRequired\","
	    "\"message\":\"Required value\",\"field\":\"spec.containers\"}],"
	    "\"retryAfterSeconds\":3},\"code\":422}";
	struct rs_kstatus st = { 0 };

	rs_kstatus_from_body(&st, 422, body, strlen(body), 0);
	assert_int_equal(st.code, 422);
	assert_string_equal(st.reason, "Invalid");
	assert_string_equal(st.message, "Pod \"p\" is invalid");
	assert_int_equal(cJSON_GetArraySize(st.causes), 1);
	assert_string_equal(rs_json_str(cJSON_GetArrayItem(st.causes, 0),
	    "field", NULL), "spec.containers");
	assert_int_equal(st.retry_after, 3);
	assert_int_equal(rs_kstatus_rc(&st), RS_EAPI);
	/* A Retry-After header wins over the body. */
	rs_kstatus_from_body(&st, 429, body, strlen(body), 7);
	assert_int_equal(st.retry_after, 7);
	rs_kstatus_clear(&st);
	assert_null(st.causes);
}

static void
test_status_not_json(void **state)
{
	static const char html[] = "<html>Bad Gateway</html>\r\n<body>x";
	struct rs_kstatus st = { 0 };

	rs_kstatus_from_body(&st, 502, html, strlen(html), 0);
	assert_string_equal(st.message, "HTTP 502: <html>Bad Gateway</html>");
	assert_string_equal(st.reason, "InternalError");
	rs_kstatus_from_body(&st, 503, NULL, 0, 0);
	assert_string_equal(st.message, "HTTP 503 (ServiceUnavailable)");
	/* JSON, but not a Status. */
	rs_kstatus_from_body(&st, 404, "{\"error\":\"x\"}", 13, 0);
	assert_string_equal(st.reason, "NotFound");
	assert_string_equal(st.message, "HTTP 404: {\"error\":\"x\"}");
	assert_int_equal(rs_kstatus_rc(&st), RS_ENOTFOUND);
	rs_kstatus_clear(&st);
}

static void
test_status_watch_event(void **state)
{
	/* A watch ERROR event carries a Status with its own code. */
	static const char ev[] = "{\"kind\":\"Status\",\"status\":\"Failure\","
	    "\"message\":\"too old resource version: 1 (2)\",\"reason\":"
	    "\"Expired\",\"code\":410}";
	struct rs_kstatus st = { 0 };
	cJSON *o;

	assert_int_equal(rs_json_parse(ev, strlen(ev), &o, NULL), RS_OK);
	rs_kstatus_from_json(&st, 0, o);
	assert_int_equal(st.code, 410);
	assert_string_equal(st.reason, "Expired");
	cJSON_Delete(o);
	rs_kstatus_clear(&st);
}

static void
test_transport_errors(void **state)
{
	struct rs_kstatus st = { 0 };

	assert_int_equal(rs_kstatus_transport(&st,
	    CURLE_PEER_FAILED_VERIFICATION, "SSL certificate problem: unable "
	    "to get local issuer certificate", "https://h:1"), RS_ETLS);
	assert_string_equal(st.message, "certificate verification failed for "
	    "https://h:1: SSL certificate problem: unable to get local issuer "
	    "certificate");
	assert_int_equal(st.code, 0);
	assert_int_equal(rs_kstatus_transport(&st, CURLE_SSL_CONNECT_ERROR,
	    "", "https://h:1"), RS_ETLS);
	assert_int_equal(rs_kstatus_transport(&st, CURLE_COULDNT_CONNECT,
	    "Connection refused", "https://h:1"), RS_ENET);
	assert_non_null(strstr(st.message, "unable to reach https://h:1"));
	assert_int_equal(rs_kstatus_transport(&st, CURLE_COULDNT_RESOLVE_HOST,
	    NULL, "https://h:1"), RS_ENET);
	assert_int_equal(rs_kstatus_transport(&st, CURLE_GOT_NOTHING, NULL,
	    "https://h:1"), RS_ENET);
	assert_int_equal(rs_kstatus_transport(&st, CURLE_OPERATION_TIMEDOUT,
	    "Operation timed out after 1000 milliseconds", "https://h:1"),
	    RS_ETIMEOUT);
	rs_kstatus_clear(&st);
}

struct lines {
	char got[16][64];
	int n;
	int fail_at;
};

static rs_code
collect(void *arg, char *line, size_t len)
{
	struct lines *l = arg;

	assert_int_equal(strlen(line), len);
	if (l->n < 16)
		snprintf(l->got[l->n], sizeof l->got[0], "%s", line);
	l->n++;
	return l->n == l->fail_at ? RS_EPARSE : RS_OK;
}

static void
test_line_splitter(void **state)
{
	static const char *const chunks[] = { "{\"a\":1}\n{\"b\"", ":2}\r\n",
	    "\n", "{\"c\":3}\n{\"d\":", "4}" };
	struct lines l = { .n = 0 };
	struct kreq r;
	size_t i;

	kreq_init(&r, NULL, "GET", "/", NULL, NULL, 0);
	r.fn = collect;
	r.fn_arg = &l;
	for (i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
		assert_int_equal(kube_stream_data(&r, chunks[i],
		    strlen(chunks[i])), strlen(chunks[i]));
	assert_int_equal(l.n, 3);
	assert_int_equal(kube_stream_flush(&r), RS_OK);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.got[0], "{\"a\":1}");
	assert_string_equal(l.got[1], "{\"b\":2}");
	assert_string_equal(l.got[2], "{\"c\":3}");
	assert_string_equal(l.got[3], "{\"d\":4}");
	kreq_release(&r);

	/* fn's error stops the stream with that code. */
	memset(&l, 0, sizeof l);
	l.fail_at = 2;
	kreq_init(&r, NULL, "GET", "/", NULL, NULL, 0);
	r.fn = collect;
	r.fn_arg = &l;
	assert_int_equal(kube_stream_data(&r, "a\nb\nc\n", 6), 0);
	assert_int_equal(r.cb_rc, RS_EPARSE);
	assert_int_equal(l.n, 2);
	kreq_release(&r);
}

static void
test_line_too_long(void **state)
{
	struct lines l = { .n = 0 };
	size_t chunk = 1 << 20, sent = 0, took;
	char *buf = malloc(chunk);
	struct kreq r;

	assert_non_null(buf);
	memset(buf, 'x', chunk);
	kreq_init(&r, NULL, "GET", "/", NULL, NULL, 0);
	r.fn = collect;
	r.fn_arg = &l;
	assert_int_equal(kube_stream_data(&r, "ok\n", 3), 3);
	/* 64 MiB of one line is accepted; one more byte is not. */
	while (sent < KUBE_MAX_LINE) {
		took = kube_stream_data(&r, buf, chunk);
		assert_int_equal(took, chunk);
		sent += chunk;
	}
	assert_int_equal(kube_stream_data(&r, "y", 1), 0);
	assert_int_equal(r.cb_rc, RS_ETOOBIG);
	assert_int_equal(l.n, 1);
	assert_true(r.line_cap <= KUBE_MAX_LINE + 1);
	kreq_release(&r);
	free(buf);
}

static void
test_escape(void **state)
{
	char *e = rs_kube_escape("app in (a,b),tier!=x y/z~");

	assert_string_equal(e, "app%20in%20%28a%2Cb%29%2Ctier%21%3Dx%20y%2Fz~");
	free(e);
}

/* A plugin script printing out, counting its runs in tmpdir/count. */
static struct rs_kube_config *
plugin_config(const char *api, const char *out)
{
	struct rs_kube_config *c = calloc(1, sizeof *c);
	char path[256];
	FILE *fp;

	snprintf(path, sizeof path, "%s/plugin", tmpdir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "#!/bin/sh\n"
	    "n=$(cat %s/count 2>/dev/null || echo 0)\n"
	    "echo $((n + 1)) > %s/count\n"
	    "printf '%%s' \"$KUBERNETES_EXEC_INFO\" > %s/info\n"
	    "printf '%%s' \"$FROM_CONFIG\" > %s/env\n"
	    "cat <<'EOF'\n%s\nEOF\n", tmpdir, tmpdir, tmpdir, tmpdir, out);
	fclose(fp);
	chmod(path, 0755);
	c->server = strdup("https://h:6443");
	c->ca_data = strdup("CA!");
	c->ca_data_len = 3;
	c->exec = calloc(1, sizeof *c->exec);
	c->exec->command = strdup(path);
	c->exec->api_version = strdup(api);
	c->exec->args = calloc(1, sizeof(char *));
	c->exec->env = calloc(2, sizeof(char *));
	c->exec->env[0] = strdup("FROM_CONFIG=yes");
	c->exec->provide_cluster_info = 1;
	return c;
}

static int
plugin_runs(void)
{
	char path[256];
	int n = 0;
	FILE *fp;

	snprintf(path, sizeof path, "%s/count", tmpdir);
	fp = fopen(path, "r");
	if (fp) {
		if (fscanf(fp, "%d", &n) != 1)
			n = -1;
		fclose(fp);
	}
	return n;
}

static char *
slurp(const char *name)
{
	static char buf[4096];
	char path[256];
	size_t n = 0;
	FILE *fp;

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	fp = fopen(path, "r");
	if (fp) {
		n = fread(buf, 1, sizeof buf - 1, fp);
		fclose(fp);
	}
	buf[n] = '\0';
	return buf;
}

static void
test_exec_outputs(void **state)
{
	static const struct {
		const char *api, *out, *err;
	} bad[] = {
		{ "client.authentication.k8s.io/v1", "not json at all: [",
		    "decoding stdout" },
		{ "client.authentication.k8s.io/v1",
		    "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
		    "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}",
		    "plugin returned version client.authentication.k8s.io/"
		    "v1beta1" },
		{ "client.authentication.k8s.io/v1",
		    "{\"apiVersion\":\"client.authentication.k8s.io/v1\"}",
		    "didn't return a status" },
		{ "client.authentication.k8s.io/v1",
		    "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
		    "\"status\":{}}",
		    "didn't return a token or cert/key pair" },
		{ "client.authentication.k8s.io/v1",
		    "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
		    "\"status\":{\"clientCertificateData\":\"PEM\"}}",
		    "only certificate or key" },
	};
	struct rs_kube_config *c;
	struct rs_exec_cred x;
	char err[512];
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		c = plugin_config(bad[i].api, bad[i].out);
		err[0] = '\0';
		assert_int_not_equal(rs_exec_run(c, &x, err, sizeof err),
		    RS_OK);
		assert_non_null(strstr(err, bad[i].err));
		assert_null(x.token);
		rs_kube_config_free(c);
	}

	c = plugin_config("client.authentication.k8s.io/v1beta1",
	    "apiVersion: client.authentication.k8s.io/v1beta1\n"
	    "kind: ExecCredential\n"
	    "status:\n"
	    "  clientCertificateData: CERT\n"
	    "  clientKeyData: KEY\n"
	    "  expirationTimestamp: 2030-01-02T03:04:05Z\n");
	assert_int_equal(rs_exec_run(c, &x, err, sizeof err), RS_OK);
	assert_null(x.token);
	assert_string_equal(x.cert, "CERT");
	assert_int_equal(x.key_len, 3);
	assert_true(x.expiry > 1893553445 - 1 && x.expiry < 1893553445 + 1);
	assert_string_equal(slurp("env"), "yes");
	assert_string_equal(slurp("info"), "{\"kind\":\"ExecCredential\","
	    "\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
	    "\"spec\":{\"interactive\":false,\"cluster\":{\"server\":"
	    "\"https://h:6443\",\"certificate-authority-data\":\"Q0Eh\"}}}");
	rs_exec_cred_free(&x);
	rs_kube_config_free(c);
}

static void
test_exec_cache(void **state)
{
	struct rs_kube_config *c;
	struct rs_kauth *a;
	struct rs_kcred cr;
	char err[256];
	unsigned gen;

	/* Valid until 2099: cached, until a 401 retires it. */
	c = plugin_config("client.authentication.k8s.io/v1",
	    "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	    "\"status\":{\"token\":\"tok\",\"expirationTimestamp\":"
	    "\"2099-01-01T00:00:00Z\"}}");
	assert_int_equal(rs_kauth_new(c, &a, err, sizeof err), RS_OK);
	assert_int_equal(plugin_runs(), 0);
	assert_int_equal(rs_kauth_get(a, &cr, err, sizeof err), RS_OK);
	assert_string_equal(cr.token, "tok");
	gen = cr.gen;
	rs_kcred_free(&cr);
	assert_int_equal(rs_kauth_get(a, &cr, err, sizeof err), RS_OK);
	assert_int_equal(cr.gen, gen);
	rs_kcred_free(&cr);
	assert_int_equal(plugin_runs(), 1);
	assert_int_equal(rs_kauth_unauthorized(a, gen), 1);
	/* A second 401 for the same generation runs it only once. */
	assert_int_equal(rs_kauth_unauthorized(a, gen), 1);
	assert_int_equal(rs_kauth_get(a, &cr, err, sizeof err), RS_OK);
	assert_int_not_equal(cr.gen, gen);
	rs_kcred_free(&cr);
	assert_int_equal(plugin_runs(), 2);
	rs_kauth_free(a);
	rs_kube_config_free(c);

	/* Expired already: run for every request. */
	unlink(strcat(strcpy(err, tmpdir), "/count"));
	c = plugin_config("client.authentication.k8s.io/v1",
	    "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	    "\"status\":{\"token\":\"tok\",\"expirationTimestamp\":"
	    "\"2001-01-01T00:00:00Z\"}}");
	assert_int_equal(rs_kauth_new(c, &a, err, sizeof err), RS_OK);
	assert_int_equal(rs_kauth_get(a, &cr, err, sizeof err), RS_OK);
	rs_kcred_free(&cr);
	assert_int_equal(rs_kauth_get(a, &cr, err, sizeof err), RS_OK);
	rs_kcred_free(&cr);
	assert_int_equal(plugin_runs(), 2);
	rs_kauth_free(a);
	rs_kube_config_free(c);
}

static void
test_exec_not_with_token(void **state)
{
	struct rs_kube_config *c;
	struct rs_kauth *a;
	struct rs_kcred cr;
	char err[256];

	/* As client-go: a token in the kubeconfig wins over the plugin. */
	c = plugin_config("client.authentication.k8s.io/v1", "{}");
	c->token = strdup("static");
	assert_int_equal(rs_kauth_new(c, &a, err, sizeof err), RS_OK);
	assert_int_equal(rs_kauth_get(a, &cr, err, sizeof err), RS_OK);
	assert_string_equal(cr.token, "static");
	assert_int_equal(rs_kauth_unauthorized(a, cr.gen), 0);
	rs_kcred_free(&cr);
	assert_int_equal(plugin_runs(), 0);
	rs_kauth_free(a);
	rs_kube_config_free(c);
}

static void
test_token_file(void **state)
{
	struct rs_kube_config *c = calloc(1, sizeof *c);
	struct rs_kauth *a;
	struct rs_kcred cr;
	char err[256], path[256];
	FILE *fp;

	snprintf(path, sizeof path, "%s/token", tmpdir);
	c->server = strdup("https://h:1");
	c->token_file = strdup(path);
	assert_int_equal(rs_kauth_new(c, &a, err, sizeof err), RS_ECONFIG);
	assert_non_null(strstr(err, path));
	fp = fopen(path, "w");
	fputs("  one\n", fp);
	fclose(fp);
	assert_int_equal(rs_kauth_new(c, &a, err, sizeof err), RS_OK);
	assert_int_equal(rs_kauth_get(a, &cr, err, sizeof err), RS_OK);
	assert_string_equal(cr.token, "one");
	/* Rotated: a 401 re-reads the file at once and is worth a retry. */
	fp = fopen(path, "w");
	fputs("two", fp);
	fclose(fp);
	assert_int_equal(rs_kauth_unauthorized(a, cr.gen), 1);
	rs_kcred_free(&cr);
	assert_int_equal(rs_kauth_get(a, &cr, err, sizeof err), RS_OK);
	assert_string_equal(cr.token, "two");
	/* Not rotated: no retry. */
	assert_int_equal(rs_kauth_unauthorized(a, cr.gen), 0);
	rs_kcred_free(&cr);
	rs_kauth_free(a);
	rs_kube_config_free(c);
}

struct order {
	int seen[8];
	int n;
	int64_t at[8];
	rs_code rc[8];
};

struct tag {
	struct order *o;
	int i;
};

static void
order_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct tag *t = arg;
	struct order *o = t->o;

	o->seen[o->n] = t->i;
	o->rc[o->n] = rc;
	o->at[o->n] = rs_mono_ns();
	o->n++;
	assert_int_equal(resp->code, 0);
	assert_non_null(strstr(resp->status.message, "unable to reach"));
}

static void
test_multi_order_and_rate(void **state)
{
	struct rs_kube_opts ko = { .qps = 20, .burst = 1, .timeout_ms = 2000,
	    .user_agent = "test" };
	struct rs_kube_config *c = calloc(1, sizeof *c);
	struct order o = { .n = 0 };
	struct tag tags[6];
	struct rs_kube *k;
	struct rs_kresp r;
	int64_t t0;
	int i, left;

	c->server = strdup("http://127.0.0.1:1");
	assert_int_equal(rs_kube_new(c, &ko, &k), RS_OK);
	/* Blocking: a closed port is a network error, nothing more. */
	assert_int_equal(rs_kube_do(k, "GET", "/api", NULL, NULL, 0, &r),
	    RS_ENET);
	assert_int_equal(r.code, 0);
	rs_kresp_free(&r);
	/* With a burst of 1, 6 requests at 20/s take at least 250 ms, and
	 * complete in the order submitted. */
	t0 = rs_mono_ns();
	for (i = 0; i < 6; i++) {
		tags[i].o = &o;
		tags[i].i = i;
		assert_int_equal(rs_kube_submit(k, "POST", "/x", NULL, "{}", 2,
		    order_done, &tags[i]), RS_OK);
	}
	left = 6;
	while ((left = rs_kube_run(k, 1000, -1)) > 0)
		;
	assert_int_equal(o.n, 6);
	for (i = 0; i < 6; i++) {
		assert_int_equal(o.seen[i], i);
		assert_int_equal(o.rc[i], RS_ENET);
	}
	assert_true(o.at[5] - t0 >= 240 * 1000000LL);
	assert_true(o.at[5] - t0 < 1000 * 1000000LL);
	/* Consecutive starts are about 50 ms apart, not bunched. */
	assert_true(o.at[5] - o.at[4] >= 35 * 1000000LL);
	/* Nothing queued, no fd: returns at once. */
	t0 = rs_mono_ns();
	assert_int_equal(rs_kube_run(k, 500, -1), 0);
	assert_true(rs_mono_ns() - t0 < 100 * 1000000LL);
	rs_kube_free(k);
}

static void
test_multi_extra_fd(void **state)
{
	struct rs_kube_config *c = calloc(1, sizeof *c);
	struct rs_kube *k;
	int64_t t0;
	int p[2];

	c->server = strdup("http://127.0.0.1:1");
	assert_int_equal(rs_kube_new(c, NULL, &k), RS_OK);
	assert_int_equal(pipe(p), 0);
	t0 = rs_mono_ns();
	assert_int_equal(rs_kube_run(k, 200, p[0]), 0);
	assert_true(rs_mono_ns() - t0 >= 190 * 1000000LL);
	assert_int_equal(write(p[1], "x", 1), 1);
	t0 = rs_mono_ns();
	assert_int_equal(rs_kube_run(k, 5000, p[0]), 0);
	assert_true(rs_mono_ns() - t0 < 1000 * 1000000LL);
	close(p[0]);
	close(p[1]);
	rs_kube_free(k);
}

/* One answer over HTTP/1.1: a line, then, once told (go), another and
 * the end. */
struct srv {
	int lfd, go[2];
};

static void *
serve_one(void *arg)
{
	static const char head[] = "HTTP/1.1 200 OK\r\n"
	    "Content-Type: application/json\r\nConnection: close\r\n\r\n";
	struct srv *sv = arg;
	char buf[4096], c;
	size_t n = 0;
	ssize_t r;
	int fd;

	fd = accept(sv->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 -
	    n)) > 0) {
		n += r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	if (write(fd, head, sizeof head - 1) > 0 &&
	    write(fd, "{\"n\":1}\n", 8) > 0 && read(sv->go[0], &c, 1) == 1)
		(void)!write(fd, "{\"n\":2}\n", 8);
	close(fd);
	return NULL;
}

struct stream_seen {
	int n, ended;
	rs_code rc;
};

static rs_code
count_line(void *arg, char *line, size_t len)
{
	struct stream_seen *l = arg;

	assert_int_equal(len, 7);
	l->n++;
	return RS_OK;
}

static void
stream_end(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct stream_seen *l = arg;

	l->ended = 1;
	l->rc = rc;
}

/* A listening socket on a free loopback port; c->server points at it. */
static int
loopback_server(struct rs_kube_config *c, int backlog)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof a;
	int fd;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(fd, backlog), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	assert_true(asprintf(&c->server, "http://127.0.0.1:%d",
	    ntohs(a.sin_port)) > 0);
	return fd;
}

/* rs_kube_run returns as a line arrives, the stream still open: a watch's
 * event is acted on at once, not when the run's time is up. */
static void
test_multi_stream(void **state)
{
	struct rs_kube_config *c = calloc(1, sizeof *c);
	struct stream_seen l = { 0 };
	struct srv sv;
	struct rs_kube *k;
	pthread_t t;
	int64_t t0;

	sv.lfd = loopback_server(c, 1);
	assert_int_equal(pipe(sv.go), 0);
	assert_int_equal(pthread_create(&t, NULL, serve_one, &sv), 0);
	assert_int_equal(rs_kube_new(c, NULL, &k), RS_OK);
	assert_int_equal(rs_kube_submit_stream(k, "/w?watch=1", 10000,
	    count_line, &l, stream_end, &l), RS_OK);
	t0 = rs_mono_ns();
	while (l.n == 0 && rs_mono_ns() - t0 < 5000 * 1000000LL)
		assert_int_equal(rs_kube_run(k, 5000, -1), 1);
	assert_int_equal(l.n, 1);
	assert_false(l.ended);
	assert_true(rs_mono_ns() - t0 < 2000 * 1000000LL);
	assert_int_equal(write(sv.go[1], "x", 1), 1);
	while (rs_kube_run(k, 1000, -1) > 0)
		;
	assert_true(l.ended);
	assert_int_equal(l.rc, RS_OK);
	assert_int_equal(l.n, 2);
	pthread_join(t, NULL);
	close(sv.lfd);
	close(sv.go[0]);
	close(sv.go[1]);
	rs_kube_free(k);
}

/* Answers every request 401 (closing), counting them; the first one
 * rotates the token file first, so that the client resends it. */
struct srv401 {
	int lfd, n;
	char token[256];
};

static void *
serve_401(void *arg)
{
	static const char ans[] = "HTTP/1.1 401 Unauthorized\r\n"
	    "Content-Type: application/json\r\nContent-Length: 2\r\n"
	    "Connection: close\r\n\r\n{}";
	struct srv401 *sv = arg;
	struct pollfd p = { .fd = sv->lfd, .events = POLLIN };
	char buf[4096];
	size_t n;
	ssize_t r;
	FILE *fp;
	int fd;

	while (poll(&p, 1, 1500) == 1 && (fd = accept(sv->lfd, NULL,
	    NULL)) >= 0) {
		n = 0;
		while (n < sizeof buf - 1 && (r = read(fd, buf + n,
		    sizeof buf - 1 - n)) > 0) {
			n += r;
			buf[n] = '\0';
			if (strstr(buf, "\r\n\r\n") && strstr(buf, "{}"))
				break;
		}
		if (sv->n++ == 0 && (fp = fopen(sv->token, "w")) != NULL) {
			fputs("rotated", fp);
			fclose(fp);
		}
		(void)!write(fd, ans, sizeof ans - 1);
		close(fd);
	}
	return NULL;
}

static int gate_calls;

/* Lets the first start through, refuses any later one. */
static int
gate_once(void *arg, const char *method, const char *path, char *why,
    size_t len)
{
	if (gate_calls++ == 0)
		return 1;
	snprintf(why, len, "fenced");
	return 0;
}

/* A request sent once more after a 401 (fresh credentials) starts again:
 * the gate is asked again, and a refusal keeps it from the network. */
static void
test_multi_gate_on_resend(void **state)
{
	struct rs_kube_config *c = calloc(1, sizeof *c);
	struct stream_seen l = { 0 };
	struct srv401 sv = { 0 };
	struct rs_kube *k;
	pthread_t t;
	FILE *fp;

	snprintf(sv.token, sizeof sv.token, "%s/token", tmpdir);
	assert_non_null(fp = fopen(sv.token, "w"));
	fputs("first", fp);
	fclose(fp);
	sv.lfd = loopback_server(c, 4);
	assert_int_equal(pthread_create(&t, NULL, serve_401, &sv), 0);
	c->token_file = strdup(sv.token);
	assert_int_equal(rs_kube_new(c, NULL, &k), RS_OK);
	rs_kube_set_gate(k, gate_once, NULL);
	gate_calls = 0;
	assert_int_equal(rs_kube_submit(k, "POST", "/x", NULL, "{}", 2,
	    stream_end, &l), RS_OK);
	while (rs_kube_run(k, 1000, -1) > 0)
		;
	assert_true(l.ended);
	assert_int_equal(gate_calls, 2);
	assert_int_equal(l.rc, RS_EREFUSED);
	pthread_join(t, NULL);
	assert_int_equal(sv.n, 1);
	close(sv.lfd);
	rs_kube_free(k);
}

/* HTTP/1.1 keep-alive: counts requests, and answers the first only once
 * told (go); ends after 1.5 s without one. */
struct srvslow {
	int lfd, go[2], n;
};

static int
read_request(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[4096];
	size_t n = 0;
	ssize_t r;

	while (n < sizeof buf - 1 && poll(&p, 1, 1500) == 1 &&
	    (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) {
		n += r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n{}"))
			return 1;
	}
	return 0;
}

static void *
serve_slow(void *arg)
{
	static const char ans[] = "HTTP/1.1 200 OK\r\n"
	    "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
	struct srvslow *sv = arg;
	struct pollfd p = { .fd = sv->lfd, .events = POLLIN };
	char c;
	int fd;

	while (poll(&p, 1, 1500) == 1 && (fd = accept(sv->lfd, NULL,
	    NULL)) >= 0) {
		while (read_request(fd)) {
			if (sv->n++ == 0 && read(sv->go[0], &c, 1) != 1)
				break;
			(void)!write(fd, ans, sizeof ans - 1);
		}
		close(fd);
	}
	return NULL;
}

static int gate_open;

static int
gate_flag(void *arg, const char *method, const char *path, char *why,
    size_t len)
{
	if (gate_open)
		return 1;
	snprintf(why, len, "fenced");
	return 0;
}

struct two {
	int n;
	rs_code rc[2];
};

static void
two_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct two *t = arg;

	t->rc[t->n++] = rc;
}

/* A request the gate let start, but that waited in libcurl for a
 * connection (the one it shares is busy, or still in its handshake),
 * asks the gate again as it leaves: a fence that has passed meanwhile
 * keeps it from the network. */
static void
test_multi_gate_on_send(void **state)
{
	struct rs_kube_opts ko = { .max_running = 8, .streams = 8,
	    .user_agent = "test" };
	struct rs_kube_config *c = calloc(1, sizeof *c);
	struct srvslow sv = { 0 };
	struct two tw = { 0 };
	struct rs_kube *k;
	pthread_t t;
	int i;

	sv.lfd = loopback_server(c, 4);
	assert_int_equal(pipe(sv.go), 0);
	assert_int_equal(pthread_create(&t, NULL, serve_slow, &sv), 0);
	assert_int_equal(rs_kube_new(c, &ko, &k), RS_OK);
	rs_kube_set_gate(k, gate_flag, NULL);
	gate_open = 1;
	for (i = 0; i < 2; i++)
		assert_int_equal(rs_kube_submit(k, "POST", "/x", NULL, "{}", 2,
		    two_done, &tw), RS_OK);
	/* both started: the first on the connection, the second waiting */
	for (i = 0; i < 5; i++)
		rs_kube_run(k, 50, -1);
	assert_int_equal(tw.n, 0);
	gate_open = 0;
	assert_int_equal(write(sv.go[1], "x", 1), 1);
	while (rs_kube_run(k, 1000, -1) > 0)
		;
	assert_int_equal(tw.n, 2);
	assert_int_equal(tw.rc[0], RS_OK);
	assert_int_equal(tw.rc[1], RS_EREFUSED);
	pthread_join(t, NULL);
	assert_int_equal(sv.n, 1);
	close(sv.lfd);
	close(sv.go[0]);
	close(sv.go[1]);
	rs_kube_free(k);
}

/* Nothing listens: the answer says refused (and not sent), which is what
 * lets rs-watch and rs-apply poll for the server's return. */
static void
test_refused(void **state)
{
	struct rs_kube_opts ko = { .user_agent = "test" };
	struct rs_kube_config *c = calloc(1, sizeof *c);
	struct rs_kresp resp;
	struct rs_kube *k;

	(void)state;
	close(loopback_server(c, 1));
	assert_int_equal(rs_kube_new(c, &ko, &k), RS_OK);
	memset(&resp, 0, sizeof resp);
	assert_int_equal(rs_kube_do(k, "GET", "/api", NULL, NULL, 0, &resp),
	    RS_ENET);
	assert_int_equal(resp.refused, 1);
	assert_int_equal(resp.sent, 0);
	rs_kresp_free(&resp);
	assert_int_equal(rs_kube_ready(k, 1000), RS_ENET);
	rs_kube_free(k);
}

/* A server that answers: ready, and its answer's body is freed (under
 * ASan, a leak fails the test). */
static void
test_ready(void **state)
{
	struct rs_kube_opts ko = { .user_agent = "test" };
	struct rs_kube_config *c = calloc(1, sizeof *c);
	struct rs_kube *k;
	struct srv sv;
	pthread_t t;

	(void)state;
	sv.lfd = loopback_server(c, 1);
	assert_int_equal(pipe(sv.go), 0);
	assert_int_equal(write(sv.go[1], "x", 1), 1);
	assert_int_equal(pthread_create(&t, NULL, serve_one, &sv), 0);
	assert_int_equal(rs_kube_new(c, &ko, &k), RS_OK);
	assert_int_equal(rs_kube_ready(k, 5000), RS_OK);
	pthread_join(t, NULL);
	close(sv.lfd);
	close(sv.go[0]);
	close(sv.go[1]);
	rs_kube_free(k);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_json),
		cmocka_unit_test(test_status_not_json),
		cmocka_unit_test(test_status_watch_event),
		cmocka_unit_test(test_transport_errors),
		cmocka_unit_test(test_line_splitter),
		cmocka_unit_test(test_line_too_long),
		cmocka_unit_test(test_escape),
		cmocka_unit_test_setup_teardown(test_exec_outputs, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_exec_cache, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_exec_not_with_token, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_token_file, setup,
		    teardown),
		cmocka_unit_test(test_multi_order_and_rate),
		cmocka_unit_test(test_multi_extra_fd),
		cmocka_unit_test(test_multi_stream),
		cmocka_unit_test_setup_teardown(test_multi_gate_on_resend,
		    setup, teardown),
		cmocka_unit_test(test_multi_gate_on_send),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_ready),
	};

	rs_log_init("kube-test");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
