/* featuregate.c: --feature-gates. Gates keep upstream's names and defaults
 * so that a kube-controller-manager command line carries over. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "featuregate.h"

static const struct {
	const char *name;
	int on;
} defaults[RS_FEATURES] = {
	[RS_FEATURE_STALE_CONSISTENCY_RS] =
	    { "StaleControllerConsistencyReplicaSet", 1 },
};

static int enabled[RS_FEATURES], given;  /* given: set by a flag */

int
rs_feature_enabled(enum rs_feature f)
{
	if (f >= RS_FEATURES)
		return 0;
	return given ? enabled[f] : defaults[f].on;
}

const char *
rs_feature_name(enum rs_feature f)
{
	return f < RS_FEATURES ? defaults[f].name : "";
}

/* Go's strconv.ParseBool. */
static int
parse_bool(const char *s, int *v)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true",
	    "True" }, *const no[] = { "0", "f", "F", "FALSE", "false", "False" };
	size_t i;

	for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (strcmp(s, yes[i]) == 0)
			return *v = 1, 0;
		if (strcmp(s, no[i]) == 0)
			return *v = 0, 0;
	}
	return -1;
}

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/* One "Name=bool" into next[]. */
static rs_code
gate_set(char *pair, int next[], char *why, size_t whylen)
{
	char *eq = strchr(pair, '='), *name;
	int v;
	size_t f;

	if (eq == NULL) {
		snprintf(why, whylen, "missing bool value for %s", trim(pair));
		return RS_EUSAGE;
	}
	*eq = '\0';
	name = trim(pair);
	for (f = 0; f < RS_FEATURES; f++)
		if (strcmp(name, defaults[f].name) == 0)
			break;
	if (f == RS_FEATURES) {
		snprintf(why, whylen, "unrecognized feature gate: %s", name);
		return RS_EUSAGE;
	}
	if (parse_bool(trim(eq + 1), &v) < 0) {
		snprintf(why, whylen, "invalid value of %s=%s, err: "
		    "strconv.ParseBool", name, trim(eq + 1));
		return RS_EUSAGE;
	}
	next[f] = v;
	return RS_OK;
}

rs_code
rs_feature_gates_set(const char *spec, char *why, size_t whylen)
{
	int next[RS_FEATURES];
	char *copy, *pair, *save = NULL;
	size_t f;
	rs_code rc = RS_OK;

	for (f = 0; f < RS_FEATURES; f++)
		next[f] = rs_feature_enabled((enum rs_feature)f);
	if ((copy = strdup(spec)) == NULL)
		return RS_ENOMEM;
	for (pair = strtok_r(copy, ",", &save); pair && rc == RS_OK;
	    pair = strtok_r(NULL, ",", &save))
		if (*trim(pair) != '\0')
			rc = gate_set(pair, next, why, whylen);
	free(copy);
	if (rc == RS_OK) {
		memcpy(enabled, next, sizeof enabled);
		given = 1;
	}
	return rc;
}
