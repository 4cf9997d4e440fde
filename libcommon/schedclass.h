/* schedclass.h: the scheduling class of a stage. */
#ifndef RS_SCHEDCLASS_H
#define RS_SCHEDCLASS_H

/* Puts the calling process in SCHED_BATCH unless RS_SCHED_BATCH is "0".
 * Call it first thing in main, before any thread starts: threads take
 * the class of the thread that creates them. A refusal (a seccomp
 * profile, an unknown kernel) is a warning; the stage runs on. */
void rs_sched_batch(void);

#endif
