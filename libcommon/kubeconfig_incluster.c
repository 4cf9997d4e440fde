/* kubeconfig_incluster.c: the configuration of a pod, as client-go's
 * rest.InClusterConfig builds it: the service's host and port from the
 * environment, the service-account token (a projected token that the
 * kubelet rotates, so it is a token file, re-read) and the cluster CA. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kubeconfig.h"
#include "log.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

static char *
ic_join(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

/* The namespace of the pod: $POD_NAMESPACE, else the service account's
 * namespace file, else NULL (callers use "default"). */
static rs_code
ic_namespace(const char *dir, char **out)
{
	const char *env = getenv("POD_NAMESPACE");
	char buf[256], *path;
	size_t n;
	FILE *fp;

	*out = NULL;
	if (env && env[0]) {
		*out = strdup(env);
		return *out ? RS_OK : RS_ENOMEM;
	}
	path = ic_join(dir, "namespace");
	if (path == NULL)
		return RS_ENOMEM;
	fp = fopen(path, "re");
	free(path);
	if (fp == NULL)
		return RS_OK;
	n = fread(buf, 1, sizeof buf - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	buf[strcspn(buf, " \t\r\n")] = '\0';
	if (buf[0] == '\0')
		return RS_OK;
	*out = strdup(buf);
	return *out ? RS_OK : RS_ENOMEM;
}

static rs_code
ic_server(struct rs_kube_config *c, const char *host, const char *port)
{
	int v6 = strchr(host, ':') != NULL && host[0] != '[';
	int r;

	r = asprintf(&c->server, "https://%s%s%s:%s", v6 ? "[" : "", host,
	    v6 ? "]" : "", port);
	if (r < 0) {
		c->server = NULL;
		return RS_ENOMEM;
	}
	return RS_OK;
}

static rs_code
ic_fill(struct rs_kube_config *c, const char *dir, const char *host,
    const char *port, const char *master)
{
	rs_code rc;

	if (asprintf(&c->source, "in-cluster (%s)", dir) < 0) {
		c->source = NULL;
		return RS_ENOMEM;
	}
	rc = master && master[0] ? ((c->server = strdup(master)) ? RS_OK :
	    RS_ENOMEM) : ic_server(c, host, port);
	if (rc != RS_OK)
		return rc;
	c->ca_file = ic_join(dir, "ca.crt");
	if (c->ca_file == NULL)
		return RS_ENOMEM;
	if (access(c->ca_file, R_OK) != 0) {
		/* client-go logs this and goes on with the system roots. */
		rs_warn("in-cluster: unable to read %s: %s", c->ca_file,
		    strerror(errno));
		free(c->ca_file);
		c->ca_file = NULL;
	}
	return ic_namespace(dir, &c->namespace);
}

rs_code
rs_kube_config_incluster(const char *master, struct rs_kube_config **out)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *dir = getenv("RS_SERVICEACCOUNT_DIR");
	struct rs_kube_config *c;
	char *token_file;
	rs_code rc;

	*out = NULL;
	if (dir == NULL || dir[0] == '\0')
		dir = SA_DIR;
	if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
		return RS_ENOTFOUND;
	token_file = ic_join(dir, "token");
	if (token_file == NULL)
		return RS_ENOMEM;
	if (access(token_file, R_OK) != 0) {
		rs_info(4, "not in-cluster: unable to read %s: %s", token_file,
		    strerror(errno));
		free(token_file);
		return RS_ENOTFOUND;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		free(token_file);
		return RS_ENOMEM;
	}
	c->token_file = token_file;
	rc = ic_fill(c, dir, host, port, master);
	if (rc != RS_OK) {
		rs_kube_config_free(c);
		return rc;
	}
	rs_info(4, "using in-cluster configuration: server %s", c->server);
	*out = c;
	return RS_OK;
}
