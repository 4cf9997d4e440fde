#include <stdio.h>

#include "client.h"
#include "prom.h"

/* The Prometheus text format of the STATS object; the renderer lives in
 * libcommon/prom.c, shared with rs-metrics. */
int
rsq_prometheus(const char *json, size_t len)
{
	return rs_prom_workqueue(stdout, json, len);
}
