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

static const char *
str(const cJSON *o, const char *a, const char *b)
{
	const char *s = b ? rs_json_str(o, a, b, NULL) : rs_json_str(o, a, NULL);

	return s ? s : "";
}

static void
fields_of(const cJSON *ev, struct fields *f)
{
	f->component = str(ev, "source", "component");
	f->host = str(ev, "source", "host");
	f->kind = str(ev, "involvedObject", "kind");
	f->ns = str(ev, "involvedObject", "namespace");
	f->name = str(ev, "involvedObject", "name");
	f->fieldpath = str(ev, "involvedObject", "fieldPath");
	f->uid = str(ev, "involvedObject", "uid");
	f->apiversion = str(ev, "involvedObject", "apiVersion");
	f->type = str(ev, "type", NULL);
	f->reason = str(ev, "reason", NULL);
	f->message = str(ev, "message", NULL);
	f->rcontroller = str(ev, "reportingComponent", NULL);
	f->rinstance = str(ev, "reportingInstance", NULL);
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

/* The event that stands for its similar fellows (EventAggregate). */
static cJSON *
aggregate_event(const cJSON *ev, const struct fields *f, long long now_ns)
{
	cJSON *a = cJSON_CreateObject(), *m;
	char name[300], ts[32], *msg;

	if (a == NULL)
		return NULL;
	snprintf(name, sizeof name, "%s.%llx", f->name,
	    (unsigned long long)now_ns);
	rs_format_rfc3339(now_ns / 1e9, ts);
	if (asprintf(&msg, "%s%s", AGG_PREFIX, f->message) < 0) {
		cJSON_Delete(a);
		return NULL;
	}
	cJSON_AddStringToObject(a, "kind", "Event");
	cJSON_AddStringToObject(a, "apiVersion", "v1");
	m = cJSON_AddObjectToObject(a, "metadata");
	cJSON_AddStringToObject(m, "name", name);
	cJSON_AddStringToObject(m, "namespace",
	    str(ev, "metadata", "namespace"));
	cJSON_AddItemToObject(a, "involvedObject", cJSON_Duplicate(
	    rs_json_get(ev, "involvedObject", NULL), 1));
	cJSON_AddStringToObject(a, "reason", f->reason);
	cJSON_AddStringToObject(a, "message", msg);
	cJSON_AddItemToObject(a, "source", cJSON_Duplicate(
	    rs_json_get(ev, "source", NULL), 1));
	cJSON_AddStringToObject(a, "firstTimestamp", ts);
	cJSON_AddStringToObject(a, "lastTimestamp", ts);
	cJSON_AddNumberToObject(a, "count", 1);
	cJSON_AddStringToObject(a, "type", f->type);
	cJSON_AddNullToObject(a, "eventTime");
	/* upstream's aggregate carries no reporting fields */
	cJSON_AddStringToObject(a, "reportingComponent", "");
	cJSON_AddStringToObject(a, "reportingInstance", "");
	free(msg);
	return a;
}

/* EventAggregate: returns the event to go on with and its cache key. */
static rs_code
aggregate(const cJSON *ev, const struct fields *f, long long now_ns,
    cJSON **out, char **ckey)
{
	char *akey = aggregate_key(f);
	struct agg_rec *r;
	int i, have = 0;
	rs_code rc = RS_ENOMEM;

	*out = NULL;
	*ckey = NULL;
	if (akey == NULL)
		return RS_ENOMEM;
	r = lru_get(&agg_cache, akey);
	if (r == NULL || now_ns - r->last_ns > AGG_INTERVAL_NS) {
		if ((r = calloc(1, sizeof *r)) == NULL)
			goto out;
		if (lru_add(&agg_cache, akey, r) != RS_OK) {
			free(r);
			goto out;
		}
	}
	for (i = 0; i < r->n; i++)
		have |= strcmp(r->local[i], f->message) == 0;
	if (!have && r->n < AGG_MAX_EVENTS &&
	    (r->local[r->n] = strdup(f->message)) != NULL)
		r->n++;
	r->last_ns = now_ns;
	if (r->n < AGG_MAX_EVENTS) {
		*out = cJSON_Duplicate(ev, 1);
		*ckey = event_key(f);
	} else {
		/* do not grow the set past its bound (PopAny) */
		free(r->local[0]);
		memmove(r->local, r->local + 1, (r->n - 1) * sizeof r->local[0]);
		r->n--;
		*out = aggregate_event(ev, f, now_ns);
		*ckey = akey;
		akey = NULL;
	}
	rc = *out && *ckey ? RS_OK : RS_ENOMEM;
out:
	free(akey);
	return rc;
}

/* eventObserve: a repeat takes the first one's name and firstTimestamp,
 * count+1, and a patch of what changed. */
static rs_code
observe(cJSON *ev, const char *ckey, struct corr_result *out)
{
	struct log_rec *last = lru_get(&log_cache, ckey), *rec;
	const char *name = str(ev, "metadata", "name");
	const char *first = str(ev, "firstTimestamp", NULL);
	long count = 1;

	if ((rec = calloc(1, sizeof *rec)) == NULL)
		return RS_ENOMEM;
	if (last != NULL && last->count > 0) {
		cJSON *p = cJSON_CreateObject();

		count = last->count + 1;
		cJSON_ReplaceItemInObject(cJSON_GetObjectItem(ev, "metadata"),
		    "name", cJSON_CreateString(last->name));
		cJSON_ReplaceItemInObject(ev, "firstTimestamp",
		    cJSON_CreateString(last->first));
		cJSON_ReplaceItemInObject(ev, "count",
		    cJSON_CreateNumber(count));
		if (p == NULL) {
			free(rec);
			return RS_ENOMEM;
		}
		cJSON_AddNumberToObject(p, "count", count);
		cJSON_AddStringToObject(p, "lastTimestamp",
		    str(ev, "lastTimestamp", NULL));
		cJSON_AddStringToObject(p, "message", str(ev, "message", NULL));
		out->patch = rs_json_print(p);
		cJSON_Delete(p);
		name = str(ev, "metadata", "name");
		first = str(ev, "firstTimestamp", NULL);
	}
	rec->count = count;
	snprintf(rec->first, sizeof rec->first, "%s", first);
	if ((rec->name = strdup(name)) == NULL ||
	    lru_add(&log_cache, ckey, rec) != RS_OK) {
		log_free(rec);
		return RS_ENOMEM;
	}
	out->count = count;
	return RS_OK;
}

/* EventSourceObjectSpamFilter.Filter: 1 when the event is to be dropped. */
static int
spam_filtered(const cJSON *ev)
{
	int64_t now_ns = rs_mono_ns();
	struct fields f;
	struct rs_bucket *b;
	char *key;
	int drop;

	fields_of(ev, &f);
	if ((key = spam_key(&f)) == NULL)
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

rs_code
corr_correlate(const cJSON *ev, long long now_ns, struct corr_result *out)
{
	struct fields f;
	cJSON *e = NULL;
	char *ckey = NULL;
	rs_code rc;

	memset(out, 0, sizeof *out);
	fields_of(ev, &f);
	if ((rc = aggregate(ev, &f, now_ns, &e, &ckey)) != RS_OK)
		goto fail;
	if ((rc = observe(e, ckey, out)) != RS_OK)
		goto fail;
	free(ckey);
	if (spam_filtered(e)) {
		cJSON_Delete(e);
		cJSON_free(out->patch);
		out->patch = NULL;
		out->skip = 1;
		return RS_OK;
	}
	out->event = e;
	return RS_OK;
fail:
	cJSON_Delete(e);
	free(ckey);
	cJSON_free(out->patch);
	out->patch = NULL;
	return rc;
}
