#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "json.h"
#include "out.h"

/* A line that does not fit this is surely not an object we can use. */
#define LINE_MAX_BYTES (256u << 20)

void
linebuf_free(struct linebuf *b)
{
	free(b->p);
	b->p = NULL;
	b->cap = 0;
}

void
event_prepare(cJSON *obj, int trim, const char *api_version, const char *kind)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

	if (trim && md)
		cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
	if (api_version && !cJSON_HasObjectItem(obj, "apiVersion"))
		cJSON_AddStringToObject(obj, "apiVersion", api_version);
	if (kind && !cJSON_HasObjectItem(obj, "kind"))
		cJSON_AddStringToObject(obj, "kind", kind);
}

rs_code
event_objid(const cJSON *obj, struct objid *id)
{
	const char *ns = rs_json_str(obj, "metadata", "namespace", NULL);
	const char *name = rs_json_str(obj, "metadata", "name", NULL);
	int n;

	id->rv = rs_json_str(obj, "metadata", "resourceVersion", NULL);
	id->uid = rs_json_str(obj, "metadata", "uid", NULL);
	if (id->uid == NULL)
		id->uid = "";
	if (name == NULL || id->rv == NULL)
		return RS_EPARSE;
	if (ns && ns[0])
		n = snprintf(id->key, sizeof id->key, "%s/%s", ns, name);
	else
		n = snprintf(id->key, sizeof id->key, "%s", name);
	return n < 0 || (size_t)n >= sizeof id->key ? RS_ETOOBIG : RS_OK;
}

static rs_code
grow(struct linebuf *b)
{
	size_t ncap = b->cap ? b->cap * 2 : 64 << 10;
	char *np;

	if (ncap > LINE_MAX_BYTES)
		return RS_ETOOBIG;
	if ((np = realloc(b->p, ncap)) == NULL)
		return RS_ENOMEM;
	b->p = np;
	b->cap = ncap;
	return RS_OK;
}

/* The envelope is written by hand around cJSON's rendering of the object,
 * straight into the reused buffer: no tree is built for it, nothing is
 * allocated per line. type and resource need no escaping (checked words). */
rs_code
event_emit(struct linebuf *b, const char *type, const char *resource,
    int final_state_unknown, const cJSON *obj, int flush)
{
	rs_code rc;
	size_t len;
	int n;

	for (;;) {
		if (b->cap == 0 && (rc = grow(b)) != RS_OK)
			return rc;
		n = snprintf(b->p, b->cap, "{\"type\":\"%s\",\"resource\":\"%s\"%s%s",
		    type, resource,
		    final_state_unknown ? ",\"final_state_unknown\":true" : "",
		    obj ? ",\"object\":" : "}");
		if (n > 0 && (size_t)n + 2 < b->cap) {
			if (obj == NULL) {
				len = n;
				break;
			}
			if (cJSON_PrintPreallocated((cJSON *)obj, b->p + n,
			    (int)(b->cap - n - 1), 0)) {
				len = n + strlen(b->p + n);
				b->p[len++] = '}';
				break;
			}
		}
		if ((rc = grow(b)) != RS_OK)
			return rc;
	}
	out_line(b->p, len, flush);
	return RS_OK;
}

rs_code
event_emit_gone(struct linebuf *b, const char *resource,
    const char *api_version, const char *kind, const struct seen_entry *e)
{
	const char *key = seen_key(e), *slash = strchr(key, '/');
	cJSON *o = cJSON_CreateObject(), *md;
	rs_code rc = RS_ENOMEM;

	if (o == NULL)
		return RS_ENOMEM;
	if (api_version && !cJSON_AddStringToObject(o, "apiVersion", api_version))
		goto out;
	if (kind && !cJSON_AddStringToObject(o, "kind", kind))
		goto out;
	if ((md = cJSON_AddObjectToObject(o, "metadata")) == NULL)
		goto out;
	if (!cJSON_AddStringToObject(md, "name", slash ? slash + 1 : key))
		goto out;
	if (slash) {
		cJSON *ns = cJSON_CreateString(key);

		if (ns == NULL)
			goto out;
		ns->valuestring[slash - key] = '\0';
		cJSON_AddItemToObject(md, "namespace", ns);
	}
	if (seen_uid(e)[0] && !cJSON_AddStringToObject(md, "uid", seen_uid(e)))
		goto out;
	if (!cJSON_AddStringToObject(md, "resourceVersion", seen_rv(e)))
		goto out;
	rc = event_emit(b, "DELETED", resource, 1, o, 0);
out:
	cJSON_Delete(o);
	return rc;
}
