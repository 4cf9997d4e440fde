#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto.h"
#include "queue_client.h"

#define MAX_WORDS 4

static const struct {
	const char *name;
	enum rsq_verb verb;
	int args;             /* words after the verb */
} verbs[] = {
	{ "ADD", RSQ_ADD, 1 },
	{ "GET", RSQ_GET, -1 },
	{ "DONE", RSQ_DONE, 1 },
	{ "FORGET", RSQ_FORGET, 1 },
	{ "RETRY", RSQ_RETRY, 1 },
	{ "AFTER", RSQ_AFTER, 2 },
	{ "LEN", RSQ_LEN, 0 },
	{ "STATS", RSQ_STATS, 0 },
	{ "SHUTDOWN", RSQ_SHUTDOWN, 0 },
};

/* Splits line into at most MAX_WORDS words; -1 for more. */
static int
split(char *line, size_t len, char **w, size_t *wl)
{
	size_t i = 0;
	int n = 0;

	while (i < len) {
		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (i == len)
			break;
		if (n == MAX_WORDS)
			return -1;
		w[n] = line + i;
		while (i < len && line[i] != ' ' && line[i] != '\t')
			i++;
		wl[n] = line + i - w[n];
		n++;
	}
	return n;
}

/* Seconds as a decimal number, fractions allowed; negative means now. */
static const char *
parse_delay(char *s, size_t len, int64_t *ns)
{
	char buf[64], *end;
	double d;

	if (len >= sizeof buf)
		return "bad delay";
	memcpy(buf, s, len);
	buf[len] = '\0';
	d = strtod(buf, &end);
	if (end == buf || *end != '\0' || !isfinite(d))
		return "bad delay";
	if (d > 1e9)
		return "delay over 1e9 seconds";
	*ns = d <= 0 ? 0 : (int64_t)llround(d * 1e9);
	return NULL;
}

static const char *
take_key(struct rsq_req *r, const char *w, size_t wl)
{
	const char *why = rs_queue_key_check(w, wl);

	r->key = w;
	r->keylen = wl;
	return why;
}

const char *
rsq_parse(char *line, size_t len, struct rsq_req *r)
{
	char *w[MAX_WORDS];
	size_t wl[MAX_WORDS], i;
	int n;

	memset(r, 0, sizeof *r);
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if ((n = split(line, len, w, wl)) < 0)
		return "too many words";
	if (n == 0)
		return "empty request";
	for (i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
		if (strlen(verbs[i].name) == wl[0] &&
		    strncasecmp(verbs[i].name, w[0], wl[0]) == 0)
			break;
	if (i == sizeof verbs / sizeof verbs[0])
		return "unknown request";
	r->verb = verbs[i].verb;
	if (r->verb == RSQ_GET) {
		if (n == 1)
			return NULL;
		if (n == 2 && wl[1] == 4 && strncasecmp(w[1], "HOLD", 4) == 0) {
			r->hold = 1;
			return NULL;
		}
		return "GET takes no argument but HOLD";
	}
	if (n - 1 != verbs[i].args)
		return verbs[i].args == 0 ? "no argument expected" :
		    verbs[i].args == 1 ? "one key expected" :
		    "seconds and key expected";
	if (r->verb == RSQ_AFTER) {
		const char *why = parse_delay(w[1], wl[1], &r->delay_ns);

		return why ? why : take_key(r, w[2], wl[2]);
	}
	return n == 2 ? take_key(r, w[1], wl[1]) : NULL;
}
