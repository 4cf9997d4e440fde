/* clientflags.h: the flags every tool reads alike. Logging: -v/--v N and
 * --log-format F. For the tools that talk to the API server, named and read
 * as kube-controller-manager's: --kubeconfig, --context, --master and, for
 * those with a client-side rate limit, --kube-api-qps and --kube-api-burst;
 * --feature-gates for the stages a gate changes; --http-client for those
 * whose requests may skip libcurl (kube_h2.c).
 * A tool's long options are its own plus these (rs_flags_longopts); its
 * getopt loop gives each option it does not know to rs_flags_common. */
#ifndef RS_CLIENTFLAGS_H
#define RS_CLIENTFLAGS_H

#include <getopt.h>

#include "kube.h"
#include "kubeconfig.h"

enum rs_flags_set {
	RS_FLAGS_LOG = 1,              /* -v/--v, --log-format */
	RS_FLAGS_API = 2,              /* --kubeconfig, --context, --master */
	RS_FLAGS_RATE = 4,             /* --kube-api-qps, --kube-api-burst */
	RS_FLAGS_GATES = 8,            /* --feature-gates (featuregate.h) */
	RS_FLAGS_HTTP = 16,            /* --http-client direct|curl */
};

/* Option codes the common flags use; a tool's own start below. */
enum {
	RS_OPT_KUBECONFIG = 0x4000, RS_OPT_CONTEXT, RS_OPT_MASTER, RS_OPT_QPS,
	RS_OPT_BURST, RS_OPT_LOGFMT, RS_OPT_GATES, RS_OPT_HTTP,
};

struct rs_client_flags {
	struct rs_kube_config_opts ko;
	struct rs_kube_opts kopts;
};

/* own (ending with the all-zero entry) followed by the sets' entries. The
 * module keeps the array until exit or its next call, which replaces it. */
struct option *rs_flags_longopts(const struct option *own, unsigned sets);

/* 1 when c is a common flag (applied to cf, which may be NULL for a tool
 * without API flags), 0 when it is not. A bad value is a usage error
 * (rs_flag_fail). */
int rs_flags_common(int c, const char *arg, struct rs_client_flags *cf);

#endif
