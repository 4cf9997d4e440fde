/* run.h: prog under a guard process.
 *
 * rs-lease forks a guard, which forks and execs prog in a process group of
 * its own and waits for it. The guard is what makes stopping prog mean
 * stopping everything prog started: on SIGTERM (from rs-lease, or from the
 * kernel when rs-lease dies: PR_SET_PDEATHSIG) it sends SIGTERM and SIGCONT
 * to prog's process group, and SIGKILL after the grace period. It is a
 * child subreaper, so it exits only when prog and every descendant left in
 * the group are gone, with prog's exit code (128 + signal if killed). */
#ifndef RS_LEASE_RUN_H
#define RS_LEASE_RUN_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "code.h"

struct run {
	pid_t pid;            /* the guard; 0 when not started */
	int64_t kill_after;   /* grace between SIGTERM and SIGKILL, ns */
	int stopping;
	int64_t last_resort;  /* when to SIGKILL a guard that did not exit */
	int exited;
	int code;             /* prog's exit code, once exited */
};

/* Notes the file descriptors rs-lease was given: prog gets these, and
 * none that rs-lease opened itself. Call first thing in main. */
void run_note_fds(void);
/* Starts the guard and prog; *mask is the signal mask to give prog. */
rs_code run_start(struct run *r, char **argv, int64_t kill_after,
    const sigset_t *mask);
/* Asks the guard to stop prog (once; later calls do nothing). */
void run_stop(struct run *r, int64_t now);
/* Reaps the guard if it has exited: 1 (r->code set), else 0. */
int run_reap(struct run *r);
/* A guard still alive long after run_stop is killed. Returns the ns until
 * it needs calling again, or -1. */
int64_t run_tick(struct run *r, int64_t now);

#endif
