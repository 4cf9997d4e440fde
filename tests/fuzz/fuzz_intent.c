/* fuzz_intent: rs-apply's intent decoder (bin/rs-apply/intent.c) on one
 * line. Oracle: no crash or sanitizer report, and a line accepted as a
 * valid intent keeps the promises rs-apply's writers rely on: a key that
 * passes the queue's check, an owner whose namespace/name is the key, a
 * create count within bounds, pod names safe to put in a URL path. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "json.h"
#include "log.h"
#include "queue_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* app is rs-apply's global (main.c); intent.c does not read it, but other
 * objects of the tool might be linked in later. */
struct app app;

static int
url_safe(const char *s)
{
	if (s == NULL || *s == '\0')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		    *s == '-' || *s == '.'))
			return 0;
	return 1;
}

static void
check(const struct intent *in)
{
	char *path;
	size_t nl;

	if (in->key == NULL || rs_queue_key_check(in->key, strlen(in->key)))
		abort();
	if (in->has_owner) {
		if (!url_safe(in->owner.ns) || !url_safe(in->owner.name) ||
		    in->owner.resource == NULL)
			abort();
		nl = strlen(in->owner.ns);
		if (strncmp(in->key, in->owner.ns, nl) != 0 ||
		    in->key[nl] != '/' ||
		    strcmp(in->key + nl + 1, in->owner.name) != 0)
			abort();
		if ((path = owner_collection_path(&in->owner)) == NULL)
			abort();
		free(path);
	} else if (in->op != OP_END) {
		abort();
	}
	switch (in->op) {
	case OP_ADOPT: case OP_RELEASE:
		if (!url_safe(in->pod_name) || in->pod_uid == NULL)
			abort();
		break;
	case OP_CREATE:
		if (in->count < 0 || in->count > 1000000 ||
		    !cJSON_IsObject(in->tmpl))
			abort();
		break;
	case OP_DELETE: {
		const cJSON *p;

		if (!cJSON_IsArray(in->pods))
			abort();
		cJSON_ArrayForEach(p, in->pods)
			if (!url_safe(rs_json_str(p, "name", NULL)))
				abort();
		break;
	}
	case OP_STATUS:
		if (!cJSON_IsObject(in->object))
			abort();
		break;
	case OP_END:
		if (in->has_requeue && !(in->requeue_after >= 0))
			abort();
		break;
	default:
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct intent *in;
	char *line;

	if (!ready) {
		rs_log_init("fuzz_intent");
		rs_log_set_verbosity(0);
		ready = 1;
	}
	/* rs-apply hands intent_decode a NUL-terminated line without its
	 * newline, which it may modify */
	if ((line = malloc(size + 1)) == NULL)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	in = intent_decode(line, size, 1);
	if (in != NULL && in->op != OP_BAD)
		check(in);
	intent_free(in);
	free(line);
	return 0;
}
