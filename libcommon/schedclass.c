/* schedclass.c: why the stages run as SCHED_BATCH.
 *
 * Each event of a storm goes through four processes, each woken for it.
 * Under the default class a woken stage preempts the stage that woke it,
 * which is then switched back in only to write its next line and sleep:
 * two switches where one would do, and a wake-up for each line where the
 * writer would have had a second line ready. SCHED_BATCH takes away
 * exactly that wake-up preemption (sched(7)): the woken stage runs when
 * the writer sleeps, a CPU is idle or its slice is over, and finds what
 * the writer produced meanwhile. The nice value and the CPU share are
 * unchanged; no privilege is needed to choose it. bench/results/cpu.md
 * (section 12) has what it saves and what it costs in latency. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "schedclass.h"

void
rs_sched_batch(void)
{
	const char *e = getenv("RS_SCHED_BATCH");
	struct sched_param sp = { .sched_priority = 0 };

	if (e != NULL && strcmp(e, "0") == 0)
		return;
	if (e != NULL && *e != '\0' && strcmp(e, "1") != 0)
		rs_warn("RS_SCHED_BATCH=%s is neither 0 nor 1: taken as 1", e);
	/* a class the operator chose (chrt, CPUSchedulingPolicy=) stands */
	if (sched_getscheduler(0) != SCHED_OTHER)
		return;
	if (sched_setscheduler(0, SCHED_BATCH, &sp) != 0)
		rs_warn("unable to run as SCHED_BATCH: %s", strerror(errno));
}
