/* kube_auth.h: the credentials of one API client (private to kube*.c).
 *
 * Which credential is used follows client-go: a static token, else a token
 * file (re-read about once a minute: projected service-account tokens
 * rotate), else, when no token, basic auth or client certificate is set,
 * an exec plugin whose output is cached until its expirationTimestamp.
 * A 401 answer retires the credentials it was sent with, so the next
 * request re-reads the token file or runs the plugin again. Thread-safe. */
#ifndef RS_KUBE_AUTH_H
#define RS_KUBE_AUTH_H

#include <stddef.h>

#include "code.h"
#include "kubeconfig.h"

/* A copy of the credentials for one request; the secrets in it are wiped
 * when freed. */
struct rs_kcred {
	char *token;             /* bearer token, or NULL */
	char *cert, *key;        /* PEM from an exec plugin, or NULL */
	size_t cert_len, key_len;
	unsigned gen;            /* which generation of credentials */
};

struct rs_kauth;

/* Borrows c, which must outlive the result. Reads a token file once, so a
 * missing one fails here with RS_ECONFIG and a message in err. */
rs_code rs_kauth_new(const struct rs_kube_config *c, struct rs_kauth **out,
    char *err, size_t errlen);
void rs_kauth_free(struct rs_kauth *a);
/* Fills out with the current credentials, running the exec plugin or
 * re-reading the token file when due; on failure err says why. */
rs_code rs_kauth_get(struct rs_kauth *a, struct rs_kcred *out, char *err,
    size_t errlen);
void rs_kcred_free(struct rs_kcred *c);
/* A request sent with generation gen was answered 401: returns 1 when
 * fresh credentials may differ (so the request is worth one more try). */
int rs_kauth_unauthorized(struct rs_kauth *a, unsigned gen);

/* kube_exec.c: run the exec plugin of c once. */
struct rs_exec_cred {
	char *token;
	char *cert, *key;
	size_t cert_len, key_len;
	double expiry;           /* wall-clock seconds; 0: none given */
};

rs_code rs_exec_run(const struct rs_kube_config *c, struct rs_exec_cred *out,
    char *err, size_t errlen);
void rs_exec_cred_free(struct rs_exec_cred *x);

#endif
