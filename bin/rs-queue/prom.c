#include <stdio.h>
#include <string.h>

#include "client.h"
#include "json.h"

/* The Prometheus text exposition format (version 0.0.4) of the STATS
 * object, under the names component-base registers for client-go's work
 * queues, labelled with the queue name. */

static void
label(const char *name)
{
	const char *p;

	putchar('"');
	for (p = name; *p; p++) {
		if (*p == '\\' || *p == '"')
			printf("\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", stdout);
		else
			putchar(*p);
	}
	putchar('"');
}

static void
head(const char *metric, const char *type, const char *help)
{
	printf("# HELP workqueue_%s %s\n", metric, help);
	printf("# TYPE workqueue_%s %s\n", metric, type);
}

static double
num(const cJSON *o, const char *field)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);

	return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static void
series(const char *metric, const char *suffix, const char *name,
    const char *le, double v)
{
	printf("workqueue_%s%s{name=", metric, suffix);
	label(name);
	if (le)
		printf(",le=\"%s\"", le);
	printf("} %.17g\n", v);
}

static void
histogram(const char *metric, const char *name, const cJSON *o)
{
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, metric);
	const cJSON *le = cJSON_GetObjectItemCaseSensitive(h, "le");
	const cJSON *counts = cJSON_GetObjectItemCaseSensitive(h, "counts");
	int i, n = cJSON_GetArraySize(le);
	char bound[32];

	for (i = 0; i < n; i++) {
		const cJSON *c = cJSON_GetArrayItem(counts, i);

		snprintf(bound, sizeof bound, "%g",
		    cJSON_GetArrayItem(le, i)->valuedouble);
		series(metric, "_bucket", name, bound,
		    cJSON_IsNumber(c) ? c->valuedouble : 0.0);
	}
	series(metric, "_bucket", name, "+Inf", num(h, "count"));
	series(metric, "_sum", name, NULL, num(h, "sum"));
	series(metric, "_count", name, NULL, num(h, "count"));
}

int
rsq_prometheus(const char *json, size_t len)
{
	cJSON *o;
	const char *name;

	if (rs_json_parse(json, len, &o, NULL) != RS_OK)
		return -1;
	if ((name = rs_json_str(o, "name", NULL)) == NULL)
		name = "";
	head("depth", "gauge", "Keys waiting to be processed.");
	series("depth", "", name, NULL, num(o, "depth"));
	head("adds_total", "counter", "Keys added to the queue.");
	series("adds_total", "", name, NULL, num(o, "adds_total"));
	head("queue_duration_seconds", "histogram",
	    "Seconds a key waits in the queue before it is handed out.");
	histogram("queue_duration_seconds", name, o);
	head("work_duration_seconds", "histogram",
	    "Seconds from handing a key out to its DONE.");
	histogram("work_duration_seconds", name, o);
	head("unfinished_work_seconds", "gauge",
	    "Seconds of work in progress not yet counted in work_duration.");
	series("unfinished_work_seconds", "", name, NULL,
	    num(o, "unfinished_work_seconds"));
	head("longest_running_processor_seconds", "gauge",
	    "Seconds the longest-held key has been out.");
	series("longest_running_processor_seconds", "", name, NULL,
	    num(o, "longest_running_processor_seconds"));
	head("retries_total", "counter", "Delayed and rate-limited adds.");
	series("retries_total", "", name, NULL, num(o, "retries_total"));
	cJSON_Delete(o);
	return 0;
}
