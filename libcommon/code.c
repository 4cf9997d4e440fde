#include <stdarg.h>
#include <stdio.h>

#include "code.h"

rs_code
rs_why(rs_code rc, char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && len > 0) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return rc;
}

const char *
rs_strerror(rs_code c)
{
	switch (c) {
	case RS_OK: return "success";
	case RS_ENOMEM: return "out of memory";
	case RS_EUSAGE: return "invalid usage";
	case RS_EPARSE: return "malformed input";
	case RS_ETOOBIG: return "input too large";
	case RS_EIO: return "input/output error";
	case RS_EEOF: return "end of input";
	case RS_ECONFIG: return "invalid configuration";
	case RS_ENET: return "network error";
	case RS_ETLS: return "TLS error";
	case RS_ETIMEOUT: return "timed out";
	case RS_EAPI: return "API error";
	case RS_ENOTFOUND: return "not found";
	case RS_EFULL: return "capacity exhausted";
	case RS_EREFUSED: return "refused";
	case RS_EAGAIN: return "temporarily unavailable";
	}
	return "unknown error";
}

int
rs_exit_code(rs_code c)
{
	switch (c) {
	case RS_OK: case RS_EEOF: return 0;
	case RS_EUSAGE: case RS_ECONFIG: return 100;
	case RS_EREFUSED: case RS_EPARSE: case RS_ETOOBIG: return 1;
	default: return 111;
	}
}
