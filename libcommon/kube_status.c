/* kube_status.c: errors as the API server and the network give them,
 * decoded into struct rs_kstatus. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kube_internal.h"
#include "protobuf.h"

void
rs_kstatus_clear(struct rs_kstatus *st)
{
	cJSON_Delete(st->causes);
	memset(st, 0, sizeof *st);
}

/* The reason client-go's errors.NewGenericServerResponse gives a code
 * when the body does not say. */
static const char *
reason_of(long code)
{
	switch (code) {
	case 400: return "BadRequest";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "NotFound";
	case 405: return "MethodNotAllowed";
	case 406: return "NotAcceptable";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 413: return "RequestEntityTooLarge";
	case 415: return "UnsupportedMediaType";
	case 422: return "Invalid";
	case 429: return "TooManyRequests";
	case 500: return "InternalError";
	case 503: return "ServiceUnavailable";
	case 504: return "Timeout";
	}
	return code >= 500 ? "InternalError" : "Unknown";
}

rs_code
rs_kstatus_rc(const struct rs_kstatus *st)
{
	return st->code == 404 ? RS_ENOTFOUND : RS_EAPI;
}

/* What a Status left empty: the reason its code names, and a message
 * that says the code. */
static void
status_defaults(struct rs_kstatus *st)
{
	if (st->reason[0] == '\0')
		snprintf(st->reason, sizeof st->reason, "%s", reason_of(st->code));
	if (st->message[0] == '\0')
		snprintf(st->message, sizeof st->message, "HTTP %ld (%s)",
		    st->code, st->reason);
}

void
rs_kstatus_from_json(struct rs_kstatus *st, long code, const cJSON *o)
{
	const char *reason = rs_json_str(o, "reason", NULL);
	const char *msg = rs_json_str(o, "message", NULL);
	const cJSON *causes = rs_json_get(o, "details", "causes", NULL);
	long long ra = rs_json_int(o, 0, "details", "retryAfterSeconds", NULL);

	rs_kstatus_clear(st);
	st->code = code ? code : (long)rs_json_int(o, 0, "code", NULL);
	if (reason)
		snprintf(st->reason, sizeof st->reason, "%s", reason);
	if (msg)
		snprintf(st->message, sizeof st->message, "%s", msg);
	status_defaults(st);
	if (cJSON_IsArray(causes))
		st->causes = cJSON_Duplicate(causes, 1);
	if (ra > 0 && ra < 1000000)
		st->retry_after = (int)ra;
}

/* A string field of a message, truncated to fit dst. */
static void
pb_copy(char *dst, size_t size, struct rs_pbspan s)
{
	snprintf(dst, size, "%.*s", (int)(s.len > size ? size : s.len),
	    (const char *)s.p);
}

/* details.causes, as the JSON Status has them: reason, message, field. */
static cJSON *
pb_cause(struct rs_pbspan m)
{
	static const char *const name[] = { NULL, "reason", "message", "field" };
	struct rs_pbiter it;
	struct rs_pbfield f;
	cJSON *c = cJSON_CreateObject();
	char *v;

	rs_pb_iter(&it, m);
	while (c && rs_pb_next(&it, &f) == RS_OK) {
		if (f.wire != RS_PB_BYTES || f.num > 3 || f.s.len == 0)
			continue;
		if ((v = strndup((const char *)f.s.p, f.s.len)) != NULL)
			cJSON_AddStringToObject(c, name[f.num], v);
		free(v);
	}
	return c;
}

static void
pb_details(struct rs_kstatus *st, struct rs_pbspan m)
{
	struct rs_pbiter it;
	struct rs_pbfield f;
	cJSON *c;

	rs_pb_iter(&it, m);
	while (rs_pb_next(&it, &f) == RS_OK) {
		if (f.num == 5 && f.wire == RS_PB_VARINT &&
		    (int32_t)f.v > 0 && (int32_t)f.v < 1000000)
			st->retry_after = (int32_t)f.v;
		if (f.num != 4 || f.wire != RS_PB_BYTES)
			continue;
		if (st->causes == NULL)
			st->causes = cJSON_CreateArray();
		if (st->causes && (c = pb_cause(f.s)) != NULL)
			cJSON_AddItemToArray(st->causes, c);
	}
}

rs_code
rs_kstatus_from_pb(struct rs_kstatus *st, long code, struct rs_pbspan m)
{
	struct rs_pbiter it;
	struct rs_pbfield f;
	long own = 0;
	rs_code rc;

	rs_kstatus_clear(st);
	rs_pb_iter(&it, m);
	while ((rc = rs_pb_next(&it, &f)) == RS_OK) {
		if (f.num == 6 && f.wire == RS_PB_VARINT)
			own = (int32_t)f.v;
		if (f.wire != RS_PB_BYTES)
			continue;
		if (f.num == 3)
			pb_copy(st->message, sizeof st->message, f.s);
		else if (f.num == 4)
			pb_copy(st->reason, sizeof st->reason, f.s);
		else if (f.num == 5)
			pb_details(st, f.s);
	}
	st->code = code ? code : own;
	status_defaults(st);
	return rc == RS_EEOF ? RS_OK : rc;
}

/* A Status in protobuf, as the server answers a client that asked for it. */
static int
status_from_pb_body(struct rs_kstatus *st, long code, const char *body,
    size_t len)
{
	struct rs_pbspan b = { (const unsigned char *)body, len };
	struct rs_pbunknown u;

	return body && rs_pb_unknown(b, &u) == RS_OK &&
	    rs_pb_eq(u.kind, "Status") &&
	    rs_kstatus_from_pb(st, code, u.raw) == RS_OK;
}

/* A Status in JSON, or (a proxy, a load balancer) the first line of
 * whatever the answer is. */
static void
status_from_text(struct rs_kstatus *st, long code, const char *body,
    size_t len)
{
	const char *kind;
	cJSON *o = NULL;
	size_t n;

	if (body && len && rs_json_parse(body, len, &o, NULL) == RS_OK &&
	    (kind = rs_json_str(o, "kind", NULL)) != NULL &&
	    strcmp(kind, "Status") == 0) {
		rs_kstatus_from_json(st, code, o);
		cJSON_Delete(o);
		return;
	}
	cJSON_Delete(o);
	rs_kstatus_clear(st);
	st->code = code;
	n = body ? strcspn(body, "\r\n") : 0;
	if (n > len)
		n = len;
	if (n > 200)
		n = 200;
	if (n)
		snprintf(st->message, sizeof st->message, "HTTP %ld: %.*s",
		    code, (int)n, body);
	status_defaults(st);
}

void
rs_kstatus_from_body(struct rs_kstatus *st, long code, const char *body,
    size_t len, int retry_after)
{
	if (!status_from_pb_body(st, code, body, len))
		status_from_text(st, code, body, len);
	/* The header speaks for the server as a whole; it wins. */
	if (retry_after > 0)
		st->retry_after = retry_after;
}

static int
is_tls(CURLcode cc)
{
	switch (cc) {
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_SHUTDOWN_FAILED:
	case CURLE_SSL_CLIENTCERT:
	case CURLE_USE_SSL_FAILED:
		return 1;
	default:
		return 0;
	}
}

rs_code
rs_kstatus_transport(struct rs_kstatus *st, CURLcode cc, const char *errbuf,
    const char *server)
{
	const char *why = errbuf && errbuf[0] ? errbuf : curl_easy_strerror(cc);
	rs_code rc;

	rs_kstatus_clear(st);
	if (cc == CURLE_PEER_FAILED_VERIFICATION) {
		snprintf(st->message, sizeof st->message, "certificate "
		    "verification failed for %s: %s", server, why);
		rc = RS_ETLS;
	} else if (is_tls(cc)) {
		snprintf(st->message, sizeof st->message, "TLS handshake with "
		    "%s failed: %s", server, why);
		rc = RS_ETLS;
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(st->message, sizeof st->message, "%s: %s", server,
		    why);
		rc = RS_ETIMEOUT;
	} else if (cc == CURLE_OUT_OF_MEMORY) {
		snprintf(st->message, sizeof st->message, "out of memory");
		rc = RS_ENOMEM;
	} else if (cc == CURLE_URL_MALFORMAT ||
	    cc == CURLE_UNSUPPORTED_PROTOCOL) {
		snprintf(st->message, sizeof st->message, "bad server URL %s: "
		    "%s", server, why);
		rc = RS_ECONFIG;
	} else {
		snprintf(st->message, sizeof st->message, "unable to reach %s: "
		    "%s", server, why);
		rc = RS_ENET;
	}
	return rc;
}
