/* correlate.c: client-go's EventCorrelator with its default options, so that
 * rs-apply writes the Events kube-controller-manager would:
 *  - aggregation: the 10th event within 10 minutes that differs from its
 *    fellows (same source, object, type and reason) only by message becomes
 *    "(combined from similar events): MESSAGE", and so do the ones after it;
 *  - counting: an event seen before (same source, object, type, reason,
 *    message) is not written again but PATCHed: count+1, lastTimestamp,
 *    message, on the first one's name;
 *  - spam filter: a token bucket per source and object, 25 events, then one
 *    every 5 minutes; the rest are dropped (after being counted).
 * Caches are LRUs of 4096 entries, as upstream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "clock.h"
#include "json.h"
#include "log.h"
#include "ratelimit.h"

#define LRU_ENTRIES 4096
#define AGG_MAX_EVENTS 10
#define AGG_INTERVAL_NS (600LL * 1000000000LL)
#define SPAM_BURST 25
#define SPAM_QPS (1.0 / 300.0)
#define AGG_PREFIX "(combined from similar events): "

struct agg_rec {
	char *local[AGG_MAX_EVENTS];   /* the set of messages seen */
	int n;
	long long last_ns;
};

struct log_rec {
	long count;
	char first[32];                /* firstTimestamp */
	char *name;
};

static struct lru spam_cache, agg_cache, log_cache;

static void
agg_free(void *p)
{
	struct agg_rec *r = p;
	int i;

	for (i = 0; i < r->n; i++)
		free(r->local[i]);
	free(r);
}

static void
log_free(void *p)
{
	struct log_rec *r = p;

	free(r->name);
	free(r);
}

void
corr_init(void)
{
	lru_init(&spam_cache, LRU_ENTRIES, free);
	lru_init(&agg_cache, LRU_ENTRIES, agg_free);
	lru_init(&log_cache, LRU_ENTRIES, log_free);
}

/* The fields of an event that keys are made of. */
struct fields {
	const char *component, *host, *kind, *ns, *name, *fieldpath, *uid,
	    *apiversion, *type, *reason, *message, *rcontroller, *rinstance;
};

/* The fields of the event the recorder makes (event_make: no host, no
 * fieldPath), read from what it is made of rather than from a tree. */
static void
fields_of(const struct corr_event *ev, struct fields *f)
{
	const struct owner *o = ev->o;

	f->component = o->component;
	f->host = "";
	f->kind = o->kind;
	f->ns = o->ns;
	f->name = o->name;
	f->fieldpath = "";
	f->uid = o->uid;
	f->apiversion = o->api_version;
	f->type = ev->type;
	f->reason = ev->reason;
	f->message = ev->message;
	f->rcontroller = o->component;
	f->rinstance = "";
}

/* strings.Join(parts, ""), as upstream builds every key. */
static char *
join(const char *const *parts, size_t n)
{
	size_t len = 1, i;
	char *s, *p;

	for (i = 0; i < n; i++)
		len += strlen(parts[i]);
	if ((s = p = malloc(len)) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		size_t l = strlen(parts[i]);

		memcpy(p, parts[i], l);
		p += l;
	}
	*p = '\0';
	return s;
}

static char *
event_key(const struct fields *f)
{
	const char *p[] = { f->component, f->host, f->kind, f->ns, f->name,
	    f->fieldpath, f->uid, f->apiversion, f->type, f->reason,
	    f->message };

	return join(p, sizeof p / sizeof p[0]);
}

static char *
spam_key(const struct fields *f)
{
	const char *p[] = { f->component, f->host, f->kind, f->ns, f->name,
	    f->uid, f->apiversion };

	return join(p, sizeof p / sizeof p[0]);
}

static char *
aggregate_key(const struct fields *f)
{
	const char *p[] = { f->component, f->host, f->kind, f->ns, f->name,
	    f->uid, f->apiversion, f->type, f->reason, f->rcontroller,
	    f->rinstance };

	return join(p, sizeof p / sizeof p[0]);
}

/* EventAggregate: whether the event is to stand for its similar fellows
 * (the aggregate: "(combined from similar events): ", no reporting
 * fields), and its cache key. */
static rs_code
aggregate(const struct fields *f, long long now_ns, int *combined,
    char **ckey)
{
	char *akey = aggregate_key(f);
	struct agg_rec *r;
	int i, have = 0;

	*combined = 0;
	*ckey = NULL;
	if (akey == NULL)
		return RS_ENOMEM;
	r = lru_get(&agg_cache, akey);
	if (r == NULL || now_ns - r->last_ns > AGG_INTERVAL_NS) {
		if ((r = calloc(1, sizeof *r)) == NULL)
			goto oom;
		if (lru_add(&agg_cache, akey, r) != RS_OK) {
			free(r);
			goto oom;
		}
	}
	for (i = 0; i < r->n; i++)
		have |= strcmp(r->local[i], f->message) == 0;
	if (!have && r->n < AGG_MAX_EVENTS &&
	    (r->local[r->n] = strdup(f->message)) != NULL)
		r->n++;
	r->last_ns = now_ns;
	if (r->n < AGG_MAX_EVENTS) {
		free(akey);
		*ckey = event_key(f);
		return *ckey ? RS_OK : RS_ENOMEM;
	}
	/* do not grow the set past its bound (PopAny) */
	free(r->local[0]);
	memmove(r->local, r->local + 1, (r->n - 1) * sizeof r->local[0]);
	r->n--;
	*combined = 1;
	*ckey = akey;
	return RS_OK;
oom:
	free(akey);
	return RS_ENOMEM;
}

/* eventObserve: a repeat takes the first one's name and firstTimestamp
 * (name and first hold the event's own, and are replaced), count+1. */
static rs_code
observe(const char *ckey, char *name, size_t namelen, char *first,
    size_t firstlen, long *count)
{
	struct log_rec *last = lru_get(&log_cache, ckey), *rec;

	*count = 1;
	if (last != NULL && last->count > 0) {
		*count = last->count + 1;
		snprintf(name, namelen, "%s", last->name);
		snprintf(first, firstlen, "%s", last->first);
	}
	if ((rec = calloc(1, sizeof *rec)) == NULL)
		return RS_ENOMEM;
	rec->count = *count;
	snprintf(rec->first, sizeof rec->first, "%s", first);
	if ((rec->name = strdup(name)) == NULL ||
	    lru_add(&log_cache, ckey, rec) != RS_OK) {
		log_free(rec);
		return RS_ENOMEM;
	}
	return RS_OK;
}

/* A repeat's patch: count, lastTimestamp, message. */
static char *
repeat_patch(long count, const char *last, const char *message)
{
	cJSON *p = cJSON_CreateObject();
	char *s;

	if (p == NULL)
		return NULL;
	cJSON_AddNumberToObject(p, "count", count);
	cJSON_AddStringToObject(p, "lastTimestamp", last);
	cJSON_AddStringToObject(p, "message", message);
	s = rs_json_print(p);
	cJSON_Delete(p);
	return s;
}

/* EventSourceObjectSpamFilter.Filter: 1 when the event is to be dropped. */
static int
spam_filtered(const struct fields *f)
{
	int64_t now_ns = rs_mono_ns();
	struct rs_bucket *b;
	char *key;
	int drop;

	if ((key = spam_key(f)) == NULL)
		return 0;
	if ((b = lru_get(&spam_cache, key)) == NULL) {
		if ((b = malloc(sizeof *b)) == NULL) {
			free(key);
			return 0;
		}
		rs_bucket_init(b, SPAM_QPS, SPAM_BURST);
		if (lru_add(&spam_cache, key, b) != RS_OK) {
			free(b);
			free(key);
			return 0;
		}
	}
	drop = !rs_bucket_try(b, now_ns);
	free(key);
	return drop;
}

/* The caches are kept from the event's fields; its tree (and a repeat's
 * patch) is made only for an event that passes the spam filter: past its
 * burst, most events of a storm are dropped. The aggregate carries the
 * same object and source as the event, so the filter's key is the
 * event's. */
rs_code
corr_correlate(const struct corr_event *ev, struct corr_result *out)
{
	struct event_form form = { .type = ev->type, .reason = ev->reason,
	    .message = ev->message, .component = ev->o->component,
	    .instance = "", .t = ev->t };
	char name[320], first[32], *ckey = NULL, *msg = NULL;
	struct fields f;
	int combined;
	rs_code rc;

	memset(out, 0, sizeof *out);
	fields_of(ev, &f);
	if ((rc = aggregate(&f, ev->t, &combined, &ckey)) != RS_OK)
		return rc;
	snprintf(name, sizeof name, "%s.%llx", ev->o->name,
	    (unsigned long long)ev->t);
	rs_format_rfc3339(ev->t / 1e9, first);
	rc = observe(ckey, name, sizeof name, first, sizeof first,
	    &out->count);
	free(ckey);
	if (rc != RS_OK)
		return rc;
	if (spam_filtered(&f)) {
		out->skip = 1;
		return RS_OK;
	}
	if (combined) {
		/* upstream's aggregate carries no reporting fields */
		if (asprintf(&msg, "%s%s", AGG_PREFIX, ev->message) < 0)
			return RS_ENOMEM;
		form.message = msg;
		form.component = "";
	}
	form.name = name;
	form.first = first;
	form.count = out->count;
	out->event = event_make(ev->o, &form);
	if (out->event != NULL && out->count > 1)
		out->patch = repeat_patch(out->count,
		    rs_json_str(out->event, "lastTimestamp", NULL), form.message);
	free(msg);
	if (out->event == NULL || (out->count > 1 && out->patch == NULL)) {
		cJSON_Delete(out->event);
		cJSON_free(out->patch);
		memset(out, 0, sizeof *out);
		return RS_ENOMEM;
	}
	return RS_OK;
}
