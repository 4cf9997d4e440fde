#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "listen.h"
#include "log.h"
#include "statedir.h"

/* The directory must be ours and closed to others: the socket's own mode
 * is not enough on every system, the directory's is. */
static void
check_dir(const char *path)
{
	rs_code rc;

	/* the socket's directory: ours, and closed to others */
	if ((rc = rs_state_prepare_parent(path)) != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to serve in the directory of %s: %s",
		    path, rs_strerror(rc));
}

static void
take_lock(const char *path, struct rsq_listener *l)
{
	char lock[PATH_MAX];

	if ((size_t)snprintf(lock, sizeof lock, "%s.lock", path) >= sizeof lock)
		rs_fatal(100, "unable to serve %s: path too long", path);
	l->lockfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (l->lockfd < 0)
		rs_fatal(111, "unable to open %s: %s", lock, strerror(errno));
	if (flock(l->lockfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			rs_fatal(111, "unable to serve %s: another rs-queue "
			    "holds %s", path, lock);
		rs_fatal(111, "unable to lock %s: %s", lock, strerror(errno));
	}
}

/* An existing socket file: live (someone accepts) or stale. */
static void
clear_stale(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, e;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return;
		rs_fatal(111, "unable to stat %s: %s", path, strerror(errno));
	}
	if (!S_ISSOCK(st.st_mode))
		rs_fatal(1, "unable to serve %s: it exists and is not a socket",
		    path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		rs_fatal(111, "unable to create a socket: %s", strerror(errno));
	e = connect(fd, (const struct sockaddr *)sa, sizeof *sa) < 0 ? errno : 0;
	close(fd);
	if (e == 0)
		rs_fatal(111, "unable to serve %s: a live server answers there",
		    path);
	if (e != ECONNREFUSED)
		rs_fatal(111, "unable to probe %s: %s", path, strerror(e));
	rs_warn("replacing the stale socket %s", path);
	if (unlink(path) < 0 && errno != ENOENT)
		rs_fatal(111, "unable to remove %s: %s", path, strerror(errno));
}

/* The socket is bound under a name of its own, listening, then renamed
 * to path: path exists only once a client's connect is taken, so a
 * client that waits for it to appear (a script's `test -S`) is never
 * refused in the moment between bind and listen. A path with no room
 * for the one byte more is bound as it is. */
void
rsq_listen(const char *path, struct rsq_listener *l)
{
	struct sockaddr_un sa;
	struct stat st;
	size_t len = strlen(path);
	int staged;
	mode_t old;
	int r;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (len >= sizeof sa.sun_path)
		rs_fatal(100, "unable to serve %s: path longer than %zu bytes",
		    path, sizeof sa.sun_path - 1);
	strcpy(sa.sun_path, path);
	check_dir(path);
	take_lock(path, l);
	clear_stale(path, &sa);
	if ((staged = len + 1 < sizeof sa.sun_path)) {
		strcat(sa.sun_path, "~");   /* ours alone: the lock is held */
		if (unlink(sa.sun_path) < 0 && errno != ENOENT)
			rs_fatal(111, "unable to remove %s: %s", sa.sun_path,
			    strerror(errno));
	}
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		rs_fatal(111, "unable to create a socket: %s", strerror(errno));
	old = umask(0177);
	r = bind(l->fd, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	if (r < 0)
		rs_fatal(111, "unable to bind %s: %s", sa.sun_path,
		    strerror(errno));
	if (chmod(sa.sun_path, 0600) < 0)
		rs_fatal(111, "unable to set the mode of %s: %s", sa.sun_path,
		    strerror(errno));
	if (listen(l->fd, SOMAXCONN) < 0)
		rs_fatal(111, "unable to listen on %s: %s", path, strerror(errno));
	if (staged && rename(sa.sun_path, path) < 0)
		rs_fatal(111, "unable to rename %s to %s: %s", sa.sun_path, path,
		    strerror(errno));
	if (stat(path, &st) < 0)
		rs_fatal(111, "unable to stat %s: %s", path, strerror(errno));
	l->dev = st.st_dev;
	l->ino = st.st_ino;
}

void
rsq_unlisten(const char *path, struct rsq_listener *l)
{
	struct stat st;

	close(l->fd);
	if (lstat(path, &st) == 0 && st.st_dev == l->dev &&
	    st.st_ino == l->ino)
		unlink(path);
	close(l->lockfd);
}
