#include <stdlib.h>
#include <string.h>

#include "clientflags.h"
#include "featuregate.h"
#include "flag.h"
#include "log.h"

static const struct option log_opts[] = {
	{ "v", required_argument, NULL, 'v' },
	{ "log-format", required_argument, NULL, RS_OPT_LOGFMT },
};

static const struct option api_opts[] = {
	{ "kubeconfig", required_argument, NULL, RS_OPT_KUBECONFIG },
	{ "context", required_argument, NULL, RS_OPT_CONTEXT },
	{ "master", required_argument, NULL, RS_OPT_MASTER },
};

static const struct option rate_opts[] = {
	{ "kube-api-qps", required_argument, NULL, RS_OPT_QPS },
	{ "kube-api-burst", required_argument, NULL, RS_OPT_BURST },
};

static const struct option gate_opts[] = {
	{ "feature-gates", required_argument, NULL, RS_OPT_GATES },
};

static const struct option http_opts[] = {
	{ "http-client", required_argument, NULL, RS_OPT_HTTP },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static size_t
add(struct option *dst, size_t at, const struct option *src, size_t n)
{
	memcpy(dst + at, src, n * sizeof *src);
	return at + n;
}

/* The last array made: reachable until exit, as getopt may be called on
 * it at any time. */
static struct option *kept;

struct option *
rs_flags_longopts(const struct option *own, unsigned sets)
{
	size_t n = 0, at;
	struct option *all;

	while (own[n].name != NULL)
		n++;
	all = calloc(n + NELEM(log_opts) + NELEM(api_opts) + NELEM(rate_opts) +
	    NELEM(gate_opts) + NELEM(http_opts) + 1, sizeof *all);
	if (all == NULL)
		rs_fatal(111, "unable to read the flags: %s",
		    rs_strerror(RS_ENOMEM));
	at = add(all, 0, own, n);
	if (sets & RS_FLAGS_LOG)
		at = add(all, at, log_opts, NELEM(log_opts));
	if (sets & RS_FLAGS_API)
		at = add(all, at, api_opts, NELEM(api_opts));
	if (sets & RS_FLAGS_RATE)
		at = add(all, at, rate_opts, NELEM(rate_opts));
	if (sets & RS_FLAGS_GATES)
		at = add(all, at, gate_opts, NELEM(gate_opts));
	if (sets & RS_FLAGS_HTTP)
		add(all, at, http_opts, NELEM(http_opts));
	free(kept);
	return kept = all;
}

int
rs_flags_common(int c, const char *arg, struct rs_client_flags *cf)
{
	switch (c) {
	case 'v':
		rs_log_set_verbosity((int)rs_flag_long(arg, 0, 10, "-v"));
		return 1;
	case RS_OPT_LOGFMT:
		rs_flag_log_format(arg);
		return 1;
	case RS_OPT_GATES: {
		char why[160];

		if (rs_feature_gates_set(arg, why, sizeof why) != RS_OK)
			rs_flag_fail("invalid --feature-gates: %s", why);
		return 1;
	}
	}
	if (cf == NULL)
		return 0;
	switch (c) {
	case RS_OPT_KUBECONFIG: cf->ko.kubeconfig = arg; return 1;
	case RS_OPT_CONTEXT: cf->ko.context = arg; return 1;
	case RS_OPT_MASTER: cf->ko.master = arg; return 1;
	case RS_OPT_QPS:
		/* 0: no limit, as client-go takes a zero QPS */
		cf->kopts.qps = rs_flag_double(arg, 0, 1e9, "--kube-api-qps");
		return 1;
	case RS_OPT_BURST:
		cf->kopts.burst = (int)rs_flag_long(arg, 1, 1000000,
		    "--kube-api-burst");
		return 1;
	case RS_OPT_HTTP:
		if (strcmp(arg, "direct") == 0)
			cf->kopts.http_client = RS_KUBE_HTTP_DIRECT;
		else if (strcmp(arg, "curl") == 0)
			cf->kopts.http_client = RS_KUBE_HTTP_CURL;
		else
			rs_flag_fail("--http-client: '%s' is neither direct "
			    "nor curl", arg);
		return 1;
	}
	return 0;
}
