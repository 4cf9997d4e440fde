/* lease.c: a coordination.k8s.io/v1 Lease as JSON, to and from the record
 * leader election reads. A PUT sends back the object as read with only the
 * election fields of spec replaced: its resourceVersion is the precondition
 * (a 409 Conflict means another candidate wrote first), and fields this
 * tool does not know (strategy, preferredHolder, labels) are kept. */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "lease.h"

static rs_code
copy_str(const cJSON *spec, const char *field, char *dst, size_t n)
{
	const char *s = rs_json_str(spec, field, (char *)NULL);

	dst[0] = '\0';
	if (s == NULL)
		return RS_OK;
	if (strlen(s) >= n)
		return RS_EPARSE;
	memcpy(dst, s, strlen(s) + 1);
	return RS_OK;
}

rs_code
lease_parse(const cJSON *lease, struct lease_rec *out)
{
	const cJSON *spec;
	const char *kind;
	rs_code rc;

	memset(out, 0, sizeof *out);
	kind = rs_json_str(lease, "kind", (char *)NULL);
	if (!cJSON_IsObject(lease) || (kind && strcmp(kind, "Lease") != 0))
		return RS_EPARSE;
	spec = rs_json_get(lease, "spec", (char *)NULL);
	if (spec == NULL)
		return RS_OK;
	if ((rc = copy_str(spec, "holderIdentity", out->holder,
	    sizeof out->holder)) != RS_OK)
		return rc;
	if ((rc = copy_str(spec, "acquireTime", out->acquire,
	    sizeof out->acquire)) != RS_OK)
		return rc;
	if ((rc = copy_str(spec, "renewTime", out->renew,
	    sizeof out->renew)) != RS_OK)
		return rc;
	out->duration_s = rs_json_int(spec, 0, "leaseDurationSeconds",
	    (char *)NULL);
	out->transitions = rs_json_int(spec, 0, "leaseTransitions",
	    (char *)NULL);
	return RS_OK;
}

static int
set_item(cJSON *o, const char *name, cJSON *take)
{
	if (take == NULL)
		return -1;
	cJSON_DeleteItemFromObjectCaseSensitive(o, name);
	if (!cJSON_AddItemToObject(o, name, take)) {
		cJSON_Delete(take);
		return -1;
	}
	return 0;
}

/* A time left empty (a record never written) is left out, as client-go
 * leaves a zero time nil. */
static int
set_spec(cJSON *spec, const struct lease_rec *r)
{
	if (set_item(spec, "holderIdentity", cJSON_CreateString(r->holder)) ||
	    set_item(spec, "leaseDurationSeconds",
	    cJSON_CreateNumber(r->duration_s)) ||
	    set_item(spec, "leaseTransitions",
	    cJSON_CreateNumber(r->transitions)))
		return -1;
	if (r->acquire[0] &&
	    set_item(spec, "acquireTime", cJSON_CreateString(r->acquire)))
		return -1;
	if (r->renew[0] &&
	    set_item(spec, "renewTime", cJSON_CreateString(r->renew)))
		return -1;
	return 0;
}

static cJSON *
new_lease(const char *ns, const char *name)
{
	cJSON *o = cJSON_CreateObject(), *meta;

	if (o == NULL)
		return NULL;
	meta = cJSON_AddObjectToObject(o, "metadata");
	if (!cJSON_AddStringToObject(o, "apiVersion", "coordination.k8s.io/v1") ||
	    !cJSON_AddStringToObject(o, "kind", "Lease") || meta == NULL ||
	    !cJSON_AddStringToObject(meta, "name", name) ||
	    !cJSON_AddStringToObject(meta, "namespace", ns)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

char *
lease_body(const cJSON *base, const char *ns, const char *name,
    const struct lease_rec *r)
{
	cJSON *o, *spec;
	char *text = NULL;

	o = base ? cJSON_Duplicate(base, 1) : new_lease(ns, name);
	if (o == NULL)
		return NULL;
	spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
	if (!cJSON_IsObject(spec)) {
		cJSON_DeleteItemFromObjectCaseSensitive(o, "spec");
		spec = cJSON_AddObjectToObject(o, "spec");
	}
	if (spec != NULL && set_spec(spec, r) == 0)
		text = rs_json_print(o);
	cJSON_Delete(o);
	return text;
}
