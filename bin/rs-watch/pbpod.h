/* pbpod.h: a pod read in protobuf, printed as the JSON of the fields a
 * ReplicaSet controller reads (rs-watch(1), --protobuf):
 *   apiVersion, kind;
 *   metadata, whole (managedFields: every entry and member);
 *   spec.nodeName, spec.initContainers[].name and .restartPolicy;
 *   status.phase, status.conditions[].type, .status and
 *   .lastTransitionTime, status.containerStatuses[] and
 *   .initContainerStatuses[]: name, ready and restartCount.
 * Each member as the server's JSON has it: the same name, value and
 * omission of empty values, so that a consumer reading these fields
 * cannot tell the two apart. */
#ifndef RS_WATCH_PBPOD_H
#define RS_WATCH_PBPOD_H

#include "code.h"
#include "linebuf.h"
#include "protobuf.h"

/* Renders the Pod message pod into b, after what b holds; apiVersion and
 * kind first when not NULL. trim: managedFields is to be cut, and holds
 * only the entries that may own the owners, with their manager and
 * fieldsV1. RS_EPARSE when pod is no Pod message (b then holds a part of
 * it), RS_ENOMEM, RS_ETOOBIG. What it renders is valid JSON (strict, as
 * rs_jscan has it): it need not be checked again. */
rs_code pbpod_json(struct linebuf *b, struct rs_pbspan pod,
    struct rs_pbspan api_version, struct rs_pbspan kind, int trim);

#endif
