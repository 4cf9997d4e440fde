/* ownerref.h: an object's controller, as metav1.GetControllerOf finds it. */
#ifndef RS_OWNERREF_H
#define RS_OWNERREF_H

#include <cJSON.h>

/* The first of obj's metadata.ownerReferences with controller: true, or
 * NULL. Borrowed from obj. */
const cJSON *rs_controller_ref(const cJSON *obj);

#endif
