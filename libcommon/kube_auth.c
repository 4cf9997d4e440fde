#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "kube_auth.h"
#include "log.h"

/* client-go's cachingTokenSource re-reads a token file every minute. */
#define TOKEN_FILE_PERIOD_NS (60LL * 1000000000)
#define TOKEN_MAX 65536

enum auth_kind { AUTH_NONE, AUTH_STATIC, AUTH_FILE, AUTH_EXEC };

struct rs_kauth {
	pthread_mutex_t mu;
	const struct rs_kube_config *cfg;
	enum auth_kind kind;
	char *token;             /* static or last read from the file */
	int64_t read_ns;         /* when the file was last read */
	struct rs_exec_cred cred;
	int have_cred;           /* cred is valid */
	unsigned gen;
};

static void
wipe_free(char *p, size_t n)
{
	if (p) {
		explicit_bzero(p, n);
		free(p);
	}
}

void
rs_kcred_free(struct rs_kcred *c)
{
	wipe_free(c->token, c->token ? strlen(c->token) : 0);
	free(c->cert);
	wipe_free(c->key, c->key_len);
	memset(c, 0, sizeof *c);
}

/* Reads a token file: its content with surrounding whitespace trimmed,
 * as client-go does. */
static rs_code
token_read(const char *path, char **out, char *err, size_t errlen)
{
	char *buf;
	ssize_t n;
	size_t len = 0;
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "unable to read token file %s: %s", path,
		    strerror(errno));
		return RS_ECONFIG;
	}
	buf = malloc(TOKEN_MAX + 1);
	if (buf == NULL) {
		close(fd);
		return RS_ENOMEM;
	}
	while (len < TOKEN_MAX &&
	    ((n = read(fd, buf + len, TOKEN_MAX - len)) > 0 ||
	    (n < 0 && errno == EINTR)))
		if (n > 0)
			len += n;
	close(fd);
	while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
		len--;
	buf[len] = '\0';
	n = strspn(buf, " \t\r\n");
	if (buf[n] == '\0') {
		free(buf);
		snprintf(err, errlen, "token file %s is empty", path);
		return RS_ECONFIG;
	}
	memmove(buf, buf + n, len - n + 1);
	*out = buf;
	return RS_OK;
}

rs_code
rs_kauth_new(const struct rs_kube_config *c, struct rs_kauth **out,
    char *err, size_t errlen)
{
	struct rs_kauth *a;
	rs_code rc = RS_OK;

	*out = NULL;
	a = calloc(1, sizeof *a);
	if (a == NULL)
		return RS_ENOMEM;
	pthread_mutex_init(&a->mu, NULL);
	a->cfg = c;
	a->gen = 1;
	if (c->token) {
		a->kind = AUTH_STATIC;
		a->token = strdup(c->token);
		if (a->token == NULL)
			rc = RS_ENOMEM;
	} else if (c->token_file) {
		a->kind = AUTH_FILE;
		rc = token_read(c->token_file, &a->token, err, errlen);
		a->read_ns = rs_mono_ns();
	} else if (c->exec && !c->username && !c->password &&
	    !c->cert_file && !c->cert_data) {
		/* As client-go: a plugin only when nothing else is set. */
		a->kind = AUTH_EXEC;
	}
	if (rc != RS_OK) {
		rs_kauth_free(a);
		return rc;
	}
	*out = a;
	return RS_OK;
}

void
rs_kauth_free(struct rs_kauth *a)
{
	if (a == NULL)
		return;
	wipe_free(a->token, a->token ? strlen(a->token) : 0);
	rs_exec_cred_free(&a->cred);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

/* Re-reads the token file; keeps the old token if the file went bad, as a
 * rotation in progress must not fail requests. Returns 1 if it changed. */
static int
file_refresh(struct rs_kauth *a)
{
	char err[512], *t;

	a->read_ns = rs_mono_ns();
	if (token_read(a->cfg->token_file, &t, err, sizeof err) != RS_OK) {
		rs_warn("%s; keeping the token read before", err);
		return 0;
	}
	if (a->token && strcmp(a->token, t) == 0) {
		wipe_free(t, strlen(t));
		return 0;
	}
	wipe_free(a->token, a->token ? strlen(a->token) : 0);
	a->token = t;
	a->gen++;
	rs_info(6, "token file %s re-read: new token", a->cfg->token_file);
	return 1;
}

static rs_code
exec_refresh(struct rs_kauth *a, char *err, size_t errlen)
{
	struct rs_exec_cred x;
	rs_code rc;

	if (a->have_cred && (a->cred.expiry == 0 ||
	    rs_wall_now() < a->cred.expiry))
		return RS_OK;
	rc = rs_exec_run(a->cfg, &x, err, errlen);
	if (rc != RS_OK)
		return rc;
	rs_exec_cred_free(&a->cred);
	a->cred = x;
	a->have_cred = 1;
	a->gen++;
	return RS_OK;
}

static rs_code
cred_copy(struct rs_kcred *o, const char *token,
    const struct rs_exec_cred *x)
{
	if (token && (o->token = strdup(token)) == NULL)
		return RS_ENOMEM;
	if (x == NULL || x->cert == NULL)
		return RS_OK;
	o->cert = malloc(x->cert_len + 1);
	o->key = malloc(x->key_len + 1);
	if (o->cert == NULL || o->key == NULL)
		return RS_ENOMEM;
	memcpy(o->cert, x->cert, x->cert_len + 1);
	memcpy(o->key, x->key, x->key_len + 1);
	o->cert_len = x->cert_len;
	o->key_len = x->key_len;
	return RS_OK;
}

rs_code
rs_kauth_get(struct rs_kauth *a, struct rs_kcred *out, char *err,
    size_t errlen)
{
	rs_code rc = RS_OK;

	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&a->mu);
	switch (a->kind) {
	case AUTH_NONE:
		break;
	case AUTH_STATIC:
		rc = cred_copy(out, a->token, NULL);
		break;
	case AUTH_FILE:
		if (rs_mono_ns() - a->read_ns >= TOKEN_FILE_PERIOD_NS)
			file_refresh(a);
		rc = cred_copy(out, a->token, NULL);
		break;
	case AUTH_EXEC:
		rc = exec_refresh(a, err, errlen);
		if (rc == RS_OK)
			rc = cred_copy(out, a->cred.token, &a->cred);
		break;
	}
	out->gen = a->gen;
	pthread_mutex_unlock(&a->mu);
	if (rc != RS_OK)
		rs_kcred_free(out);
	return rc;
}

int
rs_kauth_unauthorized(struct rs_kauth *a, unsigned gen)
{
	int retry = 0;

	pthread_mutex_lock(&a->mu);
	switch (a->kind) {
	case AUTH_NONE:
	case AUTH_STATIC:
		break;
	case AUTH_FILE:
		/* Another request may have read the new token already. */
		retry = gen != a->gen || file_refresh(a);
		break;
	case AUTH_EXEC:
		if (gen == a->gen && a->have_cred) {
			rs_info(4, "exec plugin credentials refused (401): "
			    "running the plugin again");
			a->have_cred = 0;
		}
		retry = 1;
		break;
	}
	pthread_mutex_unlock(&a->mu);
	return retry;
}
