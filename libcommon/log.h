/* log.h: diagnostics on stderr, klog-like text by default or JSON lines.
 *   tool: fatal: unable to X: reason      (rs_fatal, then exit)
 *   tool: warning: ...                    (rs_warn)
 *   I1121 19:30:00.123456 tool] message   (rs_info at verbosity -v N)
 * Secrets never go through here: callers log names of credentials, never
 * their values (see kubeconfig.c). */
#ifndef RS_LOG_H
#define RS_LOG_H

#include <stdarg.h>

enum rs_log_format { RS_LOG_TEXT, RS_LOG_JSON };

void rs_log_init(const char *prog);
void rs_log_set_verbosity(int v);
int rs_log_verbosity(void);
const char *rs_log_prog(void);
/* "text" or "json"; returns 0, or -1 for an unknown name. */
int rs_log_set_format(const char *name);

/* Leveled message, printed when the verbosity is at least v. */
void rs_info(int v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rs_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "prog: fatal: ..." and exits with code. */
void rs_fatal(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#define RS_V(v) (rs_log_verbosity() >= (v))

#endif
