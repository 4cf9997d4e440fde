/* prom.h: writing the Prometheus text exposition format (version 0.0.4),
 * shared by `rs-queue stats --prometheus` and rs-metrics.
 *
 * A family is one "# HELP" and one "# TYPE" line followed by all of its
 * samples, in one group. Values are printed as Go's strconv would for
 * Prometheus: the shortest form that reads back exactly, "NaN", "+Inf",
 * "-Inf". Nothing here checks that a family is written only once: the
 * caller groups its samples. */
#ifndef RS_PROM_H
#define RS_PROM_H

#include <stddef.h>
#include <stdio.h>
#include <cJSON.h>

struct rs_prom_label {
	const char *name;
	const char *value;
};

/* 1 when s is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*). */
int rs_prom_name_ok(const char *s);
/* 1 when s is a valid label name ([a-zA-Z_][a-zA-Z0-9_]*, not "__..."). */
int rs_prom_label_ok(const char *s);
/* 1 for counter, gauge, histogram. */
int rs_prom_type_ok(const char *type);

/* "# HELP name help" (help escaped; none when help is empty) and
 * "# TYPE name type". */
void rs_prom_head(FILE *f, const char *name, const char *type,
    const char *help);
/* One sample: name suffix{labels} value. suffix may be NULL ("_bucket",
 * "_sum", "_count" for histograms); labels[0..n) are escaped. */
void rs_prom_sample(FILE *f, const char *name, const char *suffix,
    const struct rs_prom_label *labels, size_t n, double v);
/* A value, as in a sample. */
void rs_prom_value(FILE *f, double v);

/* The samples of one histogram given in its JSON form
 *   {"le":[bounds...],"counts":[cumulative...],"sum":S,"count":N}
 * (the form of rs-queue STATS and of the stage stats files): one _bucket
 * per bound, the +Inf bucket (count), _sum and _count. */
void rs_prom_histogram(FILE *f, const char *name,
    const struct rs_prom_label *labels, size_t n, const cJSON *h);

/* The work-queue families of one rs-queue STATS reply (the JSON after
 * "STATS "), under the names component-base registers for client-go's
 * work queues, labelled name="<queue name>". -1 if it does not parse. */
int rs_prom_workqueue(FILE *f, const char *json, size_t len);

#endif
