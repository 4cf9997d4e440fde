/* reachable.c: keys whose round failed while the API server refused
 * connections are sent to rs-queue again the moment it says it is ready.
 * Their failure is counted as upstream counts it (RETRY: the rate
 * limiter's next step, 5 ms doubling), but a refusal says nothing of the
 * key: it says nothing listened. After a restart or an outage of some
 * seconds those steps have grown to seconds, and kube-controller-manager's
 * keys sleep them out with the server already back; here a GET /readyz
 * every 0.25 s (a refused connect costs the server nothing) ends the wait,
 * and an ADD puts each parked key at the back of the queue at once. A key
 * whose own retry comes first leaves the parked set. */
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "log.h"

static struct rs_strmap parked;    /* key -> its copy, which the map's
                                    * key points to */
static int refusing;               /* the last request's fate */
static int probing;                /* a probe waits or is in flight */
static int off;                    /* no rs-queue to tell, or input over */

void
reach_init(int on)
{
	rs_strmap_init(&parked);
	off = !on;
}

/* No round starts here again: a probe would only keep this process from
 * exiting while the server is away, and the keys' RETRYs wait in rs-queue
 * (the next pipeline's list queues them anyway). */
void
reach_end(void)
{
	off = 1;
}

void
reach_seen(const struct rs_kresp *resp)
{
	if (resp != NULL && resp->refused)
		refusing = 1;
	else if (resp != NULL && resp->code != 0)
		refusing = 0;
}

static void probe(void);

static void
probe_done(void *arg, rs_code rc, struct rs_kresp *resp)
{
	const char *key;
	void *v;
	size_t i = 0, n = 0;

	(void)arg;
	(void)resp;
	probing = 0;
	if (rc != RS_OK) {
		probe();
		return;
	}
	while (rs_strmap_next(&parked, &i, &key, &v))
		n += fx_add(key) == RS_OK;
	if (parked.len > 0)
		rs_info(1, "the API server is ready again: %zu of %zu keys "
		    "parked by its refusals queued at once", n, parked.len);
	else
		rs_info(2, "the API server is ready again: each parked key "
		    "came back by its own retry first");
	for (i = 0; rs_strmap_next(&parked, &i, &key, &v); )
		free(v);
	rs_strmap_free(&parked);
}

static void
probe(void)
{
	if (probing || parked.len == 0 || off)
		return;
	probing = 1;
	req_send_later(RS_KUBE_READYZ_EVERY_MS / 1e3, "GET", RS_KUBE_READYZ,
	    probe_done, NULL);
}

void
reach_park(const char *key)
{
	char *copy;

	if (!refusing || off)
		return;
	if (rs_strmap_get(&parked, key) != NULL)
		return;
	if ((copy = strdup(key)) == NULL ||
	    rs_strmap_put(&parked, copy, copy, NULL) != RS_OK) {
		free(copy);
		rs_warn("%s: unable to park until the server is back: %s", key,
		    rs_strerror(RS_ENOMEM));
		return;
	}
	rs_info(2, "%s: the API server refuses connections: queued again "
	    "when it is ready", key);
	probe();
}

void
reach_taken(const char *key)
{
	free(rs_strmap_del(&parked, key));
}
