/* resource.h: what rs-watch is asked to watch, and the URL paths for it.
 * A resource is named on the command line by a short name (pods, po, pod,
 * replicasets, rs, replicationcontrollers, rc) or as group/version/plural;
 * the core group is written v1/plural or /v1/plural. */
#ifndef RS_WATCH_RESOURCE_H
#define RS_WATCH_RESOURCE_H

#include <stddef.h>
#include "code.h"

struct resource {
	char group[254];         /* "" for the core group */
	char version[64];
	char plural[254];        /* also the "resource" of every output line */
};

/* Parses one command-line argument; RS_EUSAGE with a reason in why. */
rs_code resource_parse(const char *arg, struct resource *out, char *why,
    size_t whylen);

/* "/api/v1/namespaces/NS/pods" or "/apis/G/V/plural" (ns NULL: all).
 * Query parameters are appended by the caller. malloc'd, NULL on ENOMEM. */
char *resource_path(const struct resource *r, const char *ns);

/* "v1" or "apps/v1": the apiVersion of the objects. */
void resource_api_version(const struct resource *r, char *buf, size_t len);

#endif
