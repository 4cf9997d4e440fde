/* listen.h: the server socket's place in the file system. The socket is
 * mode 0600 in a directory that only its owner may enter. A lock file
 * beside it (PATH.lock, flock) makes sure that one server serves a path;
 * a socket left by a server that died is replaced, a live one never. */
#ifndef RSQ_LISTEN_H
#define RSQ_LISTEN_H

#include <sys/types.h>

struct rsq_listener {
	int fd;          /* listening, non-blocking */
	int lockfd;
	dev_t dev;       /* identity of our socket file, to unlink only ours */
	ino_t ino;
};

/* Sets up the socket at path or dies: 111 when another server is live
 * there or the system fails, 1 when the place is unsafe or not a socket. */
void rsq_listen(const char *path, struct rsq_listener *l);
/* Closes and unlinks the socket if it is still ours. */
void rsq_unlisten(const char *path, struct rsq_listener *l);

#endif
