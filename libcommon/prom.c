/* prom.c: the Prometheus text exposition format (0.0.4). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "prom.h"

static int
name_char(int c, int first, int colon)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
		return 1;
	if (colon && c == ':')
		return 1;
	return !first && c >= '0' && c <= '9';
}

int
rs_prom_name_ok(const char *s)
{
	const char *p;

	if (s == NULL || *s == '\0')
		return 0;
	for (p = s; *p; p++)
		if (!name_char((unsigned char)*p, p == s, 1))
			return 0;
	return 1;
}

int
rs_prom_label_ok(const char *s)
{
	const char *p;

	if (s == NULL || *s == '\0' || strncmp(s, "__", 2) == 0)
		return 0;
	for (p = s; *p; p++)
		if (!name_char((unsigned char)*p, p == s, 0))
			return 0;
	return 1;
}

int
rs_prom_type_ok(const char *type)
{
	return type && (strcmp(type, "counter") == 0 ||
	    strcmp(type, "gauge") == 0 || strcmp(type, "histogram") == 0);
}

/* HELP escapes backslash and newline; label values also the quote. */
static void
escape(FILE *f, const char *s, int quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (quote && *s == '"')
			fputs("\\\"", f);
		else
			putc(*s, f);
	}
}

void
rs_prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	if (help && *help) {
		fprintf(f, "# HELP %s ", name);
		escape(f, help, 0);
		putc('\n', f);
	}
	fprintf(f, "# TYPE %s %s\n", name, type);
}

/* A value as Go's strconv prints it for Prometheus: the shortest of 15,
 * 16, 17 digits that reads back exactly; NaN, +Inf, -Inf. */
static void
value_str(double v, char *buf, size_t len)
{
	int prec;

	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, "%s", v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

void
rs_prom_value(FILE *f, double v)
{
	char buf[40];

	value_str(v, buf, sizeof buf);
	fputs(buf, f);
}

static void
labels_out(FILE *f, const struct rs_prom_label *l, size_t n, const char *le)
{
	size_t i;

	if (n == 0 && le == NULL)
		return;
	putc('{', f);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s%s=\"", i ? "," : "", l[i].name);
		escape(f, l[i].value, 1);
		putc('"', f);
	}
	if (le)
		fprintf(f, "%sle=\"%s\"", n ? "," : "", le);
	putc('}', f);
}

static void
sample(FILE *f, const char *name, const char *suffix,
    const struct rs_prom_label *l, size_t n, const char *le, double v)
{
	fputs(name, f);
	if (suffix)
		fputs(suffix, f);
	labels_out(f, l, n, le);
	putc(' ', f);
	rs_prom_value(f, v);
	putc('\n', f);
}

void
rs_prom_sample(FILE *f, const char *name, const char *suffix,
    const struct rs_prom_label *labels, size_t n, double v)
{
	sample(f, name, suffix, labels, n, NULL, v);
}

static double
num(const cJSON *o, const char *field)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);

	return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

void
rs_prom_histogram(FILE *f, const char *name,
    const struct rs_prom_label *labels, size_t n, const cJSON *h)
{
	const cJSON *le = cJSON_GetObjectItemCaseSensitive(h, "le");
	const cJSON *counts = cJSON_GetObjectItemCaseSensitive(h, "counts");
	int i, nb = cJSON_GetArraySize(le);
	char bound[40];

	for (i = 0; i < nb; i++) {
		const cJSON *b = cJSON_GetArrayItem(le, i);
		const cJSON *c = cJSON_GetArrayItem(counts, i);

		if (!cJSON_IsNumber(b))
			continue;
		value_str(b->valuedouble, bound, sizeof bound);
		sample(f, name, "_bucket", labels, n, bound,
		    cJSON_IsNumber(c) ? c->valuedouble : 0.0);
	}
	sample(f, name, "_bucket", labels, n, "+Inf", num(h, "count"));
	sample(f, name, "_sum", labels, n, NULL, num(h, "sum"));
	sample(f, name, "_count", labels, n, NULL, num(h, "count"));
}

static void
wq_scalar(FILE *f, const cJSON *o, const struct rs_prom_label *l,
    const char *metric, const char *type, const char *help)
{
	char name[96];

	snprintf(name, sizeof name, "workqueue_%s", metric);
	rs_prom_head(f, name, type, help);
	rs_prom_sample(f, name, NULL, l, 1, num(o, metric));
}

static void
wq_histogram(FILE *f, const cJSON *o, const struct rs_prom_label *l,
    const char *metric, const char *help)
{
	char name[96];

	snprintf(name, sizeof name, "workqueue_%s", metric);
	rs_prom_head(f, name, "histogram", help);
	rs_prom_histogram(f, name, l, 1,
	    cJSON_GetObjectItemCaseSensitive(o, metric));
}

int
rs_prom_workqueue(FILE *f, const char *json, size_t len)
{
	struct rs_prom_label l = { "name", NULL };
	cJSON *o;

	if (rs_json_parse(json, len, &o, NULL) != RS_OK)
		return -1;
	if ((l.value = rs_json_str(o, "name", NULL)) == NULL)
		l.value = "";
	wq_scalar(f, o, &l, "depth", "gauge", "Keys waiting to be processed.");
	wq_scalar(f, o, &l, "adds_total", "counter",
	    "Keys added to the queue.");
	wq_histogram(f, o, &l, "queue_duration_seconds",
	    "Seconds a key waits in the queue before it is handed out.");
	wq_histogram(f, o, &l, "work_duration_seconds",
	    "Seconds from handing a key out to its DONE.");
	wq_scalar(f, o, &l, "unfinished_work_seconds", "gauge",
	    "Seconds of work in progress not yet counted in work_duration.");
	wq_scalar(f, o, &l, "longest_running_processor_seconds", "gauge",
	    "Seconds the longest-held key has been out.");
	wq_scalar(f, o, &l, "retries_total", "counter",
	    "Delayed and rate-limited adds.");
	cJSON_Delete(o);
	return 0;
}
