#include <cJSON.h>

#include "metrics.h"

const double rsq_hist_bounds[RSQ_HIST_BUCKETS] = {
	1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10,
};

void
rsq_hist_observe(struct rsq_hist *h, double seconds)
{
	int i;

	for (i = 0; i < RSQ_HIST_BUCKETS; i++)
		if (seconds <= rsq_hist_bounds[i])
			break;
	h->n[i]++;
	h->count++;
	h->sum += seconds;
}

/* {"le":[...],"counts":[...cumulative...],"sum":s,"count":n}, as
 * Prometheus reports a histogram (counts include the smaller buckets). */
static cJSON *
hist_json(const struct rsq_hist *h)
{
	cJSON *o = cJSON_CreateObject(), *le, *counts;
	uint64_t acc = 0;
	int i;

	if (o == NULL)
		return NULL;
	le = cJSON_AddArrayToObject(o, "le");
	counts = cJSON_AddArrayToObject(o, "counts");
	if (le == NULL || counts == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	for (i = 0; i < RSQ_HIST_BUCKETS; i++) {
		acc += h->n[i];
		cJSON_AddItemToArray(le, cJSON_CreateNumber(rsq_hist_bounds[i]));
		cJSON_AddItemToArray(counts, cJSON_CreateNumber((double)acc));
	}
	cJSON_AddNumberToObject(o, "sum", h->sum);
	cJSON_AddNumberToObject(o, "count", (double)h->count);
	return o;
}

char *
rsq_stats_json(const struct rsq_stats *s, const char *name)
{
	cJSON *o = cJSON_CreateObject();
	char *text;

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddNumberToObject(o, "depth", (double)s->depth);
	cJSON_AddNumberToObject(o, "len", (double)s->len);
	cJSON_AddNumberToObject(o, "processing", (double)s->processing);
	cJSON_AddNumberToObject(o, "waiting", (double)s->waiting);
	cJSON_AddNumberToObject(o, "keys", (double)s->keys);
	cJSON_AddNumberToObject(o, "adds_total", (double)s->adds);
	cJSON_AddNumberToObject(o, "retries_total", (double)s->retries);
	cJSON_AddItemToObject(o, "queue_duration_seconds",
	    hist_json(&s->queue_duration));
	cJSON_AddItemToObject(o, "work_duration_seconds",
	    hist_json(&s->work_duration));
	cJSON_AddNumberToObject(o, "unfinished_work_seconds", s->unfinished);
	cJSON_AddNumberToObject(o, "longest_running_processor_seconds",
	    s->longest);
	cJSON_AddBoolToObject(o, "shutting_down", s->shutting_down);
	cJSON_AddNumberToObject(o, "clients", (double)s->clients);
	cJSON_AddNumberToObject(o, "getters", (double)s->getters);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}
