#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <cJSON.h>

#include "log.h"

static const char *log_prog = "rs";
static int log_verbosity;
static enum rs_log_format log_format = RS_LOG_TEXT;

void
rs_log_init(const char *prog)
{
	const char *slash = strrchr(prog, '/');

	log_prog = slash ? slash + 1 : prog;
}

void rs_log_set_verbosity(int v) { log_verbosity = v; }
int rs_log_verbosity(void) { return log_verbosity; }
const char *rs_log_prog(void) { return log_prog; }

int
rs_log_set_format(const char *name)
{
	if (strcmp(name, "text") == 0)
		log_format = RS_LOG_TEXT;
	else if (strcmp(name, "json") == 0)
		log_format = RS_LOG_JSON;
	else
		return -1;
	return 0;
}

/* One write(2) per message so that lines from concurrent writers to one
 * log pipe do not interleave. */
static void
log_emit(char sev, const char *level, const char *fmt, va_list ap)
{
	char msg[2048], line[4096];
	struct timeval tv;
	struct tm tm;
	int n;

	vsnprintf(msg, sizeof msg, fmt, ap);
	if (log_format == RS_LOG_JSON) {
		cJSON *o = cJSON_CreateObject();
		char *s;

		gettimeofday(&tv, NULL);
		cJSON_AddNumberToObject(o, "ts", tv.tv_sec + tv.tv_usec / 1e6);
		cJSON_AddStringToObject(o, "prog", log_prog);
		cJSON_AddStringToObject(o, "level", level);
		cJSON_AddStringToObject(o, "msg", msg);
		s = cJSON_PrintUnformatted(o);
		n = snprintf(line, sizeof line, "%s\n", s ? s : "{}");
		cJSON_free(s);
		cJSON_Delete(o);
	} else if (sev == 'I') {
		gettimeofday(&tv, NULL);
		gmtime_r(&tv.tv_sec, &tm);
		n = snprintf(line, sizeof line,
		    "I%02d%02d %02d:%02d:%02d.%06ld %s] %s\n", tm.tm_mon + 1,
		    tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		    (long)tv.tv_usec, log_prog, msg);
	} else {
		n = snprintf(line, sizeof line, "%s: %s: %s\n", log_prog, level,
		    msg);
	}
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line) {
		n = sizeof line - 1;
		line[n - 1] = '\n';
	}
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

void
rs_info(int v, const char *fmt, ...)
{
	va_list ap;

	if (v > log_verbosity)
		return;
	va_start(ap, fmt);
	log_emit('I', "info", fmt, ap);
	va_end(ap);
}

void
rs_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit('W', "warning", fmt, ap);
	va_end(ap);
}

void
rs_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit('E', "error", fmt, ap);
	va_end(ap);
}

void
rs_fatal(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit('F', "fatal", fmt, ap);
	va_end(ap);
	/* not exit(3): atexit handlers (OpenSSL's among them) would run while
	 * other threads may still be inside TLS */
	fflush(NULL);
	_exit(code);
}
