/* decide.c: client-go's leader-election decision, without I/O, so that it
 * can be tested with a made-up clock. */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "lease.h"

void
elector_init(struct elector *e, const char *identity, long duration_s)
{
	memset(e, 0, sizeof *e);
	e->identity = identity;
	e->duration_s = duration_s;
}

static int
rec_equal(const struct lease_rec *a, const struct lease_rec *b)
{
	return strcmp(a->holder, b->holder) == 0 &&
	    a->duration_s == b->duration_s &&
	    a->transitions == b->transitions &&
	    strcmp(a->acquire, b->acquire) == 0 &&
	    strcmp(a->renew, b->renew) == 0;
}

/* The time of a record is when this process saw it change, never the
 * renewTime in it: another host's clock may be anywhere. */
void
lease_observe(struct elector *e, const struct lease_rec *r, int64_t now)
{
	if (e->have_obs && rec_equal(&e->obs, r))
		return;
	e->obs = *r;
	e->obs_ns = now;
	e->have_obs = 1;
}

void
lease_wrote(struct elector *e, const struct lease_rec *r, int64_t now)
{
	e->obs = *r;
	e->obs_ns = now;
	e->have_obs = 1;
}

int
lease_is_leader(const struct elector *e)
{
	return e->have_obs && strcmp(e->obs.holder, e->identity) == 0;
}

int64_t
lease_expiry(const struct elector *e)
{
	return e->obs_ns + (int64_t)e->obs.duration_s * 1000000000;
}

int
lease_valid(const struct elector *e, int64_t now)
{
	return e->have_obs && lease_expiry(e) > now;
}

enum lease_verdict
lease_decide(const struct elector *e, int64_t now)
{
	if (lease_is_leader(e))
		return LEASE_RENEW;
	if (e->have_obs && e->obs.holder[0] != '\0' && lease_valid(e, now))
		return LEASE_WAIT;
	return LEASE_ACQUIRE;
}

void
lease_next(const struct elector *e, enum lease_verdict v, int create,
    double wall, struct lease_rec *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->holder, sizeof out->holder, "%s", e->identity);
	out->duration_s = e->duration_s;
	rs_format_rfc3339_micro(wall, out->renew);
	memcpy(out->acquire, out->renew, sizeof out->acquire);
	if (create || !e->have_obs)
		return;
	if (v == LEASE_RENEW) {
		memcpy(out->acquire, e->obs.acquire, sizeof out->acquire);
		out->transitions = e->obs.transitions;
	} else {
		out->transitions = e->obs.transitions + 1;
	}
}

void
lease_release_rec(const struct elector *e, double wall, struct lease_rec *out)
{
	memset(out, 0, sizeof *out);
	out->duration_s = 1;
	out->transitions = e->have_obs ? e->obs.transitions : 0;
	rs_format_rfc3339_micro(wall, out->renew);
	memcpy(out->acquire, out->renew, sizeof out->acquire);
}
