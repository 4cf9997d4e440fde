/* elect.h: the election loop: one thread, one event loop over the API
 * client's asynchronous requests, a signalfd and a clock. */
#ifndef RS_LEASE_ELECT_H
#define RS_LEASE_ELECT_H

#include <signal.h>
#include <stdint.h>

#include "kube.h"

struct elect_opts {
	const char *ns, *name, *identity;
	int64_t lease_duration;   /* ns; written as whole seconds */
	int64_t renew_deadline;
	int64_t retry_period;
	int64_t kill_after;       /* SIGTERM to SIGKILL, for prog */
};

/* Runs until the end: returns the exit code of rs-lease. sigfd reads the
 * blocked signals TERM, INT and CHLD; prog gets the signal mask *mask. */
int elect_run(struct rs_kube *k, const struct elect_opts *o, char **argv,
    int sigfd, const sigset_t *mask);

#endif
