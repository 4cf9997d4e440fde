/* statedir.h: where one instance keeps its shared things (the queue socket
 * and the expectations file). RS_STATE_DIR, else
 * $XDG_RUNTIME_DIR/rs-controller, else /dev/shm/rs-controller. */
#ifndef RS_STATEDIR_H
#define RS_STATEDIR_H

#include "code.h"

/* The state directory; a static string. */
const char *rs_state_dir(void);
/* rs_state_dir()/name, malloc'd; NULL when out of memory. */
char *rs_state_path(const char *name);
/* Creates the directory holding path (mode 0700) if missing, and refuses
 * one that another user owns or that others may enter. */
rs_code rs_state_prepare_parent(const char *path);

#endif
