/* featuregate.h: kube-controller-manager's --feature-gates, for the gates
 * this controller has. Process-wide; set once at start. */
#ifndef RS_FEATUREGATE_H
#define RS_FEATUREGATE_H

#include <stddef.h>

#include "code.h"

enum rs_feature {
	/* KEP-5647: sync an owner only once the cache has seen our writes
	 * for it (beta in 1.36, on by default); ReplicationControllers too,
	 * as upstream's shared controller code does. */
	RS_FEATURE_STALE_CONSISTENCY_RS,
	RS_FEATURES
};

/* "Name=bool,Name=bool" as kube-controller-manager takes it (a bool as Go's
 * strconv.ParseBool reads it). RS_EUSAGE with why filled for an unknown
 * gate or a malformed pair; nothing is changed then. */
rs_code rs_feature_gates_set(const char *spec, char *why, size_t whylen);
int rs_feature_enabled(enum rs_feature f);
const char *rs_feature_name(enum rs_feature f);

#endif
