/* effects.c: what rs-apply tells the rest of the controller: the end of a
 * key to rs-queue (DONE, then FORGET or RETRY, then AFTER), and the
 * expectations it lowers for writes that no watch event will account for.
 * Both are opened when first needed and again after a loss (a connect or an
 * open that fails is cheap): rs-apply may start before rs-queue listens or
 * before rs-sync has created the expectations file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "clock.h"
#include "expectations.h"
#include "log.h"
#include "queue_client.h"
#include "queue_hold.h"
#include "statedir.h"
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static struct fx_opts opts;
static struct rs_queue *queue;
static int queue_warned;
static struct rs_queue_hold hold;      /* urgent: an ADD waits */
static struct rs_exp *expfile;
static rs_code exp_warned;

static int
queue_ready(void)
{
	rs_code rc;

	if (queue != NULL)
		return 1;
	errno = 0;
	rc = rs_queue_open(opts.queue_path, &queue);
	if (rc == RS_OK) {
		if (queue_warned)
			rs_warn("connected to rs-queue again");
		queue_warned = 0;
		return 1;
	}
	if (!queue_warned)
		rs_warn("unable to connect to rs-queue at %s: %s%s%s",
		    opts.queue_path ? opts.queue_path : "the default socket",
		    rs_strerror(rc), errno ? ": " : "",
		    errno ? strerror(errno) : "");
	queue_warned = 1;
	queue = NULL;
	return 0;
}

static void
queue_lost(const char *what)
{
	rs_warn("lost the connection to rs-queue (%s)", what);
	rs_queue_close(queue);
	queue = NULL;
	queue_warned = 1;
	hold.since = 0;
	hold.urgent = 0;
}

static int hold_fd = -1;

void
fx_hold(void)
{
	char *path;

	if (hold_fd >= 0 || opts.no_queue)
		return;
	path = opts.exp_path ? strdup(opts.exp_path) : rs_state_path("expectations");
	if (path == NULL)
		return;
	hold_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (hold_fd >= 0 && flock(hold_fd, LOCK_SH) < 0) {
		rs_warn("unable to lock %s: %s", path, strerror(errno));
		close(hold_fd);
		hold_fd = -1;
	}
	free(path);
	if (hold_fd < 0)
		hold_fd = -2;  /* no file: no rs-sync to wait for us; try once */
}

static struct rs_exp *
exp_ready(void)
{
	struct rs_exp_opts eo = { .nocreate = 1 };
	rs_code rc;

	if (expfile != NULL)
		return expfile;
	rc = rs_exp_open(opts.exp_path, &eo, &expfile);
	if (rc == RS_OK) {
		exp_warned = RS_OK;
		return expfile;
	}
	expfile = NULL;
	/* no file: nobody raised an expectation, there is nothing to lower */
	if (rc == RS_ENOTFOUND)
		rs_info(2, "no expectations file yet");
	else if (rc != exp_warned)
		rs_warn("unable to open the expectations file: %s",
		    rs_strerror(rc));
	exp_warned = rc;
	return NULL;
}

void
fx_init(const struct fx_opts *o)
{
	opts = *o;
	hold.dur = o->hold;
	if (!opts.no_queue)
		(void)queue_ready();
	(void)exp_ready();
}

/* A round that failed after it created or deleted pods was cut, not
 * refused: its failures are forgotten before the RETRY, so that the key
 * waits the first step of its backoff, not one that doubled with every
 * round a run of faults cut (rs-apply(1), Rounds and retries). */
void
fx_end(const char *key, int failed, int moved, int has_after, double after)
{
	rs_code rc;

	if (opts.no_queue)
		return;
	if (!queue_ready()) {
		rs_warn("%s: not reported to rs-queue (unreachable)", key);
		return;
	}
	rc = rs_queue_end(queue, key, failed, !failed || moved, has_after,
	    after);
	if (rc == RS_EIO) {
		queue_lost("sending the end of a key");
		return;
	}
	if (rc != RS_OK) {
		rs_warn("%s: unable to report to rs-queue: %s", key,
		    rs_strerror(rc));
		return;
	}
	/* no fx_io here: the main loop's, before it waits again, sends the
	 * ends of all the answers of one wake-up in one write */
}

rs_code
fx_add(const char *key)
{
	rs_code rc;

	if (opts.no_queue)
		return RS_OK;
	if (!queue_ready())
		return RS_EIO;
	if ((rc = rs_queue_add(queue, key)) == RS_EIO)
		queue_lost("queueing a key again");
	else if (rc == RS_OK)
		hold.urgent = 1;
	else if (rc != RS_OK)
		rs_warn("%s: unable to queue again: %s", key, rs_strerror(rc));
	return rc;
}

void
fx_lower_creations(const char *key, long n)
{
	struct rs_exp *e = exp_ready();
	rs_code rc;

	if (e == NULL)
		return;
	if ((rc = rs_exp_lower_creations(e, key, n)) != RS_OK)
		rs_warn("%s: unable to lower the creation expectation by %ld: "
		    "%s", key, n, rs_strerror(rc));
}

void
fx_wrote(const char *key, const struct rs_exp_written *w)
{
	struct rs_exp *e = exp_ready();
	rs_code rc;

	if (e == NULL)
		return;
	if ((rc = rs_exp_wrote(e, key, w->uid, w->w, w->n)) != RS_OK)
		rs_warn("%s: unable to record the resource versions written: "
		    "%s", key, rs_strerror(rc));
}

void
fx_deletion_observed(const char *key, const char *pod_key)
{
	struct rs_exp *e = exp_ready();
	rs_code rc;

	if (e == NULL)
		return;
	if ((rc = rs_exp_deletion_observed(e, key, pod_key)) != RS_OK)
		rs_warn("%s: unable to observe the deletion of %s: %s", key,
		    pod_key, rs_strerror(rc));
}

/* Each write of ends wakes rs-queue, and each DONE of a key that changed
 * meanwhile has it hand the key to rs-sync at once, waking rs-sync: the
 * answers to one window's intents come over a few milliseconds, so their
 * ends wait for the last of them (--queue-hold at most). Nothing in
 * flight, an ADD waiting, or no hold: they go at once. */
int
fx_io(int answers_due)
{
	int64_t now = rs_mono_ns();
	int held;
	rs_code rc;

	if (queue == NULL)
		return 500;
	held = rs_queue_hold_on(&hold, queue, answers_due, now);
	rc = rs_queue_hold_io(&hold, queue, held);
	if (held && rc == RS_OK)
		return rs_queue_hold_ms(&hold, now);
	if (rc != RS_OK) {
		queue_lost(rc == RS_EEOF ? "closed by rs-queue" :
		    rs_strerror(rc));
		return 500;
	}
	/* a write the socket did not take all of is tried again soon */
	return rs_queue_unsent(queue) ? 20 : 500;
}

void
fx_close(void)
{
	if (queue != NULL) {
		if (rs_queue_sync(queue) != RS_OK)
			rs_warn("unable to flush the last reports to rs-queue");
		rs_queue_close(queue);
		queue = NULL;
	}
	if (expfile != NULL) {
		rs_exp_close(expfile);
		expfile = NULL;
	}
}
