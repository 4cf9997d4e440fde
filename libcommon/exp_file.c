/* exp_file.c: the expectations file and its lock file, checked before
 * LMDB opens them: regular files of ours, mode 0600, not cut short. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exp_store.h"
#include "log.h"

static rs_code
check_owner(const char *path, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		rs_error("unable to stat %s: %s", path, strerror(errno));
		return RS_EIO;
	}
	if (!S_ISREG(st.st_mode)) {
		rs_error("refusing %s: not a regular file", path);
		return RS_EREFUSED;
	}
	if (st.st_uid != geteuid()) {
		rs_error("refusing %s: owned by uid %u, not by us", path,
		    (unsigned)st.st_uid);
		return RS_EREFUSED;
	}
	if (st.st_mode & 077) {
		rs_error("refusing %s: mode %04o lets others in (want 0600)",
		    path, (unsigned)(st.st_mode & 07777));
		return RS_EREFUSED;
	}
	return RS_OK;
}

/* Opens (or creates, mode 0600 whatever the umask) one of the two files
 * and checks it before LMDB sees it. */
static rs_code
file_prepare(const char *path, int nocreate, size_t *size)
{
	int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW, fd;
	struct stat st;
	rs_code rc;

	if (!nocreate)
		flags |= O_CREAT;
	if ((fd = open(path, flags, 0600)) < 0) {
		if (errno == ENOENT && nocreate)
			return RS_ENOTFOUND;
		rs_error("unable to open %s: %s", path, errno == ELOOP ?
		    "refusing a symbolic link" : strerror(errno));
		return errno == ELOOP ? RS_EREFUSED : RS_EIO;
	}
	if ((rc = check_owner(path, fd)) == RS_OK && fstat(fd, &st) == 0) {
		*size = (size_t)st.st_size;
		if (*size == 0 && fchmod(fd, 0600) < 0)
			rc = RS_EIO;
	}
	close(fd);
	return rc;
}

rs_code
exp_files_prepare(struct rs_exp *e, int nocreate)
{
	char lock[PATH_MAX];
	size_t lock_size;
	rs_code rc;

	if (snprintf(lock, sizeof lock, "%s-lock", e->path) >=
	    (int)sizeof lock)
		return RS_ETOOBIG;
	if ((rc = file_prepare(e->path, nocreate, &e->pre_size)) != RS_OK)
		return rc;
	/* the lock file is made by whoever opens first */
	return file_prepare(lock, 0, &lock_size);
}

/* A file cut short would be read past its end through the map (SIGBUS),
 * and the read-write open (WRITEMAP) would extend it to the map size and
 * hide the cut: before it, a read-only look without locks at the newest
 * meta page, whose last page the file must reach. */
rs_code
exp_size_check(struct rs_exp *e)
{
	MDB_env *env;
	MDB_envinfo info;
	MDB_stat st;
	int err;
	rs_code rc = RS_OK;

	if (e->pre_size == 0 || (err = mdb_env_create(&env)) != 0)
		return RS_OK;
	err = mdb_env_open(env, e->path, MDB_NOSUBDIR | MDB_RDONLY |
	    MDB_NOLOCK, 0600);
	if (err == MDB_INVALID || err == MDB_VERSION_MISMATCH) {
		rs_error("unable to use %s: not an expectations file (%s)",
		    e->path, mdb_strerror(err));
		rc = RS_EPARSE;
	} else if (err == 0 && mdb_env_info(env, &info) == 0 &&
	    mdb_env_stat(env, &st) == 0 && (uint64_t)e->pre_size <
	    ((uint64_t)info.me_last_pgno + 1) * st.ms_psize) {
		rs_error("unable to use %s: file size does not match its "
		    "contents (truncated?)", e->path);
		rc = RS_EPARSE;
	}
	mdb_env_close(env);
	return rc;
}

/* The file LMDB opened is the one checked (not swapped meanwhile). */
rs_code
exp_fd_check(struct rs_exp *e)
{
	mdb_filehandle_t fd;

	if (mdb_env_get_fd(e->env, &fd) != 0)
		return RS_EIO;
	return check_owner(e->path, fd);
}
