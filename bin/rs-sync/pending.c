/* pending.c: the event times of keys waiting for a sync (pending.h). */
#include <stdlib.h>
#include <string.h>

#include "pending.h"

struct pending_entry {
	double at;
	char key[];
};

void
pending_free(struct pending *p)
{
	size_t i = 0;
	void *v;

	while (rs_strmap_next(&p->map, &i, NULL, &v))
		free(v);
	rs_strmap_free(&p->map);
}

/* Drops the entries keep refuses. The map may not change while walked:
 * their keys are gathered first. */
static void
sweep(struct pending *p, pending_keep_fn keep, void *arg)
{
	struct pending_entry **gone;
	const char *key;
	size_t i = 0, n = 0, j;
	void *v;

	if ((gone = malloc(p->map.len * sizeof *gone)) == NULL)
		return;
	while (rs_strmap_next(&p->map, &i, &key, &v))
		if (!keep(arg, key))
			gone[n++] = v;
	for (j = 0; j < n; j++) {
		rs_strmap_del(&p->map, gone[j]->key);
		free(gone[j]);
	}
	free(gone);
}

rs_code
pending_note(struct pending *p, const char *key, double at, size_t bound,
    pending_keep_fn keep, void *arg)
{
	struct pending_entry *e;
	size_t n;

	if (!(at > 0) || rs_strmap_get(&p->map, key) != NULL)
		return RS_OK;
	if (p->map.len >= bound && keep != NULL)
		sweep(p, keep, arg);
	if (p->map.len >= bound)
		return RS_EFULL;
	n = strlen(key);
	if ((e = malloc(sizeof *e + n + 1)) == NULL)
		return RS_ENOMEM;
	e->at = at;
	memcpy(e->key, key, n + 1);
	if (rs_strmap_put(&p->map, e->key, e, NULL) != RS_OK) {
		free(e);
		return RS_ENOMEM;
	}
	return RS_OK;
}

double
pending_take(struct pending *p, const char *key)
{
	struct pending_entry *e = rs_strmap_del(&p->map, key);
	double at;

	if (e == NULL)
		return 0;
	at = e->at;
	free(e);
	return at;
}

size_t
pending_len(const struct pending *p)
{
	return p->map.len;
}
