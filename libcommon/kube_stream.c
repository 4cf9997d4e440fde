/* kube_stream.c: a streaming GET (a watch) cut into lines as the bytes
 * arrive. One line is held at a time, at most KUBE_MAX_LINE bytes: a
 * longer one stops the stream with RS_ETOOBIG rather than growing without
 * bound (a watch cannot skip an event and stay consistent). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"

static int
line_append(struct kreq *r, const char *p, size_t n)
{
	size_t ncap;
	char *nb;

	if (r->line_len + n > KUBE_MAX_LINE) {
		r->cb_rc = RS_ETOOBIG;
		return -1;
	}
	if (r->line_len + n + 1 > r->line_cap) {
		ncap = r->line_cap ? r->line_cap : 65536;
		while (ncap < r->line_len + n + 1)
			ncap *= 2;
		if (ncap > KUBE_MAX_LINE + 1)   /* not 128 MiB for 64 */
			ncap = KUBE_MAX_LINE + 1;
		nb = realloc(r->line, ncap);
		if (nb == NULL) {
			r->cb_rc = RS_ENOMEM;
			return -1;
		}
		r->line = nb;
		r->line_cap = ncap;
	}
	memcpy(r->line + r->line_len, p, n);
	r->line_len += n;
	return 0;
}

/* Hands p[0..n), a whole line or frame, to the stream's callback; -1
 * when that stops the stream. */
static int
hand_out(struct kreq *r, char *p, size_t n)
{
	rs_code rc;

	r->lines++;
	if (r->async)
		r->k->async_lines++;
	if ((rc = r->fn(r->fn_arg, p, n)) != RS_OK) {
		r->cb_rc = rc;
		return -1;
	}
	return 0;
}

static int
line_emit(struct kreq *r)
{
	size_t n = r->line_len;

	if (n > 0 && r->line[n - 1] == '\r')
		n--;
	r->line_len = 0;
	if (n == 0)
		return 0;
	r->line[n] = '\0';
	return hand_out(r, r->line, n);
}

/* The length a frame's header gives, the header's 4 bytes included. */
static size_t
frame_len(const struct kreq *r)
{
	const unsigned char *h = (const unsigned char *)r->line;

	return 4 + ((size_t)h[0] << 24 | (size_t)h[1] << 16 |
	    (size_t)h[2] << 8 | h[3]);
}

static int
frame_emit(struct kreq *r)
{
	size_t n = r->line_len - 4;

	r->line_len = 0;
	return hand_out(r, r->line + 4, n);
}

/* A stream of frames is protobuf: a server (or a proxy) that answers in
 * anything else would have its text read as lengths. */
static int
frames_checked(struct kreq *r)
{
	char *ct = NULL;

	if (r->lines > 0 || r->line_len > 0)
		return 0;
	if (r->h2c != NULL)     /* on a connection of kube_h2.c's */
		ct = r->h2_ctype[0] ? r->h2_ctype : NULL;
	else
		curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
	if (ct && strncmp(ct, RS_KUBE_PROTOBUF, strlen(RS_KUBE_PROTOBUF)) == 0)
		return 0;
	snprintf(r->resp.status.message, sizeof r->resp.status.message,
	    "the stream came as %.200s, not protobuf", ct ? ct : "nothing said");
	r->cb_rc = RS_EPARSE;
	return -1;
}

/* Frames of protobuf: a 4-byte big-endian length, then that many bytes,
 * held whole (a frame is one event) and handed out as a line is. A frame
 * longer than a line may be stops the stream the same way, as soon as its
 * length is read. */
static size_t
frames_data(struct kreq *r, const char *p, size_t n)
{
	const char *end = p + n;
	size_t want, take;

	if (frames_checked(r) < 0)
		return 0;
	while (p < end) {
		want = r->line_len < 4 ? 4 : frame_len(r);
		take = want - r->line_len;
		if (take > (size_t)(end - p))
			take = end - p;
		if (line_append(r, p, take) < 0)
			return 0;
		p += take;
		if (r->line_len < 4)
			continue;
		if (frame_len(r) - 4 > KUBE_MAX_LINE) {
			r->cb_rc = RS_ETOOBIG;
			return 0;
		}
		if (r->line_len < frame_len(r))
			continue;
		if (frame_emit(r) < 0)
			return 0;
		if (r->stop && *r->stop)
			break;
	}
	return n;
}

size_t
kube_stream_data(struct kreq *r, const char *p, size_t n)
{
	const char *end = p + n, *nl;

	/* the rest of a read that came with the stop: what follows the line
	 * handed out last is no longer whole */
	if (r->stop && *r->stop)
		return n;
	if (r->framed)
		return frames_data(r, p, n);
	while (p < end) {
		nl = memchr(p, '\n', end - p);
		if (line_append(r, p, (nl ? nl : end) - p) < 0)
			return 0;
		if (nl == NULL)
			break;
		if (line_emit(r) < 0)
			return 0;
		if (r->stop && *r->stop)
			break;
		p = nl + 1;
	}
	return n;
}

/* The stream ended cleanly: a last line without its newline is handed out
 * too, as the line reader does at end of input. */
rs_code
kube_stream_flush(struct kreq *r)
{
	if (r->line_len == 0)
		return RS_OK;
	/* a frame cut short is no event: the stream ended in the middle */
	if (r->framed) {
		snprintf(r->resp.status.message, sizeof r->resp.status.message,
		    "the stream ended in the middle of an event");
		return RS_EPARSE;
	}
	if (line_emit(r) < 0)
		return r->cb_rc;
	return RS_OK;
}

static rs_code
kube_stream(struct rs_kube *k, const char *path, int pb, long timeout_ms,
    rs_kube_line_fn fn, void *arg, const struct rs_kube_batch *batch,
    volatile int *stop, struct rs_kresp *resp)
{
	struct kreq r;

	kreq_init(&r, k, "GET", path, NULL, NULL, 0);
	if (pb) {
		r.accept = RS_KUBE_PROTOBUF;
		r.framed = 1;
	}
	r.timeout_ms = timeout_ms;
	r.fn = fn;
	r.fn_arg = arg;
	r.batch = batch;
	r.stop = stop;
	return kube_call(k, &r, resp);
}

rs_code
rs_kube_stream(struct rs_kube *k, const char *path, long timeout_ms,
    rs_kube_line_fn fn, void *arg, const struct rs_kube_batch *batch,
    volatile int *stop, struct rs_kresp *resp)
{
	return kube_stream(k, path, 0, timeout_ms, fn, arg, batch, stop, resp);
}

rs_code
rs_kube_stream_pb(struct rs_kube *k, const char *path, long timeout_ms,
    rs_kube_line_fn fn, void *arg, const struct rs_kube_batch *batch,
    volatile int *stop, struct rs_kresp *resp)
{
	return kube_stream(k, path, 1, timeout_ms, fn, arg, batch, stop, resp);
}
