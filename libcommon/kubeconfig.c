/* kubeconfig.c: load the kubeconfig files as client-go's loading rules do
 * and resolve one context into a struct rs_kube_config.
 *
 * Merging follows client-go: the files are kept in precedence order and a
 * name (context, cluster, user) is looked up file by file, so the first
 * file to define a name wins with its whole stanza, and the first
 * current-context set wins. Paths in a stanza are relative to the file that
 * holds it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kubeconfig.h"
#include "kubeconfig_yaml.h"
#include "log.h"

/* A kubeconfig is a few KiB; this bounds what a wrong path can cost. */
#define KC_MAX_FILE (16u << 20)

struct kc_file {
	char *path;     /* absolute */
	char *dir;      /* directory holding it, for relative paths */
	cJSON *doc;
};

struct kc_set {
	struct kc_file *f;
	size_t n;
	char *source;   /* the paths, colon-separated, for messages */
};

static void kc_err(const char *where, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
kc_err(const char *where, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	rs_error("kubeconfig %s: %s", where, msg);
}

static void
secret_free(char *p, size_t len)
{
	if (p == NULL)
		return;
	explicit_bzero(p, len);
	free(p);
}

static void
strv_free(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void
rs_kube_config_free(struct rs_kube_config *c)
{
	if (c == NULL)
		return;
	free(c->source);
	free(c->context);
	free(c->namespace);
	free(c->server);
	free(c->ca_file);
	free(c->ca_data);
	free(c->tls_server_name);
	free(c->proxy_url);
	free(c->cert_file);
	free(c->key_file);
	free(c->cert_data);
	secret_free(c->key_data, c->key_data_len);
	secret_free(c->token, c->token ? strlen(c->token) : 0);
	free(c->token_file);
	free(c->username);
	secret_free(c->password, c->password ? strlen(c->password) : 0);
	if (c->exec) {
		free(c->exec->api_version);
		free(c->exec->command);
		strv_free(c->exec->args);
		strv_free(c->exec->env);
		free(c->exec->install_hint);
		free(c->exec->interactive_mode);
		free(c->exec);
	}
	free(c);
}

/* Reads a whole file, at most KC_MAX_FILE bytes. RS_ENOTFOUND for a
 * missing file (errno ENOENT), RS_EIO otherwise, with errno set. */
static rs_code
kc_slurp(const char *path, char **out, size_t *len)
{
	char *buf = NULL, *nb;
	size_t cap = 0, n = 0;
	ssize_t r;
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? RS_ENOTFOUND : RS_EIO;
	for (;;) {
		if (n + 1 >= cap) {
			if (cap >= KC_MAX_FILE) {
				errno = EFBIG;
				goto fail;
			}
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap);
			if (nb == NULL)
				goto fail;
			buf = nb;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return RS_OK;
fail:
	r = errno;
	close(fd);
	free(buf);
	errno = r;
	return RS_EIO;
}

/* The file's directory, and its path made absolute as client-go does. */
static rs_code
kc_abs(const char *path, char **abs, char **dir)
{
	char cwd[PATH_MAX], *slash;

	*abs = *dir = NULL;
	if (path[0] == '/') {
		*abs = strdup(path);
	} else {
		if (getcwd(cwd, sizeof cwd) == NULL)
			return RS_EIO;
		if (asprintf(abs, "%s/%s", cwd, path) < 0)
			*abs = NULL;
	}
	if (*abs == NULL)
		return RS_ENOMEM;
	*dir = strdup(*abs);
	if (*dir == NULL) {
		free(*abs);
		*abs = NULL;
		return RS_ENOMEM;
	}
	slash = strrchr(*dir, '/');
	if (slash == *dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	return RS_OK;
}

static void
kc_set_free(struct kc_set *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->f[i].path);
		free(s->f[i].dir);
		cJSON_Delete(s->f[i].doc);
	}
	free(s->f);
	free(s->source);
	memset(s, 0, sizeof *s);
}

static rs_code
kc_source_add(struct kc_set *s, const char *path)
{
	char *ns;

	if (s->source == NULL)
		ns = strdup(path);
	else if (asprintf(&ns, "%s:%s", s->source, path) < 0)
		ns = NULL;
	if (ns == NULL)
		return RS_ENOMEM;
	free(s->source);
	s->source = ns;
	return RS_OK;
}

/* Loads one file into the set. A missing file is skipped (RS_OK) unless
 * must_exist; a file that exists but does not parse is always an error. */
static rs_code
kc_load_file(struct kc_set *s, const char *path, int must_exist)
{
	struct kc_file f = { 0 }, *nf;
	char err[256], *buf = NULL;
	size_t len = 0, i;
	rs_code rc;

	rc = kc_abs(path, &f.path, &f.dir);
	if (rc != RS_OK)
		return rc;
	for (i = 0; i < s->n; i++)   /* client-go drops repeated paths */
		if (strcmp(s->f[i].path, f.path) == 0)
			goto done;
	rc = kc_slurp(f.path, &buf, &len);
	if (rc == RS_ENOTFOUND && !must_exist) {
		rc = RS_OK;
		goto done;
	}
	if (rc == RS_ENOTFOUND) {
		kc_err(path, "no such file");
		rc = RS_ECONFIG;
		goto done;
	}
	if (rc != RS_OK) {
		kc_err(path, "unable to read: %s", strerror(errno));
		goto done;
	}
	rc = rs_yaml_to_json(buf, len, &f.doc, err, sizeof err);
	if (rc == RS_EPARSE) {
		kc_err(path, "not valid YAML: %s", err);
		rc = RS_ECONFIG;
	}
	if (rc != RS_OK)
		goto done;
	if (cJSON_IsNull(f.doc)) {
		cJSON_Delete(f.doc);
		f.doc = cJSON_CreateObject();
		if (f.doc == NULL) {
			rc = RS_ENOMEM;
			goto done;
		}
	}
	if (!cJSON_IsObject(f.doc)) {
		kc_err(path, "not a kubeconfig: the top level is not a "
		    "mapping");
		rc = RS_ECONFIG;
		goto done;
	}
	rc = kc_source_add(s, f.path);
	if (rc != RS_OK)
		goto done;
	nf = realloc(s->f, (s->n + 1) * sizeof *nf);
	if (nf == NULL) {
		rc = RS_ENOMEM;
		goto done;
	}
	s->f = nf;
	s->f[s->n++] = f;
	memset(&f, 0, sizeof f);
done:
	free(buf);
	free(f.path);
	free(f.dir);
	cJSON_Delete(f.doc);
	return rc;
}

/* The precedence of client-go's ClientConfigLoadingRules: an explicit file
 * alone (it must exist), else every file of $KUBECONFIG (missing ones
 * skipped), else ~/.kube/config if it exists. */
static rs_code
kc_load_set(const struct rs_kube_config_opts *o, struct kc_set *s)
{
	const char *env, *home;
	char *list, *p, *save = NULL, *path;
	rs_code rc;

	if (o && o->kubeconfig && o->kubeconfig[0])
		return kc_load_file(s, o->kubeconfig, 1);
	env = getenv("KUBECONFIG");
	if (env && env[0]) {
		list = strdup(env);
		if (list == NULL)
			return RS_ENOMEM;
		rc = RS_OK;
		for (p = strtok_r(list, ":", &save); p && rc == RS_OK;
		    p = strtok_r(NULL, ":", &save))
			rc = kc_load_file(s, p, 0);
		free(list);
		return rc;
	}
	home = getenv("HOME");
	if (home == NULL || home[0] == '\0')
		return RS_OK;
	if (asprintf(&path, "%s/.kube/config", home) < 0)
		return RS_ENOMEM;
	rc = kc_load_file(s, path, 0);
	free(path);
	return rc;
}

/* A string value, or NULL when absent, null, empty or not a string. */
static const char *
kc_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsString(v) || v->valuestring[0] == '\0')
		return NULL;
	return v->valuestring;
}

/* Finds the stanza named name in section ("contexts", "clusters",
 * "users"), first file first; returns its inner object (item[inner]). */
static const cJSON *
kc_find(const struct kc_set *s, const char *section, const char *inner,
    const char *name, const struct kc_file **from)
{
	const cJSON *it;
	size_t i;

	for (i = 0; i < s->n; i++) {
		cJSON_ArrayForEach(it,
		    cJSON_GetObjectItemCaseSensitive(s->f[i].doc, section)) {
			const char *n = kc_str(it, "name");

			if (n && strcmp(n, name) == 0) {
				const cJSON *v;

				v = cJSON_GetObjectItemCaseSensitive(it, inner);
				*from = &s->f[i];
				/* "cluster:" with nothing under it. */
				return cJSON_IsObject(v) ? v : it;
			}
		}
	}
	return NULL;
}

static const char *
kc_current_context(const struct kc_set *s)
{
	const char *c;
	size_t i;

	for (i = 0; i < s->n; i++)
		if ((c = kc_str(s->f[i].doc, "current-context")) != NULL)
			return c;
	return NULL;
}

static rs_code
kc_dup(char **dst, const char *src)
{
	*dst = NULL;
	if (src == NULL)
		return RS_OK;
	*dst = strdup(src);
	return *dst ? RS_OK : RS_ENOMEM;
}

/* A path as given, or joined to the kubeconfig's directory if relative. */
static rs_code
kc_path(char **dst, const char *p, const struct kc_file *f)
{
	*dst = NULL;
	if (p == NULL)
		return RS_OK;
	if (p[0] == '/')
		return kc_dup(dst, p);
	if (asprintf(dst, "%s/%s", f->dir, p) < 0) {
		*dst = NULL;
		return RS_ENOMEM;
	}
	return RS_OK;
}

/* Decodes the base64 field key of o into *buf. */
static rs_code
kc_data(const cJSON *o, const char *key, char **buf, size_t *len,
    const struct kc_file *f, const char *what, const char *name)
{
	const char *v = kc_str(o, key);
	rs_code rc;

	*buf = NULL;
	*len = 0;
	if (v == NULL)
		return RS_OK;
	rc = rs_base64_decode(v, strlen(v), buf, len);
	if (rc == RS_EPARSE) {
		kc_err(f->path, "%s \"%s\": %s is not valid base64", what,
		    name, key);
		return RS_ECONFIG;
	}
	return rc;
}

/* client-go refuses, at load, a referenced file it cannot read. */
static rs_code
kc_readable(const char *path, const struct kc_file *f, const char *what,
    const char *name, const char *key)
{
	if (path == NULL || access(path, R_OK) == 0)
		return RS_OK;
	kc_err(f->path, "%s \"%s\": unable to read %s %s: %s", what, name,
	    key, path, strerror(errno));
	return RS_ECONFIG;
}

static rs_code
kc_server(struct rs_kube_config *c, const char *server)
{
	size_t n;

	free(c->server);
	if (strstr(server, "://") == NULL) {
		if (asprintf(&c->server, "https://%s", server) < 0)
			c->server = NULL;
	} else {
		c->server = strdup(server);
	}
	if (c->server == NULL)
		return RS_ENOMEM;
	n = strlen(c->server);
	while (n > 0 && c->server[n - 1] == '/')
		c->server[--n] = '\0';
	return RS_OK;
}

static rs_code
kc_cluster(struct rs_kube_config *c, const cJSON *cl, const char *name,
    const struct kc_file *f)
{
	const char *server = kc_str(cl, "server");
	rs_code rc;

	if (server == NULL) {
		kc_err(f->path, "cluster \"%s\" has no server", name);
		return RS_ECONFIG;
	}
	rc = kc_server(c, server);
	if (rc == RS_OK)
		rc = kc_data(cl, "certificate-authority-data", &c->ca_data,
		    &c->ca_data_len, f, "cluster", name);
	if (rc == RS_OK && c->ca_data == NULL)
		rc = kc_path(&c->ca_file, kc_str(cl, "certificate-authority"),
		    f);
	if (rc == RS_OK)
		rc = kc_dup(&c->tls_server_name, kc_str(cl, "tls-server-name"));
	if (rc == RS_OK)
		rc = kc_dup(&c->proxy_url, kc_str(cl, "proxy-url"));
	if (rc != RS_OK)
		return rc;
	c->insecure = rs_yaml_bool(cJSON_GetObjectItemCaseSensitive(cl,
	    "insecure-skip-tls-verify"));
	if (c->insecure && (c->ca_data || c->ca_file)) {
		kc_err(f->path, "cluster \"%s\": a certificate authority with "
		    "insecure-skip-tls-verify is not allowed", name);
		return RS_ECONFIG;
	}
	return kc_readable(c->ca_file, f, "cluster", name,
	    "certificate-authority");
}

static rs_code
kc_strv(char ***dst, const cJSON *arr, int env)
{
	const cJSON *it;
	size_t n = 0;
	char **v;

	*dst = NULL;
	v = calloc(cJSON_GetArraySize(arr) + 1, sizeof *v);
	if (v == NULL)
		return RS_ENOMEM;
	cJSON_ArrayForEach(it, arr) {
		const char *name = env ? kc_str(it, "name") : NULL;
		const cJSON *val = env ?
		    cJSON_GetObjectItemCaseSensitive(it, "value") : it;
		const char *s = cJSON_IsString(val) ? val->valuestring : "";

		if (env && name == NULL)
			continue;
		if (env ? asprintf(&v[n], "%s=%s", name, s) < 0 :
		    (v[n] = strdup(s)) == NULL) {
			v[n] = NULL;
			strv_free(v);
			return RS_ENOMEM;
		}
		n++;
	}
	*dst = v;
	return RS_OK;
}

static rs_code
kc_exec(struct rs_kube_config *c, const cJSON *x, const char *name,
    const struct kc_file *f)
{
	struct rs_exec_config *e;
	const char *cmd = kc_str(x, "command");
	const char *api = kc_str(x, "apiVersion");
	rs_code rc;

	if (cmd == NULL) {
		kc_err(f->path, "user \"%s\": exec plugin has no command",
		    name);
		return RS_ECONFIG;
	}
	if (api == NULL ||
	    (strcmp(api, "client.authentication.k8s.io/v1") != 0 &&
	    strcmp(api, "client.authentication.k8s.io/v1beta1") != 0)) {
		kc_err(f->path, "user \"%s\": exec plugin: invalid apiVersion "
		    "\"%s\" (client.authentication.k8s.io/v1 or v1beta1)",
		    name, api ? api : "");
		return RS_ECONFIG;
	}
	e = c->exec = calloc(1, sizeof *e);
	if (e == NULL)
		return RS_ENOMEM;
	/* A bare name is looked up on PATH; only a path is made absolute. */
	rc = strchr(cmd, '/') ? kc_path(&e->command, cmd, f) :
	    kc_dup(&e->command, cmd);
	if (rc == RS_OK)
		rc = kc_dup(&e->api_version, api);
	if (rc == RS_OK)
		rc = kc_strv(&e->args,
		    cJSON_GetObjectItemCaseSensitive(x, "args"), 0);
	if (rc == RS_OK)
		rc = kc_strv(&e->env,
		    cJSON_GetObjectItemCaseSensitive(x, "env"), 1);
	if (rc == RS_OK)
		rc = kc_dup(&e->install_hint, kc_str(x, "installHint"));
	if (rc == RS_OK)
		rc = kc_dup(&e->interactive_mode, kc_str(x, "interactiveMode"));
	if (rc != RS_OK)
		return rc;
	e->provide_cluster_info = rs_yaml_bool(
	    cJSON_GetObjectItemCaseSensitive(x, "provideClusterInfo"));
	return RS_OK;
}

static rs_code
kc_user_files(struct rs_kube_config *c, const cJSON *u, const char *name,
    const struct kc_file *f)
{
	rs_code rc;

	rc = kc_data(u, "client-certificate-data", &c->cert_data,
	    &c->cert_data_len, f, "user", name);
	if (rc == RS_OK)
		rc = kc_data(u, "client-key-data", &c->key_data,
		    &c->key_data_len, f, "user", name);
	if (rc == RS_OK && c->cert_data == NULL)
		rc = kc_path(&c->cert_file, kc_str(u, "client-certificate"), f);
	if (rc == RS_OK && c->key_data == NULL)
		rc = kc_path(&c->key_file, kc_str(u, "client-key"), f);
	if (rc == RS_OK)
		rc = kc_path(&c->token_file, kc_str(u, "tokenFile"), f);
	if (rc == RS_OK)
		rc = kc_readable(c->cert_file, f, "user", name,
		    "client-certificate");
	if (rc == RS_OK)
		rc = kc_readable(c->key_file, f, "user", name, "client-key");
	if (rc == RS_OK)
		rc = kc_readable(c->token_file, f, "user", name, "tokenFile");
	return rc;
}

static rs_code
kc_user(struct rs_kube_config *c, const cJSON *u, const char *name,
    const struct kc_file *f)
{
	const cJSON *x;
	rs_code rc;

	rc = kc_user_files(c, u, name, f);
	if (rc == RS_OK)
		rc = kc_dup(&c->token, kc_str(u, "token"));
	if (rc == RS_OK)
		rc = kc_dup(&c->username, kc_str(u, "username"));
	if (rc == RS_OK)
		rc = kc_dup(&c->password, kc_str(u, "password"));
	if (rc != RS_OK)
		return rc;
	if ((c->cert_data || c->cert_file) != (c->key_data || c->key_file)) {
		kc_err(f->path, "user \"%s\": a client certificate needs both "
		    "the certificate and its key", name);
		return RS_ECONFIG;
	}
	if ((c->token || c->token_file) && (c->username || c->password)) {
		kc_err(f->path, "user \"%s\": more than one authentication "
		    "method (token and username/password)", name);
		return RS_ECONFIG;
	}
	if (cJSON_GetObjectItemCaseSensitive(u, "auth-provider"))
		rs_warn("kubeconfig %s: user \"%s\": auth-provider is not "
		    "supported, ignored", f->path, name);
	x = cJSON_GetObjectItemCaseSensitive(u, "exec");
	if (cJSON_IsObject(x))
		return kc_exec(c, x, name, f);
	return RS_OK;
}

/* Resolves the named context into c. */
static rs_code
kc_resolve(const struct kc_set *s, const char *ctx, int explicit,
    struct rs_kube_config *c)
{
	const struct kc_file *cf, *clf, *uf;
	const cJSON *co, *cl, *u;
	const char *cluster, *user;
	rs_code rc;

	co = kc_find(s, "contexts", "context", ctx, &cf);
	if (co == NULL) {
		kc_err(s->source, explicit ? "context \"%s\" not found" :
		    "current-context \"%s\" names no context", ctx);
		return RS_ECONFIG;
	}
	cluster = kc_str(co, "cluster");
	if (cluster == NULL) {
		kc_err(cf->path, "context \"%s\" names no cluster", ctx);
		return RS_ECONFIG;
	}
	cl = kc_find(s, "clusters", "cluster", cluster, &clf);
	if (cl == NULL) {
		kc_err(s->source, "context \"%s\" names cluster \"%s\", which "
		    "is not defined", ctx, cluster);
		return RS_ECONFIG;
	}
	rc = kc_dup(&c->context, ctx);
	if (rc == RS_OK)
		rc = kc_dup(&c->namespace, kc_str(co, "namespace"));
	if (rc == RS_OK)
		rc = kc_cluster(c, cl, cluster, clf);
	if (rc != RS_OK)
		return rc;
	user = kc_str(co, "user");
	if (user == NULL)
		return RS_OK;
	u = kc_find(s, "users", "user", user, &uf);
	if (u == NULL) {
		/* client-go goes on without credentials; say so. */
		rs_warn("kubeconfig %s: context \"%s\" names user \"%s\", "
		    "which is not defined: no credentials", s->source, ctx,
		    user);
		return RS_OK;
	}
	return kc_user(c, u, user, uf);
}

static rs_code
kc_master_only(const char *master, struct rs_kube_config **out)
{
	struct rs_kube_config *c;
	rs_code rc;

	c = calloc(1, sizeof *c);
	if (c == NULL)
		return RS_ENOMEM;
	rc = kc_dup(&c->source, "--master");
	if (rc == RS_OK)
		rc = kc_server(c, master);
	if (rc != RS_OK) {
		rs_kube_config_free(c);
		return rc;
	}
	*out = c;
	return RS_OK;
}

/* No context to use: --master alone, in-cluster, or a clear error. */
static rs_code
kc_no_context(const struct kc_set *s, const struct rs_kube_config_opts *o,
    struct rs_kube_config **out)
{
	const char *master = o ? o->master : NULL;
	rs_code rc;

	if (master && master[0])
		return kc_master_only(master, out);
	rc = rs_kube_config_incluster(NULL, out);
	if (rc != RS_ENOTFOUND)
		return rc;
	if (s->n == 0)
		rs_error("no configuration: no --kubeconfig, no file in "
		    "$KUBECONFIG or ~/.kube/config, and not in a cluster "
		    "(KUBERNETES_SERVICE_HOST unset or no service account "
		    "token)");
	else
		kc_err(s->source, "no current-context is set; use --context");
	return RS_ECONFIG;
}

rs_code
rs_kube_config_load(const struct rs_kube_config_opts *o,
    struct rs_kube_config **out)
{
	struct kc_set s = { 0 };
	struct rs_kube_config *c = NULL;
	const char *ctx;
	int explicit;
	rs_code rc;

	*out = NULL;
	rc = kc_load_set(o, &s);
	if (rc != RS_OK)
		goto out;
	explicit = o && o->context && o->context[0];
	ctx = explicit ? o->context : kc_current_context(&s);
	if (ctx == NULL) {
		rc = kc_no_context(&s, o, out);
		goto out;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		rc = RS_ENOMEM;
		goto out;
	}
	rc = kc_dup(&c->source, s.source);
	if (rc == RS_OK)
		rc = kc_resolve(&s, ctx, explicit, c);
	if (rc == RS_OK && o && o->master && o->master[0])
		rc = kc_server(c, o->master);
	if (rc != RS_OK)
		goto out;
	rs_info(4, "using context \"%s\" from %s: server %s", c->context,
	    c->source, c->server);
	*out = c;
	c = NULL;
out:
	rs_kube_config_free(c);
	kc_set_free(&s);
	return rc;
}
