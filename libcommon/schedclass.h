/* schedclass.h: the scheduling class of a stage. */
#ifndef RS_SCHEDCLASS_H
#define RS_SCHEDCLASS_H

/* Moves the calling process from SCHED_OTHER to SCHED_BATCH unless
 * RS_SCHED_BATCH is "0"; a process started in another class stays in it.
 * Call it early in main, before any thread starts: threads (and children)
 * take the class of the thread that creates them. A refusal (a seccomp
 * profile, an unknown kernel) is a warning; the stage runs on. */
void rs_sched_batch(void);

#endif
