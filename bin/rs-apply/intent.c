/* intent.c: one NDJSON line of doc/intents.md into a struct intent. A line
 * that is not a valid intent becomes OP_BAD (its key, if it named one, is
 * retried), with the reason logged: bad input is data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "json.h"
#include "log.h"
#include "queue_client.h"

static const char *const op_names[] = {
	"adopt", "release", "create", "delete", "status", "end", "event",
	"bad",
};

const char *
op_name(enum op op)
{
	return op_names[op];
}

/* Names that may go into a URL path unescaped: what Kubernetes accepts for
 * namespaces (DNS labels) and object names (DNS subdomains). */
static int
name_ok(const char *s, size_t max)
{
	size_t n = 0;

	if (s == NULL || *s == '\0')
		return 0;
	for (; s[n]; n++) {
		char c = s[n];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.'))
			return 0;
	}
	return n <= max;
}

static int
uid_ok(const char *s)
{
	if (s == NULL || *s == '\0' || strlen(s) > 128)
		return 0;
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			return 0;
	return 1;
}

static const char *
decode_owner(struct intent *in, const cJSON *o)
{
	struct owner *w = &in->owner;

	if (!cJSON_IsObject(o))
		return "owner is missing or not an object";
	w->api_version = rs_json_str(o, "apiVersion", NULL);
	w->kind = rs_json_str(o, "kind", NULL);
	w->ns = rs_json_str(o, "namespace", NULL);
	w->name = rs_json_str(o, "name", NULL);
	w->uid = rs_json_str(o, "uid", NULL);
	w->rv = rs_json_str(o, "resourceVersion", NULL);
	if (w->api_version == NULL || w->kind == NULL)
		return "owner lacks apiVersion or kind";
	if (strcmp(w->api_version, "apps/v1") == 0 &&
	    strcmp(w->kind, "ReplicaSet") == 0) {
		w->resource = "replicasets";
		w->component = "replicaset-controller";
	} else if (strcmp(w->api_version, "v1") == 0 &&
	    strcmp(w->kind, "ReplicationController") == 0) {
		w->resource = "replicationcontrollers";
		w->component = "replication-controller";
	} else {
		return "owner is neither an apps/v1 ReplicaSet nor a v1 "
		    "ReplicationController";
	}
	if (!name_ok(w->ns, 63) || !name_ok(w->name, 253))
		return "owner has no valid namespace or name";
	if (!uid_ok(w->uid))
		return "owner has no valid uid";
	in->has_owner = 1;
	return NULL;
}

static const char *
decode_pod(struct intent *in)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(in->json, "pod");

	in->pod_name = rs_json_str(p, "name", NULL);
	in->pod_uid = rs_json_str(p, "uid", NULL);
	if (!name_ok(in->pod_name, 253))
		return "pod.name is missing or not a valid name";
	if (!uid_ok(in->pod_uid))
		return "pod.uid is missing or invalid";
	return NULL;
}

static const char *
decode_create(struct intent *in)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(in->json, "count");

	if (!cJSON_IsNumber(c) || c->valuedouble < 0 ||
	    c->valuedouble > 1000000 || c->valuedouble != floor(c->valuedouble))
		return "count is missing or not a non-negative integer";
	in->count = (long)c->valuedouble;
	in->tmpl = cJSON_GetObjectItemCaseSensitive(in->json, "template");
	if (!cJSON_IsObject(in->tmpl))
		return "template is missing or not an object";
	return NULL;
}

static const char *
decode_delete(struct intent *in)
{
	const cJSON *p;

	in->pods = cJSON_GetObjectItemCaseSensitive(in->json, "pods");
	if (!cJSON_IsArray(in->pods))
		return "pods is missing or not an array";
	cJSON_ArrayForEach(p, in->pods)
		if (!name_ok(rs_json_str(p, "name", NULL), 253))
			return "pods[] has an entry without a valid name";
	return NULL;
}

static const char *
decode_status(struct intent *in)
{
	in->object = cJSON_GetObjectItemCaseSensitive(in->json, "object");
	if (!cJSON_IsObject(in->object))
		return "object is missing or not an object";
	in->old_status = cJSON_GetObjectItemCaseSensitive(in->json,
	    "old_status");
	if (in->old_status != NULL && !cJSON_IsObject(in->old_status) &&
	    !cJSON_IsNull(in->old_status))
		return "old_status is not an object";
	return NULL;
}

/* A string of 1 to max bytes without control characters. */
static int
text_ok(const char *s, size_t max)
{
	size_t n;

	if (s == NULL || *s == '\0')
		return 0;
	for (n = 0; s[n]; n++)
		if ((unsigned char)s[n] < 0x20)
			return 0;
	return n <= max;
}

/* An Event about the owner: type Normal or Warning, a reason (a word),
 * a message of at most 1024 bytes. */
static const char *
decode_event(struct intent *in)
{
	in->ev_type = rs_json_str(in->json, "type", NULL);
	in->ev_reason = rs_json_str(in->json, "reason", NULL);
	in->ev_message = rs_json_str(in->json, "message", NULL);
	if (in->ev_type == NULL || (strcmp(in->ev_type, "Normal") != 0 &&
	    strcmp(in->ev_type, "Warning") != 0))
		return "type is neither Normal nor Warning";
	if (!text_ok(in->ev_reason, 128) || strchr(in->ev_reason, ' '))
		return "reason is missing or not a word of at most 128 bytes";
	if (!text_ok(in->ev_message, 1024))
		return "message is missing, too long or has control characters";
	return NULL;
}

/* A wall-clock stamp for the latency figures: one that is absent or not
 * a positive number is no stamp (0), never a reason to fail the key. */
static double
stamp(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

static const char *
decode_end(struct intent *in)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(in->json,
	    "requeue_after");

	const cJSON *retry = cJSON_GetObjectItemCaseSensitive(in->json,
	    "retry");

	in->event_at = stamp(in->json, "event_at");
	in->sent_at = stamp(in->json, "sent_at");
	if (retry != NULL && !cJSON_IsBool(retry))
		return "retry is not a boolean";
	in->retry = cJSON_IsTrue(retry);
	if (r == NULL || cJSON_IsNull(r))
		return NULL;
	if (!cJSON_IsNumber(r) || r->valuedouble < 0 || isnan(r->valuedouble))
		return "requeue_after is not a non-negative number";
	in->has_requeue = 1;
	in->requeue_after = r->valuedouble;
	return NULL;
}

static const char *
decode_op(struct intent *in, const char *op)
{
	static const struct {
		const char *name;
		enum op op;
		const char *(*fn)(struct intent *);
	} ops[] = {
		{ "adopt", OP_ADOPT, decode_pod },
		{ "release", OP_RELEASE, decode_pod },
		{ "create", OP_CREATE, decode_create },
		{ "delete", OP_DELETE, decode_delete },
		{ "status", OP_STATUS, decode_status },
		{ "end", OP_END, decode_end },
		{ "event", OP_EVENT, decode_event },
	};
	size_t i;

	for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (strcmp(op, ops[i].name) == 0) {
			in->op = ops[i].op;
			return ops[i].fn(in);
		}
	return "unknown op";
}

/* The key and owner must agree: the owner names every path written. */
static const char *
check_key(struct intent *in)
{
	size_t nl;

	if (!in->has_owner)
		return NULL;
	nl = strlen(in->owner.ns);
	if (strncmp(in->key, in->owner.ns, nl) != 0 || in->key[nl] != '/' ||
	    strcmp(in->key + nl + 1, in->owner.name) != 0)
		return "key is not the owner's namespace/name";
	return NULL;
}

static const char *
decode(struct intent *in, char *line, size_t len)
{
	const char *op, *key, *why;
	const cJSON *o;
	size_t where = 0;

	if (rs_json_parse(line, len, &in->json, &where) != RS_OK) {
		static char buf[64];

		snprintf(buf, sizeof buf, "malformed JSON near byte %zu", where);
		return buf;
	}
	if (!cJSON_IsObject(in->json))
		return "not a JSON object";
	key = rs_json_str(in->json, "key", NULL);
	if (key == NULL)
		return "key is missing";
	if ((why = rs_queue_key_check(key, strlen(key))) != NULL)
		return why;
	if ((in->key = strdup(key)) == NULL)
		return "out of memory";
	op = rs_json_str(in->json, "op", NULL);
	if (op == NULL)
		return "op is missing";
	o = cJSON_GetObjectItemCaseSensitive(in->json, "owner");
	if (strcmp(op, "end") != 0 || (o != NULL && !cJSON_IsNull(o)))
		if ((why = decode_owner(in, o)) != NULL)
			return why;
	if ((why = decode_op(in, op)) != NULL)
		return why;
	return check_key(in);
}

struct intent *
intent_decode(char *line, size_t len, unsigned long lineno)
{
	struct intent *in = calloc(1, sizeof *in);
	const char *why;

	if (in == NULL)
		return NULL;
	in->lineno = lineno;
	if ((why = decode(in, line, len)) != NULL) {
		rs_warn("line %lu: %s%s%s: skipped", lineno, why,
		    in->key ? " for " : "", in->key ? in->key : "");
		in->op = OP_BAD;
	}
	return in;
}

struct intent *
intent_bad(unsigned long lineno)
{
	struct intent *in = calloc(1, sizeof *in);

	if (in != NULL) {
		in->op = OP_BAD;
		in->lineno = lineno;
	}
	return in;
}

struct intent *
intent_broken_end(const char *key, unsigned long lineno)
{
	struct intent *in = calloc(1, sizeof *in);

	if (in == NULL)
		return NULL;
	if ((in->key = strdup(key)) == NULL) {
		free(in);
		return NULL;
	}
	in->op = OP_END;
	in->lineno = lineno;
	in->broken = 1;
	return in;
}

void
intent_free(struct intent *in)
{
	if (in == NULL)
		return;
	cJSON_Delete(in->json);
	free(in->key);
	free(in);
}

char *
owner_collection_path(const struct owner *o)
{
	char *p;

	if (asprintf(&p, "%s/namespaces/%s/%s",
	    strcmp(o->api_version, "v1") == 0 ? "/api/v1" : "/apis/apps/v1",
	    o->ns, o->resource) < 0)
		return NULL;
	return p;
}
