#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "statedir.h"

const char *
rs_state_dir(void)
{
	static char dir[PATH_MAX];
	const char *e = getenv("RS_STATE_DIR");

	if (e && *e)
		return e;
	e = getenv("XDG_RUNTIME_DIR");
	if (e && *e)
		snprintf(dir, sizeof dir, "%s/rs-controller", e);
	else
		snprintf(dir, sizeof dir, "/dev/shm/rs-controller");
	return dir;
}

char *
rs_state_path(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", rs_state_dir(), name) < 0)
		return NULL;
	return p;
}

rs_code
rs_state_prepare_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	struct stat st;

	if (strlen(path) >= sizeof dir)
		return RS_EUSAGE;
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		return RS_OK;
	if (slash == dir)
		return RS_OK;
	*slash = '\0';
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		rs_error("unable to create %s: %s", dir, strerror(errno));
		return RS_EIO;
	}
	if (stat(dir, &st) < 0) {
		rs_error("unable to stat %s: %s", dir, strerror(errno));
		return RS_EIO;
	}
	if (st.st_uid != geteuid()) {
		rs_error("%s is owned by uid %u, not by us", dir,
		    (unsigned)st.st_uid);
		return RS_EREFUSED;
	}
	if (st.st_mode & 077) {
		rs_error("%s is open to others (mode %03o): want 0700", dir,
		    (unsigned)(st.st_mode & 0777));
		return RS_EREFUSED;
	}
	return RS_OK;
}
