/* req.c: every API request of rs-apply goes through req_send, which either
 * hands it to the curl multi client (many in flight, the client's token
 * bucket applying QPS and burst to all of them, events included) or, with
 * --dry-run, prints it as one NDJSON line and completes it as a success.
 * Completions never run inside req_send, so a step can send a whole batch
 * before any of it comes back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "clock.h"
#include "json.h"
#include "log.h"

struct req {
	struct req *next;              /* on the deferred or later list */
	req_done_fn done;
	void *arg;
	char *method, *path, *body;
	const char *ctype;             /* a literal, or NULL */
	int body_borrowed;             /* body is the caller's */
	int64_t start_ns;              /* for -v 4; a later one: when due */
	rs_code rc;                    /* deferred result */
	struct rs_kresp resp;
};

static void later_due(void);
static struct req *deferred, **deferred_tail = &deferred;
static struct req *later;          /* waiting for their time, soonest first */
static size_t pending, nlater;

size_t
req_pending(void)
{
	return pending;
}

static void
req_free(struct req *r)
{
	free(r->method);
	free(r->path);
	if (!r->body_borrowed)
		free(r->body);
	free(r);
}

static void
req_finish(struct req *r, rs_code rc, struct rs_kresp *resp)
{
	if (RS_V(4)) {
		char buf[256];

		rs_info(4, "%s %s: %ld%s%s (%.1f ms)", r->method, r->path,
		    resp ? resp->code : 0L, rc == RS_OK ? "" : " ",
		    rc == RS_OK ? "" : req_errmsg(rc, resp, buf, sizeof buf),
		    (rs_mono_ns() - r->start_ns) / 1e6);
	}
	pending--;
	reach_seen(resp);
	r->done(r->arg, rc, resp);
	req_free(r);
}

static void
req_complete(void *arg, rs_code rc, struct rs_kresp *resp)
{
	req_finish(arg, rc, resp);
}

static void
req_defer(struct req *r, rs_code rc, long code, const char *message)
{
	r->rc = rc;
	r->resp.code = code;
	r->resp.status.code = rc == RS_OK ? 0 : code;
	if (message)
		snprintf(r->resp.status.message, sizeof r->resp.status.message,
		    "%s", message);
	*deferred_tail = r;
	deferred_tail = &r->next;
}

int
req_poll(void)
{
	int n = 0;

	later_due();
	while (deferred != NULL) {
		struct req *r = deferred;

		deferred = r->next;
		if (deferred == NULL)
			deferred_tail = &deferred;
		req_finish(r, r->rc, &r->resp);
		n++;
	}
	return n;
}

/* {"method":...,"path":...,"body":...} on stdout. */
static void
dry_print(const struct req *r)
{
	cJSON *o = cJSON_CreateObject(), *b = NULL;
	char *s;

	if (o == NULL)
		goto oom;
	cJSON_AddStringToObject(o, "method", r->method);
	cJSON_AddStringToObject(o, "path", r->path);
	if (r->body != NULL) {
		if (rs_json_parse(r->body, strlen(r->body), &b, NULL) != RS_OK)
			b = cJSON_CreateString(r->body);
		cJSON_AddItemToObject(o, "body", b);
	}
	if ((s = rs_json_print(o)) == NULL)
		goto oom;
	if (rs_line_put(&app.out, s, strlen(s)) != RS_OK)
		rs_fatal(111, "unable to write to stdout: %s", strerror(errno));
	cJSON_free(s);
	cJSON_Delete(o);
	return;
oom:
	rs_fatal(111, "unable to print a request: %s", rs_strerror(RS_ENOMEM));
}

static struct req *
req_new(const char *method, const char *path, const char *ctype,
    const char *body, int borrow, req_done_fn done, void *arg)
{
	struct req *r = calloc(1, sizeof *r);

	if (r == NULL)
		goto oom;
	r->method = strdup(method);
	r->path = strdup(path);
	r->ctype = ctype;
	r->body = borrow || body == NULL ? (char *)body : strdup(body);
	r->body_borrowed = borrow;
	if (r->method == NULL || r->path == NULL || (body && r->body == NULL))
		goto oom;
	r->done = done;
	r->arg = arg;
	pending++;
	return r;
oom:
	rs_fatal(111, "unable to send %s %s: %s", method, path,
	    rs_strerror(RS_ENOMEM));
}

static void
req_go(struct req *r)
{
	char why[512];
	rs_code rc;

	r->start_ns = rs_mono_ns();
	if (!fence_gate(NULL, r->method, r->path, why, sizeof why)) {
		req_defer(r, RS_EREFUSED, 0, why);
		return;
	}
	if (app.dry_run) {
		dry_print(r);
		req_defer(r, RS_OK, strcmp(r->method, "POST") == 0 ? 201 : 200,
		    NULL);
		return;
	}
	if (RS_V(6) && r->body != NULL)
		rs_info(6, "%s %s %s", r->method, r->path, r->body);
	/* r, and so its body, lives until req_complete has run. */
	rc = rs_kube_submit_borrowed(app.kube, r->method, r->path, r->ctype,
	    r->body, r->body ? strlen(r->body) : 0, req_complete, r);
	if (rc != RS_OK)
		req_defer(r, rc, 0, rs_strerror(rc));
}

static void
send_one(const char *method, const char *path, const char *ctype,
    const char *body, int borrow, req_done_fn done, void *arg)
{
	req_go(req_new(method, path, ctype, body, borrow, done, arg));
}

void
req_send_later(double after, const char *method, const char *path,
    req_done_fn done, void *arg)
{
	struct req *r = req_new(method, path, NULL, NULL, 0, done, arg), **p;

	r->start_ns = rs_mono_ns() + (int64_t)(after * 1e9);
	for (p = &later; *p != NULL && (*p)->start_ns <= r->start_ns;
	    p = &(*p)->next)
		;
	r->next = *p;
	*p = r;
	nlater++;
}

/* Sends the later requests whose time has come. */
static void
later_due(void)
{
	int64_t now = rs_mono_ns();
	struct req *r;

	while ((r = later) != NULL && r->start_ns <= now) {
		later = r->next;
		r->next = NULL;
		nlater--;
		req_go(r);
	}
}

int
req_token_ready(void)
{
	return app.kube == NULL || rs_kube_token_ready(app.kube);
}

int
req_wait_ms(int ms)
{
	int64_t left;

	if (later == NULL)
		return ms;
	left = (later->start_ns - rs_mono_ns() + 999999) / 1000000;
	if (left < 0)
		left = 0;
	return left < ms ? (int)left : ms;
}

size_t
req_in_flight(void)
{
	return pending - nlater;
}

void
req_send(const char *method, const char *path, const char *ctype,
    const char *body, req_done_fn done, void *arg)
{
	send_one(method, path, ctype, body, 0, done, arg);
}

void
req_send_borrowed(const char *method, const char *path, const char *ctype,
    const char *body, req_done_fn done, void *arg)
{
	send_one(method, path, ctype, body, 1, done, arg);
}

const char *
req_errmsg(rs_code rc, const struct rs_kresp *resp, char *buf, size_t len)
{
	if (resp != NULL && resp->status.message[0] != '\0')
		return resp->status.message;
	if (resp != NULL && resp->code != 0)
		snprintf(buf, len, "the server responded with HTTP %ld",
		    resp->code);
	else
		snprintf(buf, len, "%s", rs_strerror(rc));
	return buf;
}

/* A write that failed without saying so: the server may have carried it
 * out (it was sent and no answer came, or the server failed on its side
 * and may have stored it first, as a 504 whose handler goes on). A 4xx,
 * 429 included, is the server refusing before it stores anything. */
int
req_unknown(rs_code rc, const struct rs_kresp *resp)
{
	if (rc == RS_OK || resp == NULL)
		return 0;
	if (resp->code == 0)
		return resp->sent;
	return resp->code >= 500;
}

int
req_has_cause(const struct rs_kresp *resp, const char *cause)
{
	const cJSON *c;

	if (resp == NULL)
		return 0;
	cJSON_ArrayForEach(c, resp->status.causes) {
		const char *r = rs_json_str(c, "reason", NULL);

		if (r != NULL && strcmp(r, cause) == 0)
			return 1;
	}
	return 0;
}

/* apierrors.IsNotFound and friends: the Status reason, or the HTTP code
 * when the server gave no reason. */
int
req_is(rs_code rc, const struct rs_kresp *resp, const char *reason)
{
	long code = 0;

	if (rc == RS_OK || resp == NULL)
		return 0;
	if (resp->status.reason[0] != '\0')
		return strcmp(resp->status.reason, reason) == 0;
	if (strcmp(reason, "NotFound") == 0)
		code = 404;
	else if (strcmp(reason, "Invalid") == 0)
		code = 422;
	else if (strcmp(reason, "Conflict") == 0)
		code = 409;
	return code != 0 && (resp->code == code || resp->status.code == code);
}
