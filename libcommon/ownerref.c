/* ownerref.c: an object's controller (ownerref.h). */
#include "json.h"
#include "ownerref.h"

const cJSON *
rs_controller_ref(const cJSON *obj)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, rs_json_get(obj, "metadata", "ownerReferences",
	    NULL)) {
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r,
		    "controller")))
			return r;
	}
	return NULL;
}
