/* shardlist.c: rs-lease --list: one LIST of a group's Leases, printed
 * for an operator. Whether a member is live is judged here by the wall
 * clock against its renewTime, the one thing a single look can go by
 * (the instances themselves never trust a remote clock). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "shardmode.h"

static const char *
liveness(const struct lease_rec *r, double now)
{
	double t;

	if (r->holder[0] == '\0')
		return "released";
	if (rs_parse_rfc3339(r->renew, &t) != 0)
		return "unknown";
	return t + (double)r->duration_s > now ? "live" : "expired";
}

static void
print_item(const struct shard_opts *o, const cJSON *it, double now)
{
	const char *name = rs_json_str(it, "metadata", "name", (char *)NULL);
	struct lease_rec r;
	unsigned i, b;
	int kind;

	if (name == NULL || lease_parse(it, &r) != RS_OK ||
	    (kind = plan_name(o->eo.name, name, &i)) == 0)
		return;
	if (kind == 'b')
		printf("bucket %03u %s %s %s", i, r.holder[0] ? r.holder : "-",
		    liveness(&r, now), r.renew[0] ? r.renew : "-");
	else
		printf("member %s %s %s %s", name, r.holder[0] ? r.holder : "-",
		    liveness(&r, now), r.renew[0] ? r.renew : "-");
	/* the B it was written for: Leases of two B are two splits */
	if ((b = plan_lease_b(it)) != 0)
		printf(" %u\n", b);
	else
		printf(" -\n");
}

int
shard_list(struct rs_kube *k, const struct shard_opts *o)
{
	char path[1024], sel[300], *esc;
	const cJSON *it;
	struct rs_kresp resp;
	cJSON *body = NULL;
	rs_code rc;

	snprintf(sel, sizeof sel, "%s=%s", SHARD_LABEL, o->eo.name);
	if ((esc = rs_kube_escape(sel)) == NULL)
		rs_fatal(111, "unable to list: %s", rs_strerror(RS_ENOMEM));
	snprintf(path, sizeof path, "/apis/coordination.k8s.io/v1/namespaces/"
	    "%s/leases?labelSelector=%s", o->eo.ns, esc);
	free(esc);
	rc = rs_kube_do(k, "GET", path, NULL, NULL, 0, &resp);
	if (rc == RS_OK && (resp.body == NULL || rs_json_parse(resp.body,
	    resp.len, &body, NULL) != RS_OK))
		rc = RS_EPARSE;
	if (rc != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to list the leases of %s/%s: "
		    "%s%s%s", o->eo.ns, o->eo.name, rs_strerror(rc),
		    resp.status.message[0] ? ": " : "", resp.status.message);
	rs_kresp_free(&resp);
	/* The server lists by name: buckets in order, then members. */
	cJSON_ArrayForEach(it, rs_json_get(body, "items", (char *)NULL))
		print_item(o, it, rs_wall_now());
	cJSON_Delete(body);
	return fflush(stdout) == 0 ? 0 : 111;
}
