/* takeover.c: the take-over guard (takeover.h).
 *
 * Who made a pod is read from who set its owners: rs-watch prints the
 * managers of the managedFields entries that own metadata.ownerReferences
 * (ref_managers), and rs-apply names itself RS_FIELD_MANAGER on every pod
 * write that sets them (creates, adoptions). Only pods that appear after
 * the initial list count: the ones listed at the start may well be
 * upstream's from before the take-over, which is no sign of a controller
 * running now. An adopted orphan appears without a controllerRef and gets
 * ours later (an update, not an appearance), so it never counts either. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intents.h"
#include "kube.h"
#include "log.h"
#include "sync.h"
#include "takeover.h"

#define NAME_MAX_BYTES 128         /* a fieldManager's bound in the API */

struct warned {
	int event_due;                 /* the Event is still to be written */
	char manager[NAME_MAX_BYTES + 1];
	char pod[256];                 /* its name, for the Event */
	char uid[];
};

/* A name from the API for a log line and an Event: printable ASCII,
 * cut at the API's bound. */
static void
printable(char *out, size_t len, const char *in)
{
	size_t i;

	for (i = 0; i + 1 < len && in[i]; i++)
		out[i] = in[i] >= 0x20 && in[i] < 0x7f ? in[i] : '?';
	out[i] = '\0';
}

/* The first manager named, into m, when none of them is us; NULL when
 * one is us or none is named (not known: no warning). */
static const char *
foreign_manager(const char *line, struct rs_jspan managers, char *m,
    size_t len)
{
	struct rs_jiter it;
	struct rs_jspan v;
	const char *first = NULL;

	if (line == NULL || rs_jscan_type(line, managers) != RS_JARRAY ||
	    rs_jscan_iter(&it, line, managers) != RS_OK)
		return NULL;
	while (rs_jscan_elem(&it, &v) == RS_OK) {
		if (rs_jscan_type(line, v) != RS_JSTRING)
			continue;
		if (rs_jscan_keyeq(line, v, RS_FIELD_MANAGER))
			return NULL;
		if (first == NULL) {
			(void)rs_jscan_unescape(line, v, m, len, NULL);
			first = m;
		}
	}
	return first;
}

void
takeover_pod_added(struct sync *s, const struct ctrl *r,
    const struct pod *p)
{
	struct takeover *t = &s->takeover;
	char mbuf[NAME_MAX_BYTES + 1];
	const char *m;
	struct warned *w;
	size_t n;

	if (!s->synced_pods ||
	    (m = foreign_manager(s->line, s->ref_managers, mbuf,
	    sizeof mbuf)) == NULL ||
	    rs_strmap_get(&t->warned, r->uid) != NULL)
		return;
	n = strlen(r->uid) + 1;
	if ((w = calloc(1, sizeof *w + n)) == NULL) {
		rs_warn("unable to remember the take-over warning of %s: %s",
		    r->key, rs_strerror(RS_ENOMEM));
		return;
	}
	memcpy(w->uid, r->uid, n);
	printable(w->manager, sizeof w->manager, m);
	printable(w->pod, sizeof w->pod, p->name);
	if (rs_strmap_put(&t->warned, w->uid, w, NULL) != RS_OK) {
		free(w);
		return;
	}
	w->event_due = 1;
	t->warnings++;
	rs_error("another %s controller is active: pod %s of %s %s was "
	    "created by \"%s\", not by %s", s->kind->kind, p->key,
	    s->kind->kind, r->key, w->manager, RS_FIELD_MANAGER);
}

rs_code
takeover_emit(struct sync *s, const struct ctrl *r)
{
	struct warned *w = rs_strmap_get(&s->takeover.warned, r->uid);
	char msg[640];
	cJSON *in;

	if (w == NULL || !w->event_due)
		return RS_OK;
	w->event_due = 0;
	snprintf(msg, sizeof msg, "Pod %s was created by \"%s\", not by this "
	    "controller: another %s controller is active. Run only one: "
	    "see the take-over in rs-controller's operator guide.", w->pod,
	    w->manager, s->kind->kind);
	in = intent_new(s, "event", r->key, r);
	cJSON_AddStringToObject(in, "type", "Warning");
	cJSON_AddStringToObject(in, "reason", TAKEOVER_REASON);
	cJSON_AddStringToObject(in, "message", msg);
	return intent_emit(s, in);
}

void
takeover_forget(struct takeover *t, const char *uid)
{
	free(rs_strmap_del(&t->warned, uid));
}

void
takeover_free(struct takeover *t)
{
	size_t i = 0;
	void *w;

	while (rs_strmap_next(&t->warned, &i, NULL, &w))
		free(w);
	rs_strmap_free(&t->warned);
}
