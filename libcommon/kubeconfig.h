/* kubeconfig.h: find the API server as kubectl does.
 * Order: explicit path (--kubeconfig), $KUBECONFIG (colon-separated list,
 * merged: the first file to set a map key or current-context wins), then
 * ~/.kube/config, then in-cluster (KUBERNETES_SERVICE_HOST/_PORT with the
 * service-account token and CA under /var/run/secrets/kubernetes.io/
 * serviceaccount, or $RS_SERVICEACCOUNT_DIR for tests). Parsed with libyaml.
 * Paths inside a kubeconfig are relative to the file that names them.
 * Values of secrets (tokens, keys) are kept here and never logged. */
#ifndef RS_KUBECONFIG_H
#define RS_KUBECONFIG_H

#include <stddef.h>
#include "code.h"

struct rs_exec_config {          /* users[].user.exec */
	char *api_version;       /* client.authentication.k8s.io/v1 (or v1beta1) */
	char *command;
	char **args;             /* NULL-terminated */
	char **env;              /* NULL-terminated "NAME=value" */
	int provide_cluster_info;
	char *install_hint;      /* printed when the command is not found */
	char *interactive_mode;  /* Never, IfAvailable, Always, or NULL */
};

struct rs_kube_config {
	char *source;            /* where it came from, for messages */
	char *context;           /* context name used, or NULL in-cluster */
	char *namespace;         /* context's namespace, or NULL */
	/* cluster */
	char *server;            /* https://host:port, no trailing slash */
	char *ca_file;
	char *ca_data;           /* PEM bytes (decoded from base64) */
	size_t ca_data_len;
	int insecure;            /* insecure-skip-tls-verify */
	char *tls_server_name;
	char *proxy_url;
	/* user */
	char *cert_file, *key_file;
	char *cert_data, *key_data;      /* PEM bytes */
	size_t cert_data_len, key_data_len;
	char *token;
	char *token_file;                /* re-read about once a minute */
	char *username, *password;       /* basic auth, if a kubeconfig has it */
	struct rs_exec_config *exec;
};

struct rs_kube_config_opts {
	const char *kubeconfig;  /* --kubeconfig, or NULL */
	const char *context;     /* --context, or NULL for current-context */
	const char *master;      /* --master: overrides the server, or NULL */
};

/* Loads and resolves one cluster+user. On failure, a clear message naming
 * the file and what is wrong has been logged; RS_ECONFIG or RS_EIO. */
rs_code rs_kube_config_load(const struct rs_kube_config_opts *opts,
    struct rs_kube_config **out);
void rs_kube_config_free(struct rs_kube_config *c);

/* The in-cluster configuration alone (rs_kube_config_load falls back to it
 * when no kubeconfig names a context): RS_ENOTFOUND, nothing logged, when
 * not in a cluster (KUBERNETES_SERVICE_HOST/_PORT unset or no token file).
 * master, if not NULL, overrides the server. */
rs_code rs_kube_config_incluster(const char *master,
    struct rs_kube_config **out);

/* Base64 (RFC 4648 standard alphabet), as kubeconfig -data fields and
 * ExecCredential cluster info use it. Decoding skips whitespace, accepts
 * missing padding, and gives a malloc'd buffer with a NUL after its *len
 * bytes; RS_EPARSE on a character outside the alphabet. Encoding gives a
 * malloc'd NUL-terminated string, or NULL when out of memory. */
rs_code rs_base64_decode(const char *s, size_t n, char **out, size_t *len);
char *rs_base64_encode(const void *p, size_t n);

#endif
