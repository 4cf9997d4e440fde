/* shard.c: shard mode as one event loop (doc/sharding.md).
 *
 * A round: at once, one LIST of the group's Leases and the renewals of
 * the member Lease and of each held bucket (or its release), each a PUT
 * over the Lease as this instance last wrote it, as client-go's leader
 * renews without reading first: a renewal costs one request however slow
 * the LIST. When the LIST is in: the takes and the deletions of stale
 * members; when the last answer is in, prog is restarted if the set it
 * should own changed. Each bucket and each member is judged by decide.c's
 * elector, the same rule as leader election: a record expires a lease
 * duration after this process saw it change.
 *
 * A held bucket is lost when no renewal succeeded for the renew deadline,
 * counted from the start of the last one that did, or when a renewal
 * meets a Conflict (another wrote it) or NotFound; its fence slot is
 * zeroed at once and prog restarted without it. The LIST says nothing of
 * a held bucket: it may be older than the renewal sent beside it. A
 * bucket given up (above the fair share) is zeroed in the fence at once
 * too, but renewed until prog is gone and only then written free: no
 * other instance may take it while prog may still act on it.
 *
 * Leases of another B (the label SHARD_B_LABEL) cover other namespaces,
 * some under the names of this B's buckets: while one of their buckets is
 * held, nothing is taken; those not held are deleted. A bucket taken goes
 * to prog only once the next round's LIST, sent after the take, shows no
 * bucket of another B held: of two instances of different B that take at
 * once, the later taker's LIST sees the earlier one's Lease, so at most
 * one of them acts (doc/sharding.md, "Changing B"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "run.h"
#include "shardmode.h"
#include "shard.h"

#define MAX_WAIT_NS 1000000000LL
#define JITTER 0.2     /* of the retry period: see round_next */

enum why { WHY_NONE, WHY_TERM, WHY_PROG };
enum rstate { R_IDLE, R_BUSY };
enum pstate { P_NONE, P_RUN, P_STOP };
enum rq { RQ_SELF, RQ_RENEW, RQ_TAKE, RQ_RELEASE, RQ_DELETE };

struct lz {                       /* a Lease this instance writes */
	struct elector e;
	cJSON *cur;               /* as last listed or written; NULL: absent */
	int held, releasing;
	int fresh;                /* taken, not yet confirmed by a LIST */
	int64_t renewed;          /* start of the last write that won */
};

struct member {                   /* another instance's member Lease, or
                                     a Lease of another B */
	char name[LEASE_ID_MAX + 1];
	struct elector e;
	char rv[64];
	int listed;
	int kind;                 /* 'm': a member of this B; 'b' or 'o': a
                                     bucket or member of another B */
	unsigned b;               /* that B (0: unknown) */
};

struct sh {
	struct rs_kube *k;
	const struct shard_opts *o;
	unsigned nb;
	char coll[512], list[768];
	char self_name[LEASE_ID_MAX + 1];
	struct lz b[SHARD_MAX], self;
	struct member *mem;
	size_t nmem;
	unsigned live, offset;
	int blocked;              /* another B's bucket held, last LIST */
	shard_set foreign;        /* names of this B's buckets that a Lease
	                             of another B has */
	enum rstate rs;
	int64_t rstart, next;
	int pending;
	enum pstate ps;
	struct run run;
	shard_set prog_set, file_set;
	int file_written;
	unsigned long gen;
	enum why why;
	int64_t tick;
	struct shard_out out;
	char **argv;
	const sigset_t *mask;
};

struct req {
	struct sh *s;
	enum rq kind;
	unsigned idx;
	int64_t started;
};

static void round_end(struct sh *s);

static struct lz *
lz_of(struct sh *s, const struct req *q)
{
	return q->kind == RQ_SELF ? &s->self : &s->b[q->idx];
}

static void
bucket_name(const struct sh *s, unsigned i, char *buf, size_t n)
{
	snprintf(buf, n, "%s-b-%03u", s->o->eo.name, i);
}

static void
report(const struct sh *s, const char *what, rs_code rc,
    const struct rs_kresp *resp)
{
	if (rc == RS_EAPI && (resp->status.code == 409 ||
	    resp->status.code == 404)) {
		rs_info(2, "%s: another instance wrote first", what);
		return;
	}
	rs_error("unable to %s: %s%s%s", what, rs_strerror(rc),
	    resp->status.message[0] ? ": " : "", resp->status.message);
}

/* A bucket's fence slot follows whether prog may act on it. */
static void
fence(struct sh *s, unsigned i)
{
	struct lz *b = &s->b[i];

	shard_out_fence(&s->out, i, b->held && !b->releasing && !b->fresh ?
	    b->renewed + s->o->eo.renew_deadline : 0);
}

static void
lose(struct sh *s, unsigned i, const char *why)
{
	struct lz *b = &s->b[i];

	rs_error("lost bucket %u (lease %s/%s-b-%03u): %s", i, s->o->eo.ns,
	    s->o->eo.name, i, why);
	b->held = b->releasing = b->fresh = 0;
	fence(s, i);
	if (s->ps == P_RUN && set_has(s->prog_set, i)) {
		rs_info(1, "stopping prog: it owned bucket %u", i);
		s->ps = P_STOP;
		run_stop(&s->run, rs_mono_ns());
	}
}

/* The next PUT says this B (a member Lease of an instance restarted
 * with another B is one of this B from then on). */
static rs_code
label_b(cJSON *o, unsigned nb)
{
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata"), *labels;
	char num[16];

	if (meta == NULL)
		return RS_OK;
	if ((labels = cJSON_GetObjectItemCaseSensitive(meta, "labels")) ==
	    NULL && (labels = cJSON_AddObjectToObject(meta, "labels")) == NULL)
		return RS_ENOMEM;
	snprintf(num, sizeof num, "%u", nb);
	cJSON_DeleteItemFromObjectCaseSensitive(labels, SHARD_B_LABEL);
	return cJSON_AddStringToObject(labels, SHARD_B_LABEL, num) ? RS_OK :
	    RS_ENOMEM;
}

/* The Lease of an answer (or of a LIST's item, given kind and
 * apiVersion again) becomes the base of the next PUT. */
static rs_code
keep(struct lz *l, const cJSON *o, struct lease_rec *rec, unsigned nb)
{
	cJSON *d;
	rs_code rc;

	if ((rc = lease_parse(o, rec)) != RS_OK)
		return rc;
	if ((d = cJSON_Duplicate(o, 1)) == NULL)
		return RS_ENOMEM;
	cJSON_DeleteItemFromObjectCaseSensitive(d, "kind");
	cJSON_DeleteItemFromObjectCaseSensitive(d, "apiVersion");
	if (!cJSON_AddStringToObject(d, "kind", "Lease") ||
	    !cJSON_AddStringToObject(d, "apiVersion",
	    "coordination.k8s.io/v1") || label_b(d, nb) != RS_OK) {
		cJSON_Delete(d);
		return RS_ENOMEM;
	}
	cJSON_Delete(l->cur);
	l->cur = d;
	return RS_OK;
}

/* Another wrote the Lease since this instance did (or deleted it): a
 * held bucket is lost; the member Lease is read again from the LIST. */
static void
write_refused(struct sh *s, const struct req *q, rs_code rc,
    const struct rs_kresp *resp)
{
	struct lz *l;

	if (q->kind == RQ_DELETE || q->kind == RQ_TAKE || (rc == RS_EAPI &&
	    resp->status.code != 409))
		return;
	l = lz_of(s, q);
	cJSON_Delete(l->cur);
	l->cur = NULL;
	if (q->kind != RQ_SELF && l->held)
		lose(s, q->idx, rc == RS_ENOTFOUND ? "its lease was deleted" :
		    "another instance wrote its lease");
}

static void
on_write(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct req *q = arg;
	struct sh *s = q->s;
	struct lz *l = q->kind == RQ_DELETE ? NULL : lz_of(s, q);
	struct lease_rec rec;
	char what[128];
	cJSON *o = NULL;

	snprintf(what, sizeof what, "%s %s",
	    q->kind == RQ_DELETE ? "delete a stale member of" :
	    q->kind == RQ_RELEASE ? "release a bucket of" :
	    q->kind == RQ_SELF ? "renew the member lease of" :
	    "write a bucket of", s->o->eo.name);
	if (rc != RS_OK)
		report(s, what, rc, resp);
	else if (l != NULL && (resp->body == NULL ||
	    rs_json_parse(resp->body, resp->len, &o, NULL) != RS_OK ||
	    keep(l, o, &rec, s->nb) != RS_OK)) {
		rs_error("unable to read the lease written for %s", what);
		rc = RS_EPARSE;
	}
	cJSON_Delete(o);
	if (rc == RS_EAPI || rc == RS_ENOTFOUND)
		write_refused(s, q, rc, resp);
	if (rc == RS_OK && l != NULL) {
		lease_wrote(&l->e, &rec, rs_mono_ns());
		if (q->kind == RQ_RELEASE) {
			rs_info(0, "released bucket %u", q->idx);
			l->held = l->releasing = l->fresh = 0;
		} else if (q->kind == RQ_SELF || l->held ||
		    q->kind == RQ_TAKE) {
			/* A renewal answered after the bucket was given up
			 * for lost does not bring it back: the LIST will. */
			if (q->kind == RQ_TAKE && !l->held) {
				rs_info(0, "acquired bucket %u as %s", q->idx,
				    s->o->eo.identity);
				l->fresh = 1;
			}
			l->held = 1;
			l->renewed = q->started;
		}
		if (q->kind != RQ_SELF)
			fence(s, q->idx);
	}
	free(q);
	if (--s->pending == 0)
		round_end(s);
}

static void
submit(struct sh *s, enum rq kind, unsigned idx, const char *method,
    const char *path, char *body)
{
	struct req *q = malloc(sizeof *q);
	rs_code rc = RS_ENOMEM;

	if (q != NULL && body != NULL) {
		q->s = s;
		q->kind = kind;
		q->idx = idx;
		q->started = rs_mono_ns();
		rs_info(4, "%s %s", method, path);
		rc = rs_kube_submit(s->k, method, path, NULL, body,
		    strlen(body), on_write, q);
	}
	cJSON_free(body);
	if (rc != RS_OK) {
		rs_error("unable to send a request: %s", rs_strerror(rc));
		free(q);
		return;
	}
	s->pending++;
}

/* A new Lease of the group: the label is what the LIST selects. */
static char *
new_body(struct sh *s, const char *name, const struct lease_rec *r)
{
	cJSON *o = cJSON_CreateObject(), *meta, *labels;
	char *t = NULL, num[16];

	snprintf(num, sizeof num, "%u", s->nb);
	meta = o ? cJSON_AddObjectToObject(o, "metadata") : NULL;
	labels = meta ? cJSON_AddObjectToObject(meta, "labels") : NULL;
	if (labels && cJSON_AddStringToObject(o, "apiVersion",
	    "coordination.k8s.io/v1") && cJSON_AddStringToObject(o, "kind",
	    "Lease") && cJSON_AddStringToObject(meta, "name", name) &&
	    cJSON_AddStringToObject(meta, "namespace", s->o->eo.ns) &&
	    cJSON_AddStringToObject(labels, SHARD_LABEL, s->o->eo.name) &&
	    cJSON_AddStringToObject(labels, SHARD_B_LABEL, num))
		t = lease_body(o, s->o->eo.ns, name, r);
	cJSON_Delete(o);
	return t;
}

/* Takes, renews or (rel) gives up the Lease l named name. */
static void
write_lz(struct sh *s, struct lz *l, enum rq kind, unsigned idx,
    const char *name)
{
	char path[1024];
	struct lease_rec r;

	if (kind == RQ_RELEASE)
		lease_release_rec(&l->e, rs_wall_now(), &r);
	else
		lease_next(&l->e, lease_is_leader(&l->e) ? LEASE_RENEW :
		    LEASE_ACQUIRE, l->cur == NULL, rs_wall_now(), &r);
	if (l->cur == NULL) {
		submit(s, kind, idx, "POST", s->coll, new_body(s, name, &r));
		return;
	}
	snprintf(path, sizeof path, "%s/%s", s->coll, name);
	submit(s, kind, idx, "PUT", path, lease_body(l->cur, s->o->eo.ns,
	    name, &r));
}

static void
delete_member(struct sh *s, const struct member *m)
{
	char path[1024], body[256];

	if (m->kind == 'm')
		rs_info(1, "deleting the stale member lease %s/%s",
		    s->o->eo.ns, m->name);
	else
		rs_info(0, "deleting the lease %s/%s of %u buckets, not %u: "
		    "it is not held", s->o->eo.ns, m->name, m->b, s->nb);
	snprintf(path, sizeof path, "%s/%s", s->coll, m->name);
	snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":"
	    "\"DeleteOptions\",\"preconditions\":{\"resourceVersion\":"
	    "\"%s\"}}", m->rv);
	submit(s, RQ_DELETE, 0, "DELETE", path, strdup(body));
}

static struct member *
member_of(struct sh *s, const char *name, int kind, unsigned b)
{
	struct member *m;
	size_t i;

	for (i = 0; i < s->nmem; i++)
		if (strcmp(s->mem[i].name, name) == 0) {
			m = &s->mem[i];
			if (m->kind != kind || m->b != b) {
				m->kind = kind;
				m->b = b;
				elector_init(&m->e, "", 0);
			}
			return m;
		}
	m = realloc(s->mem, (s->nmem + 1) * sizeof *m);
	if (m == NULL)
		return NULL;
	s->mem = m;
	m = &s->mem[s->nmem++];
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", name);
	m->kind = kind;
	m->b = b;
	elector_init(&m->e, "", 0);
	return m;
}

static void
note_item(struct sh *s, const cJSON *it, int64_t now, shard_set seen)
{
	const char *name = rs_json_str(it, "metadata", "name", (char *)NULL);
	const char *rv = rs_json_str(it, "metadata", "resourceVersion",
	    (char *)NULL);
	struct lease_rec rec;
	struct member *m;
	unsigned i, b;
	int kind;

	if (name == NULL || (kind = plan_name(s->o->eo.name, name, &i)) == 0)
		return;
	b = plan_lease_b(it);
	/* Another B's: a bucket of another B, or one without the label
	 * (its B unknown), or a member labelled with another B. */
	if ((kind == 'b' && (b != s->nb || i >= s->nb)) ||
	    (kind == 'm' && b != 0 && b != s->nb)) {
		if (kind == 'b' && i < s->nb)
			set_put(s->foreign, i, 1);
		if (lease_parse(it, &rec) == RS_OK && (m = member_of(s, name,
		    kind == 'b' ? 'b' : 'o', b)) != NULL) {
			lease_observe(&m->e, &rec, now);
			snprintf(m->rv, sizeof m->rv, "%s", rv ? rv : "");
			m->listed = 1;
		}
		return;
	}
	if (kind == 'b') {
		set_put(seen, i, 1);
		/* A held bucket is known by its renewals. */
		if (!s->b[i].held && keep(&s->b[i], it, &rec, s->nb) == RS_OK)
			lease_observe(&s->b[i].e, &rec, now);
	} else if (kind == 'm' && strcmp(name, s->self_name) == 0) {
		if (s->self.cur == NULL && keep(&s->self, it, &rec, s->nb) == RS_OK)
			lease_observe(&s->self.e, &rec, now);
	} else if (kind == 'm' && lease_parse(it, &rec) == RS_OK &&
	    (m = member_of(s, name, 'm', b)) != NULL) {
		lease_observe(&m->e, &rec, now);
		snprintf(m->rv, sizeof m->rv, "%s", rv ? rv : "");
		m->listed = 1;
	}
}

/* Forgets what the LIST no longer shows: deleted Leases. */
static void
forget(struct sh *s, const shard_set seen)
{
	size_t i, j;
	unsigned b;

	for (b = 0; b < s->nb; b++)
		if (!set_has(seen, b) && !s->b[b].held && s->b[b].cur != NULL) {
			cJSON_Delete(s->b[b].cur);
			s->b[b].cur = NULL;
			elector_init(&s->b[b].e, s->o->eo.identity,
			    (long)(s->o->eo.lease_duration / 1000000000LL));
		}
	for (i = j = 0; i < s->nmem; i++)
		if (s->mem[i].listed) {
			s->mem[i].listed = 0;
			s->mem[j++] = s->mem[i];
		}
	s->nmem = j;
}

static int
held_valid(const struct member *m, int64_t now)
{
	return m->e.obs.holder[0] && lease_valid(&m->e, now);
}

/* A bucket of another B is held: its holder may act on any of ours.
 * Said once when it starts and once when it ends. */
static int
other_b_held(struct sh *s, int64_t now)
{
	const struct member *m = NULL;
	size_t i;

	for (i = 0; i < s->nmem && m == NULL; i++)
		if (s->mem[i].kind == 'b' && held_valid(&s->mem[i], now))
			m = &s->mem[i];
	if (m != NULL && !s->blocked)
		rs_info(0, "lease %s/%s of %u buckets (not %u) is held by %s: "
		    "taking no bucket until it is released or expires",
		    s->o->eo.ns, m->name, m->b, s->nb, m->e.obs.holder);
	else if (m == NULL && s->blocked)
		rs_info(0, "no lease of another number of buckets is held");
	s->blocked = m != NULL;
	return s->blocked;
}

/* The buckets taken last round: confirmed for prog when this round's
 * LIST, sent after the takes were answered, shows no bucket of another B
 * held; else given up again, before prog ever had them. */
static void
confirm(struct sh *s, int blocked)
{
	unsigned i;

	for (i = 0; i < s->nb; i++) {
		if (!s->b[i].held || !s->b[i].fresh)
			continue;
		if (blocked && !s->b[i].releasing) {
			rs_info(0, "giving up bucket %u: a lease of another "
			    "number of buckets is held", i);
			s->b[i].releasing = 1;
		} else if (!blocked) {
			s->b[i].fresh = 0;
		}
		fence(s, i);
	}
}

static unsigned
count_live(struct sh *s, int64_t now)
{
	unsigned n = 1, before = s->live;
	size_t i;

	for (i = 0; i < s->nmem; i++)
		if (s->mem[i].kind == 'm' && held_valid(&s->mem[i], now))
			n++;
	if (n != before)
		rs_info(1, "%u live members in group %s", n, s->o->eo.name);
	s->live = n;
	return n;
}

/* Steps 3 and 4: the fair share, then what to take or give up. */
static void
plan(struct sh *s, int blocked, shard_set take)
{
	shard_set active = { 0 }, free = { 0 }, drop;
	unsigned i, n, share;

	for (i = 0; i < s->nb; i++) {
		if (s->b[i].held && !s->b[i].releasing)
			set_put(active, i, 1);
		else if (!s->b[i].held && !set_has(s->foreign, i) &&
		    lease_decide(&s->b[i].e, s->rstart) != LEASE_WAIT)
			set_put(free, i, 1);
	}
	n = set_count(active);
	share = plan_share(s->nb, s->live);
	memset(take, 0, sizeof(shard_set));
	if (n < share && !blocked)
		plan_take(free, s->nb, s->offset, share - n, take);
	if (n <= share)
		return;
	plan_drop(active, s->nb, n - share, drop);
	for (i = 0; i < s->nb; i++)
		if (set_has(drop, i)) {
			rs_info(1, "giving up bucket %u: above the share of %u",
			    i, share);
			s->b[i].releasing = 1;
			fence(s, i);
		}
}

static int
prog_uses(const struct sh *s, unsigned i)
{
	return s->ps != P_NONE && set_has(s->prog_set, i);
}

/* Step 4's writes, once the LIST is in. */
static void
writes(struct sh *s, int blocked, int64_t now)
{
	char name[LEASE_ID_MAX + 1];
	shard_set take;
	size_t m;
	unsigned i;

	plan(s, blocked, take);
	for (i = 0; i < s->nb; i++)
		if (set_has(take, i)) {
			bucket_name(s, i, name, sizeof name);
			write_lz(s, &s->b[i], RQ_TAKE, i, name);
		}
	for (m = 0; m < s->nmem; m++)
		if (s->mem[m].kind == 'm' ? now - s->mem[m].e.obs_ns >
		    plan_stale_ns(s->mem[m].e.obs.duration_s) :
		    !held_valid(&s->mem[m], now))
			delete_member(s, &s->mem[m]);
}

/* Step 2, beside the LIST: what is held is renewed (a bucket given up,
 * once prog no longer acts on it, is written free instead). A member
 * Lease not known yet waits for the LIST: it is read from there, or
 * created when not there. */
static void
renewals(struct sh *s)
{
	char name[LEASE_ID_MAX + 1];
	unsigned i;

	if (s->self.cur != NULL)
		write_lz(s, &s->self, RQ_SELF, 0, s->self_name);
	for (i = 0; i < s->nb; i++)
		if (s->b[i].held) {
			bucket_name(s, i, name, sizeof name);
			write_lz(s, &s->b[i], s->b[i].releasing &&
			    !prog_uses(s, i) ? RQ_RELEASE : RQ_RENEW, i, name);
		}
}

static void
on_list(void *arg, rs_code rc, struct rs_kresp *resp)
{
	struct sh *s = arg;
	const cJSON *items, *it;
	shard_set seen = { 0 };
	int64_t now = rs_mono_ns();
	cJSON *o = NULL;
	int blocked;

	if (rc == RS_OK && (resp->body == NULL || rs_json_parse(resp->body,
	    resp->len, &o, NULL) != RS_OK))
		rc = RS_EPARSE;
	if (rc != RS_OK) {
		report(s, "list the group's leases", rc, resp);
	} else {
		items = rs_json_get(o, "items", (char *)NULL);
		memset(s->foreign, 0, sizeof s->foreign);
		cJSON_ArrayForEach(it, items)
			note_item(s, it, now, seen);
		forget(s, seen);
		count_live(s, now);
		blocked = other_b_held(s, now);
		confirm(s, blocked);
		/* The member Lease neither listed nor written: created. */
		if (s->self.cur == NULL)
			write_lz(s, &s->self, RQ_SELF, 0, s->self_name);
		writes(s, blocked, now);
	}
	cJSON_Delete(o);
	if (--s->pending == 0)
		round_end(s);
}

static void
round_start(struct sh *s, int64_t now)
{
	s->rs = R_BUSY;
	s->rstart = now;
	s->pending = 1;   /* held until every request is out */
	/* A holder renews every retry period, as client-go's leader does;
	 * a little jitter keeps members from moving in step. client-go's
	 * 1.2 would let a round come later than the renew deadline. */
	s->next = now + s->o->eo.retry_period +
	    (int64_t)(drand48() * JITTER * (double)s->o->eo.retry_period);
	rs_info(4, "GET %s", s->list);
	if (rs_kube_submit(s->k, "GET", s->list, NULL, NULL, 0, on_list, s) !=
	    RS_OK)
		rs_error("unable to send a request: %s", rs_strerror(RS_ENOMEM));
	else
		s->pending++;
	renewals(s);
	if (--s->pending == 0)
		round_end(s);
}

static void
active_set(const struct sh *s, shard_set out)
{
	unsigned i;

	memset(out, 0, sizeof(shard_set));
	for (i = 0; i < s->nb; i++)
		if (s->b[i].held && !s->b[i].releasing && !s->b[i].fresh)
			set_put(out, i, 1);
}

/* Step 5: a set that changed in this round stops prog, once. */
static void
round_end(struct sh *s)
{
	shard_set a;

	s->rs = R_IDLE;
	active_set(s, a);
	if (s->ps == P_RUN && memcmp(a, s->prog_set, sizeof a) != 0) {
		rs_info(1, "held set changed (%u buckets): restarting prog",
		    set_count(a));
		s->ps = P_STOP;
		run_stop(&s->run, rs_mono_ns());
	}
}

/* Between rounds only: prog gets a whole round's set, not part of it. */
static void
maybe_start(struct sh *s)
{
	shard_set a;

	if (s->ps != P_NONE || s->rs != R_IDLE || s->why != WHY_NONE)
		return;
	active_set(s, a);
	if (s->file_written && memcmp(a, s->file_set, sizeof a) == 0 &&
	    set_count(a) == 0)
		return;
	memcpy(s->file_set, a, sizeof a);
	s->file_written = 1;
	s->gen++;
	if (shard_out_file(&s->out, a, s->gen) != RS_OK || set_count(a) == 0)
		return;
	rs_info(1, "starting prog with %u buckets (generation %lu)",
	    set_count(a), s->gen);
	if (run_start(&s->run, s->argv, s->o->eo.kill_after, s->mask) != RS_OK)
		return;
	memcpy(s->prog_set, a, sizeof a);
	s->ps = P_RUN;
}

static void
check_deadlines(struct sh *s, int64_t now)
{
	unsigned i;

	for (i = 0; i < s->nb; i++)
		if (s->b[i].held &&
		    now >= s->b[i].renewed + s->o->eo.renew_deadline)
			lose(s, i, "no renewal succeeded within the renew "
			    "deadline");
}

static void
read_signals(struct sh *s, int sigfd)
{
	struct signalfd_siginfo si;

	while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		if ((si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) &&
		    s->why == WHY_NONE) {
			rs_info(1, "got signal %u: stopping", si.ssi_signo);
			s->why = WHY_TERM;
		}
	if (s->ps != P_NONE && run_reap(&s->run)) {
		if (s->ps == P_RUN && s->why == WHY_NONE) {
			rs_error("prog ended on its own (exit code %d): "
			    "stopping", s->run.code);
			s->why = WHY_PROG;
		}
		s->ps = P_NONE;
		memset(s->prog_set, 0, sizeof s->prog_set);
	}
}

/* Gives up every Lease at the end, blocking (nothing else is waiting),
 * within one renew deadline: TERM must not wait on a dead server. */
static void
release_all(struct sh *s)
{
	int64_t end = rs_mono_ns() + s->o->eo.renew_deadline;
	char name[LEASE_ID_MAX + 1], path[1024], *body;
	struct lease_rec r;
	struct rs_kresp resp;
	unsigned i;
	struct lz *l;

	for (i = 0; i <= s->nb && rs_mono_ns() < end; i++) {
		l = i < s->nb ? &s->b[i] : &s->self;
		if (i < s->nb && !l->held)
			continue;
		if (l->cur == NULL || !lease_is_leader(&l->e))
			continue;
		if (i < s->nb)
			bucket_name(s, i, name, sizeof name);
		else
			snprintf(name, sizeof name, "%s", s->self_name);
		lease_release_rec(&l->e, rs_wall_now(), &r);
		if ((body = lease_body(l->cur, s->o->eo.ns, name, &r)) == NULL)
			return;
		snprintf(path, sizeof path, "%s/%s", s->coll, name);
		if (rs_kube_do(s->k, "PUT", path, NULL, body, strlen(body),
		    &resp) == RS_OK)
			rs_info(i < s->nb ? 0 : 1, "released lease %s/%s",
			    s->o->eo.ns, name);
		cJSON_free(body);
		rs_kresp_free(&resp);
	}
}

static int
wait_ms(const struct sh *s, int64_t now)
{
	int64_t w = MAX_WAIT_NS, t;
	unsigned i;

	if (s->rs == R_IDLE && s->why == WHY_NONE)
		w = s->next - now;
	for (i = 0; i < s->nb; i++)
		if (s->b[i].held) {
			t = s->b[i].renewed + s->o->eo.renew_deadline - now;
			if (t < w)
				w = t;
		}
	if (s->tick >= 0 && s->tick < w)
		w = s->tick;
	if (w > MAX_WAIT_NS)
		w = MAX_WAIT_NS;
	return w <= 0 ? 0 : (int)((w + 999999) / 1000000);
}

static int
setup(struct sh *s, const struct shard_opts *o, char **argv,
    const sigset_t *mask)
{
	char *esc, sel[300], num[16];
	uint64_t h = rs_shard_hash(o->eo.identity, strlen(o->eo.identity));
	unsigned i;

	s->o = o;
	s->nb = o->nbuckets;
	s->argv = argv;
	s->mask = mask;
	s->tick = -1;
	snprintf(s->coll, sizeof s->coll,
	    "/apis/coordination.k8s.io/v1/namespaces/%s/leases", o->eo.ns);
	snprintf(sel, sizeof sel, "%s=%s", SHARD_LABEL, o->eo.name);
	if ((esc = rs_kube_escape(sel)) == NULL)
		return -1;
	snprintf(s->list, sizeof s->list, "%s?labelSelector=%s", s->coll, esc);
	free(esc);
	snprintf(s->self_name, sizeof s->self_name, "%s-m-%016llx",
	    o->eo.name, (unsigned long long)h);
	s->offset = (unsigned)(h % s->nb);
	for (i = 0; i < s->nb; i++)
		elector_init(&s->b[i].e, o->eo.identity,
		    (long)(o->eo.lease_duration / 1000000000LL));
	elector_init(&s->self.e, o->eo.identity,
	    (long)(o->eo.lease_duration / 1000000000LL));
	if (shard_out_open(&s->out, o) != RS_OK)
		return -1;
	/* prog finds the files where rs-lease wrote them. */
	snprintf(num, sizeof num, "%u", s->nb);
	if (setenv("RS_SHARDS", num, 1) != 0 ||
	    (o->shard_file && setenv("RS_SHARD_FILE", o->shard_file, 1)) ||
	    (o->fence && setenv("RS_FENCE_FILE", o->fence, 1)))
		return -1;
	return 0;
}

int
shard_run(struct rs_kube *k, const struct shard_opts *o, char **argv,
    int sigfd, const sigset_t *mask)
{
	static struct sh s;
	int64_t now;
	unsigned i;

	memset(&s, 0, sizeof s);
	s.k = k;
	if (setup(&s, o, argv, mask) != 0)
		return 111;
	rs_info(0, "joining shard group %s/%s (%u buckets) as %s", o->eo.ns,
	    o->eo.name, s.nb, o->eo.identity);
	s.next = rs_mono_ns();
	for (;;) {
		now = rs_mono_ns();
		if (s.rs == R_IDLE && s.why == WHY_NONE && now >= s.next)
			round_start(&s, now);
		rs_kube_run(k, wait_ms(&s, now), sigfd);
		read_signals(&s, sigfd);
		now = rs_mono_ns();
		check_deadlines(&s, now);
		if (s.why != WHY_NONE && s.ps == P_RUN) {
			s.ps = P_STOP;
			run_stop(&s.run, now);
		}
		s.tick = run_tick(&s.run, now);
		maybe_start(&s);
		if (s.why != WHY_NONE && s.ps == P_NONE && s.rs == R_IDLE)
			break;
	}
	for (i = 0; i < s.nb; i++)
		shard_out_fence(&s.out, i, 0);
	release_all(&s);
	return s.why == WHY_PROG ? s.run.code : 0;
}
