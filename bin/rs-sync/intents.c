#include <string.h>

#include "intents.h"
#include "json.h"
#include "log.h"

static cJSON *
owner_json(const struct sync *s, const struct ctrl *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "apiVersion", s->kind->api_version);
	cJSON_AddStringToObject(o, "kind", s->kind->kind);
	cJSON_AddStringToObject(o, "namespace", r->ns);
	cJSON_AddStringToObject(o, "name", r->name);
	cJSON_AddStringToObject(o, "uid", r->uid);
	cJSON_AddStringToObject(o, "resourceVersion", r->rv);
	return o;
}

cJSON *
intent_new(const struct sync *s, const char *op, const char *key,
    const struct ctrl *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "op", op);
	cJSON_AddStringToObject(o, "key", key);
	if (r)
		cJSON_AddItemToObject(o, "owner", owner_json(s, r));
	return o;
}

void
intent_add_pod(cJSON *arr, const struct pod *p)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "name", p->name);
	cJSON_AddStringToObject(o, "uid", p->uid);
	cJSON_AddItemToArray(arr, o);
}

rs_code
intent_emit(struct sync *s, cJSON *take)
{
	char *line = rs_json_print(take);
	rs_code rc;

	cJSON_Delete(take);
	if (line == NULL)
		return RS_ENOMEM;
	rc = rs_line_put(s->out, line, strlen(line));
	cJSON_free(line);
	s->intents++;
	return rc;
}
