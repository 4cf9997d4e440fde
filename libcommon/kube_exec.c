/* kube_exec.c: client-go credential plugins (users[].user.exec).
 * The plugin runs with the environment of this process plus the entries
 * of exec.env and KUBERNETES_EXEC_INFO (an ExecCredential whose spec says
 * it is not interactive and, with provideClusterInfo, describes the
 * cluster); its stdout is an ExecCredential whose status holds a token or
 * a client certificate and key. stdin is /dev/null: our stdin is data. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "kube_auth.h"
#include "kubeconfig_yaml.h"
#include "log.h"

extern char **environ;

#define EXEC_MAX_OUTPUT (4u << 20)

void
rs_exec_cred_free(struct rs_exec_cred *x)
{
	if (x->token) {
		explicit_bzero(x->token, strlen(x->token));
		free(x->token);
	}
	free(x->cert);
	if (x->key) {
		explicit_bzero(x->key, x->key_len);
		free(x->key);
	}
	memset(x, 0, sizeof *x);
}

/* The CA for the cluster info: the data, or the file's content. */
static char *
exec_ca_b64(const struct rs_kube_config *c)
{
	const size_t max = 1u << 20;
	char *buf, *out = NULL;
	size_t n;
	FILE *fp;

	if (c->ca_data)
		return rs_base64_encode(c->ca_data, c->ca_data_len);
	if (c->ca_file == NULL || (fp = fopen(c->ca_file, "re")) == NULL)
		return NULL;
	buf = malloc(max);
	n = buf ? fread(buf, 1, max, fp) : 0;
	fclose(fp);
	if (n > 0)
		out = rs_base64_encode(buf, n);
	free(buf);
	return out;
}

static cJSON *
exec_cluster(const struct rs_kube_config *c)
{
	cJSON *cl = cJSON_CreateObject();
	char *ca;

	if (cl == NULL)
		return NULL;
	cJSON_AddStringToObject(cl, "server", c->server);
	if (c->tls_server_name)
		cJSON_AddStringToObject(cl, "tls-server-name",
		    c->tls_server_name);
	if (c->insecure)
		cJSON_AddTrueToObject(cl, "insecure-skip-tls-verify");
	if ((ca = exec_ca_b64(c)) != NULL) {
		cJSON_AddStringToObject(cl, "certificate-authority-data", ca);
		free(ca);
	}
	if (c->proxy_url)
		cJSON_AddStringToObject(cl, "proxy-url", c->proxy_url);
	return cl;
}

/* "KUBERNETES_EXEC_INFO=<json>", malloc'd. */
static char *
exec_info(const struct rs_kube_config *c)
{
	cJSON *o = cJSON_CreateObject(), *spec;
	char *json, *env = NULL;

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "kind", "ExecCredential");
	cJSON_AddStringToObject(o, "apiVersion", c->exec->api_version);
	spec = cJSON_AddObjectToObject(o, "spec");
	if (spec) {
		cJSON_AddFalseToObject(spec, "interactive");
		if (c->exec->provide_cluster_info)
			cJSON_AddItemToObject(spec, "cluster",
			    exec_cluster(c));
	}
	json = rs_json_print(o);
	cJSON_Delete(o);
	if (json && asprintf(&env, "KUBERNETES_EXEC_INFO=%s", json) < 0)
		env = NULL;
	cJSON_free(json);
	return env;
}

static int
env_overridden(const char *e, char **over)
{
	size_t n = strcspn(e, "=");

	if (strncmp(e, "KUBERNETES_EXEC_INFO=", 21) == 0)
		return 1;
	for (; over && *over; over++)
		if (strncmp(e, *over, n + 1) == 0)
			return 1;
	return 0;
}

/* environ, then exec.env (later entries win, as with Go's exec), then
 * KUBERNETES_EXEC_INFO. The strings are borrowed but info. */
static char **
exec_envp(const struct rs_kube_config *c, char *info)
{
	size_t n = 0, i, o = 0;
	char **v;

	for (i = 0; environ[i]; i++)
		n++;
	for (i = 0; c->exec->env && c->exec->env[i]; i++)
		n++;
	v = calloc(n + 2, sizeof *v);
	if (v == NULL)
		return NULL;
	for (i = 0; environ[i]; i++)
		if (!env_overridden(environ[i], c->exec->env))
			v[o++] = environ[i];
	for (i = 0; c->exec->env && c->exec->env[i]; i++)
		v[o++] = c->exec->env[i];
	v[o] = info;
	return v;
}

static char **
exec_argv(const struct rs_exec_config *x)
{
	size_t n = 0, i;
	char **v;

	while (x->args && x->args[n])
		n++;
	v = calloc(n + 2, sizeof *v);
	if (v == NULL)
		return NULL;
	v[0] = x->command;
	for (i = 0; i < n; i++)
		v[i + 1] = x->args[i];
	return v;
}

static rs_code
exec_spawn(const struct rs_kube_config *c, pid_t *pid, int *out_fd,
    char *err, size_t errlen)
{
	posix_spawn_file_actions_t fa;
	char *info = exec_info(c), **envp = NULL, **argv = NULL;
	int p[2] = { -1, -1 }, e;
	rs_code rc = RS_ENOMEM;

	if (info == NULL || (envp = exec_envp(c, info)) == NULL ||
	    (argv = exec_argv(c->exec)) == NULL)
		goto out;
	rc = RS_EIO;
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "exec plugin: pipe: %s", strerror(errno));
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	e = posix_spawnp(pid, c->exec->command, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (e != 0) {
		close(p[0]);
		if (e == ENOENT) {
			snprintf(err, errlen, "exec plugin: executable %s not "
			    "found%s%s", c->exec->command,
			    c->exec->install_hint ? ": " : "",
			    c->exec->install_hint ? c->exec->install_hint : "");
			rc = RS_ECONFIG;
		} else {
			snprintf(err, errlen, "exec plugin: unable to run %s: "
			    "%s", c->exec->command, strerror(e));
		}
		goto out;
	}
	*out_fd = p[0];
	rc = RS_OK;
out:
	free(argv);
	free(envp);
	free(info);
	return rc;
}

static rs_code
exec_collect(int fd, pid_t pid, const char *cmd, char **out, size_t *len,
    char *err, size_t errlen)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap), *nb;
	ssize_t r;
	int st = 0;

	*out = NULL;
	while (buf) {
		if (n + 1 >= cap) {
			nb = cap < EXEC_MAX_OUTPUT ? realloc(buf, cap * 2) :
			    NULL;
			if (nb == NULL)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += r;
	}
	close(fd);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (buf == NULL || n + 1 >= cap) {
		free(buf);
		snprintf(err, errlen, "exec plugin %s: output too large or out "
		    "of memory", cmd);
		return RS_EIO;
	}
	buf[n] = '\0';
	if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
		free(buf);
		snprintf(err, errlen, "exec plugin %s failed: exit status %d",
		    cmd, WEXITSTATUS(st));
		return RS_EIO;
	}
	if (WIFSIGNALED(st)) {
		free(buf);
		snprintf(err, errlen, "exec plugin %s failed: killed by signal "
		    "%d", cmd, WTERMSIG(st));
		return RS_EIO;
	}
	*out = buf;
	*len = n;
	return RS_OK;
}

static rs_code
exec_pem(const char *s, char **dst, size_t *len)
{
	*len = strlen(s);
	*dst = strdup(s);
	return *dst ? RS_OK : RS_ENOMEM;
}

/* Checks and copies the status of an ExecCredential as client-go does. */
static rs_code
exec_parse(const struct rs_exec_config *x, const cJSON *o,
    struct rs_exec_cred *cr, char *err, size_t errlen)
{
	const char *api = rs_json_str(o, "apiVersion", NULL);
	const cJSON *st = rs_json_get(o, "status", NULL);
	const char *tok, *cert, *key, *exp;
	rs_code rc = RS_OK;

	if (api == NULL || strcmp(api, x->api_version) != 0) {
		snprintf(err, errlen, "exec plugin is configured to use API "
		    "version %s, plugin returned version %s", x->api_version,
		    api ? api : "(none)");
		return RS_EIO;
	}
	if (!cJSON_IsObject(st)) {
		snprintf(err, errlen, "exec plugin didn't return a status "
		    "field");
		return RS_EIO;
	}
	tok = rs_json_str(st, "token", NULL);
	cert = rs_json_str(st, "clientCertificateData", NULL);
	key = rs_json_str(st, "clientKeyData", NULL);
	exp = rs_json_str(st, "expirationTimestamp", NULL);
	tok = tok && tok[0] ? tok : NULL;
	cert = cert && cert[0] ? cert : NULL;
	key = key && key[0] ? key : NULL;
	if (!tok && !cert && !key) {
		snprintf(err, errlen, "exec plugin didn't return a token or "
		    "cert/key pair");
		return RS_EIO;
	}
	if (!cert != !key) {
		snprintf(err, errlen, "exec plugin returned only certificate "
		    "or key, not both");
		return RS_EIO;
	}
	if (exp && exp[0] && rs_parse_rfc3339(exp, &cr->expiry) != 0) {
		snprintf(err, errlen, "exec plugin returned a bad "
		    "expirationTimestamp \"%s\"", exp);
		return RS_EIO;
	}
	if (tok && (cr->token = strdup(tok)) == NULL)
		rc = RS_ENOMEM;
	if (rc == RS_OK && cert)
		rc = exec_pem(cert, &cr->cert, &cr->cert_len);
	if (rc == RS_OK && key)
		rc = exec_pem(key, &cr->key, &cr->key_len);
	return rc;
}

rs_code
rs_exec_run(const struct rs_kube_config *c, struct rs_exec_cred *out,
    char *err, size_t errlen)
{
	const struct rs_exec_config *x = c->exec;
	char *buf = NULL, yerr[128];
	cJSON *o = NULL;
	size_t len = 0;
	pid_t pid;
	int fd;
	rs_code rc;

	memset(out, 0, sizeof *out);
	if (x->interactive_mode && strcmp(x->interactive_mode, "Always") == 0) {
		snprintf(err, errlen, "exec plugin cannot support interactive "
		    "mode: standard input is unavailable");
		return RS_ECONFIG;
	}
	rs_info(6, "running exec plugin %s", x->command);
	rc = exec_spawn(c, &pid, &fd, err, errlen);
	if (rc == RS_OK)
		rc = exec_collect(fd, pid, x->command, &buf, &len, err,
		    errlen);
	if (rc != RS_OK)
		return rc;
	/* JSON as plugins print it; YAML is accepted too, as by client-go. */
	if (rs_json_parse(buf, len, &o, NULL) != RS_OK &&
	    rs_yaml_to_json(buf, len, &o, yerr, sizeof yerr) != RS_OK) {
		snprintf(err, errlen, "exec plugin %s: decoding stdout: not an "
		    "ExecCredential", x->command);
		rc = RS_EIO;
	}
	if (rc == RS_OK)
		rc = exec_parse(x, o, out, err, errlen);
	if (rc != RS_OK)
		rs_exec_cred_free(out);
	cJSON_Delete(o);
	explicit_bzero(buf, len);
	free(buf);
	return rc;
}
