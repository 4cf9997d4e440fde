#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resource.h"

/* Short names for the resources the ReplicaSet controller reads. */
static const struct alias {
	const char *name, *group, *version, *plural;
} aliases[] = {
	{ "pods", "", "v1", "pods" },
	{ "pod", "", "v1", "pods" },
	{ "po", "", "v1", "pods" },
	{ "replicasets", "apps", "v1", "replicasets" },
	{ "replicaset", "apps", "v1", "replicasets" },
	{ "rs", "apps", "v1", "replicasets" },
	{ "replicationcontrollers", "", "v1", "replicationcontrollers" },
	{ "replicationcontroller", "", "v1", "replicationcontrollers" },
	{ "rc", "", "v1", "replicationcontrollers" },
};

/* Lower-case DNS-ish words: what API groups, versions and plurals are made
 * of. Anything else would need URL escaping and is surely a typo. */
static int
word_ok(const char *s, size_t n, int dots)
{
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || (dots && c == '.'))
			continue;
		return 0;
	}
	return 1;
}

static rs_code
copy_word(char *dst, size_t cap, const char *s, size_t n, int dots,
    const char *what, const char *arg, char *why, size_t whylen)
{
	if (!word_ok(s, n, dots) || n >= cap) {
		snprintf(why, whylen, "invalid %s in resource '%s'", what, arg);
		return RS_EUSAGE;
	}
	memcpy(dst, s, n);
	dst[n] = '\0';
	return RS_OK;
}

rs_code
resource_parse(const char *arg, struct resource *out, char *why, size_t whylen)
{
	const char *p[3], *s1, *s2;
	size_t i, n[3];
	rs_code rc;

	memset(out, 0, sizeof *out);
	for (i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
		if (strcmp(arg, aliases[i].name) != 0)
			continue;
		snprintf(out->group, sizeof out->group, "%s", aliases[i].group);
		snprintf(out->version, sizeof out->version, "%s", aliases[i].version);
		snprintf(out->plural, sizeof out->plural, "%s", aliases[i].plural);
		return RS_OK;
	}
	if ((s1 = strchr(arg, '/')) == NULL) {
		snprintf(why, whylen, "unknown resource '%s' (give it as "
		    "group/version/plural, or v1/plural for the core group)", arg);
		return RS_EUSAGE;
	}
	if ((s2 = strchr(s1 + 1, '/')) == NULL) {
		/* version/plural: the core group */
		p[0] = arg; n[0] = 0;
		p[1] = arg; n[1] = s1 - arg;
		p[2] = s1 + 1; n[2] = strlen(s1 + 1);
	} else {
		p[0] = arg; n[0] = s1 - arg;
		p[1] = s1 + 1; n[1] = s2 - s1 - 1;
		p[2] = s2 + 1; n[2] = strlen(s2 + 1);
	}
	if (n[0] > 0 && (rc = copy_word(out->group, sizeof out->group, p[0],
	    n[0], 1, "group", arg, why, whylen)) != RS_OK)
		return rc;
	if ((rc = copy_word(out->version, sizeof out->version, p[1], n[1], 0,
	    "version", arg, why, whylen)) != RS_OK)
		return rc;
	return copy_word(out->plural, sizeof out->plural, p[2], n[2], 0,
	    "plural", arg, why, whylen);
}

char *
resource_path(const struct resource *r, const char *ns)
{
	char *path = NULL;
	int n;

	if (r->group[0] == '\0')
		n = asprintf(&path, "/api/%s%s%s/%s", r->version,
		    ns ? "/namespaces/" : "", ns ? ns : "", r->plural);
	else
		n = asprintf(&path, "/apis/%s/%s%s%s/%s", r->group, r->version,
		    ns ? "/namespaces/" : "", ns ? ns : "", r->plural);
	return n < 0 ? NULL : path;
}

void
resource_api_version(const struct resource *r, char *buf, size_t len)
{
	if (r->group[0] == '\0')
		snprintf(buf, len, "%s", r->version);
	else
		snprintf(buf, len, "%s/%s", r->group, r->version);
}
