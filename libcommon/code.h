/* code.h: the one result type returned through every layer of rs-controller.
 * A function that can fail returns rs_code; RS_OK is zero so that
 *   if ((rc = step()) != RS_OK) goto out;
 * reads naturally. Detail goes to the log where the failure is first seen. */
#ifndef RS_CODE_H
#define RS_CODE_H

typedef enum rs_code {
	RS_OK = 0,
	RS_ENOMEM,     /* allocation failed */
	RS_EUSAGE,     /* caller or user asked for something malformed */
	RS_EPARSE,     /* input that does not parse (JSON, YAML, selector, line) */
	RS_ETOOBIG,    /* input over a configured bound */
	RS_EIO,        /* local I/O (file, pipe, socket) failed */
	RS_EEOF,       /* orderly end of input */
	RS_ECONFIG,    /* configuration missing or inconsistent */
	RS_ENET,       /* could not reach the API server (connect, DNS, reset) */
	RS_ETLS,       /* TLS handshake or certificate verification failed */
	RS_ETIMEOUT,   /* an operation timed out */
	RS_EAPI,       /* the API server answered with an error Status */
	RS_ENOTFOUND,  /* the thing asked for does not exist */
	RS_EFULL,      /* a fixed-capacity store is full */
	RS_EREFUSED,   /* a request that was understood and refused */
	RS_EAGAIN      /* not now; try again later */
} rs_code;

const char *rs_strerror(rs_code c);

#include <stddef.h>

/* Writes a reason into why[0..len) (when why is not NULL) and returns rc:
 * for functions that report what was wrong with their input. */
rs_code rs_why(rs_code rc, char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The s6 exit code that a tool dying with this code should use:
 * 0 ok, 100 usage, 111 temporary, 1 refused. */
int rs_exit_code(rs_code c);

#endif
