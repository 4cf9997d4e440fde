/* lease.h: the leader-election record of a coordination.k8s.io/v1 Lease,
 * the decision client-go's LeaderElector makes from it, and the Lease
 * object as JSON.
 *
 * The decision trusts no remote clock: a record is taken as "renewed" when
 * it differs from the one seen last, and it expires leaseDurationSeconds
 * after that local observation (monotonic clock), as client-go does. */
#ifndef RS_LEASE_LEASE_H
#define RS_LEASE_LEASE_H

#include <stdint.h>
#include <cJSON.h>

#include "code.h"

#define LEASE_ID_MAX   253   /* an identity, as upstream hostnames + uuid fit */
#define LEASE_TIME_MAX 40    /* a MicroTime as text */

/* The fields of spec that leader election reads and writes. */
struct lease_rec {
	char holder[LEASE_ID_MAX + 1];    /* "" when nobody holds it */
	long duration_s;                  /* leaseDurationSeconds */
	long transitions;                 /* leaseTransitions */
	char acquire[LEASE_TIME_MAX];     /* acquireTime, as the server wrote it */
	char renew[LEASE_TIME_MAX];       /* renewTime */
};

/* What one candidate knows. */
struct elector {
	const char *identity;
	long duration_s;          /* the lease duration this candidate writes */
	struct lease_rec obs;     /* the record last read or written */
	int64_t obs_ns;           /* when obs last changed, local monotonic */
	int have_obs;
};

enum lease_verdict {
	LEASE_WAIT,               /* held by another and not expired: do nothing */
	LEASE_ACQUIRE,            /* free or expired: take it */
	LEASE_RENEW,              /* ours: renew it */
};

/* decide.c: pure, no I/O. */
void elector_init(struct elector *e, const char *identity, long duration_s);
/* Notes a record read from the server: a change restarts its clock. */
void lease_observe(struct elector *e, const struct lease_rec *r, int64_t now);
/* Notes a record this candidate wrote: it is the observed one from now. */
void lease_wrote(struct elector *e, const struct lease_rec *r, int64_t now);
int lease_is_leader(const struct elector *e);
/* The observed record has not expired by the local clock. */
int lease_valid(const struct elector *e, int64_t now);
/* When the observed record expires (local monotonic ns). */
int64_t lease_expiry(const struct elector *e);
/* What to do with the observed record at now. */
enum lease_verdict lease_decide(const struct elector *e, int64_t now);
/* The record to write for v (LEASE_ACQUIRE or LEASE_RENEW) at wall-clock
 * time wall, over the observed record; over nothing when creating
 * (create != 0): no transition is counted on a new Lease. */
void lease_next(const struct elector *e, enum lease_verdict v, int create,
    double wall, struct lease_rec *out);
/* The record that gives the lease up: no holder, one second long, so that
 * the next candidate takes it at its next try (client-go's release). */
void lease_release_rec(const struct elector *e, double wall,
    struct lease_rec *out);

/* lease.c: the Lease object. */
/* Reads spec of a Lease; absent fields read as empty or zero. RS_EPARSE
 * when it is no Lease or a field is too long. */
rs_code lease_parse(const cJSON *lease, struct lease_rec *out);
/* The body of a POST (base NULL: a new Lease ns/name) or a PUT (base: the
 * object last read, its resourceVersion the precondition, every other field
 * kept). Text to free with cJSON_free, or NULL when out of memory. */
char *lease_body(const cJSON *base, const char *ns, const char *name,
    const struct lease_rec *r);

#endif
