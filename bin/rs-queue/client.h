/* client.h: the client commands of rs-queue, for people and scripts.
 * Each returns the process exit code: 0 ok, 1 refused (a bad key, an ERR
 * reply, the queue shutting down), 111 no server or a broken connection. */
#ifndef RSQ_CLIENT_H
#define RSQ_CLIENT_H

/* add, done, forget, retry: verb is the protocol verb ("ADD", ...). Keys
 * come from keys[0..n), or one a line from stdin when the only key is
 * "-"; a malformed key is reported on stderr and skipped. */
int rsq_cmd_keys(const char *path, const char *verb, char **keys, int n);
/* after SECONDS KEY... */
int rsq_cmd_after(const char *path, double seconds, char **keys, int n);
/* get: prints one key; the key stays out until DONE (GET HOLD). */
int rsq_cmd_get(const char *path);
int rsq_cmd_len(const char *path);
/* stats: the JSON line, or the Prometheus text format. */
int rsq_cmd_stats(const char *path, int prometheus);
/* shutdown: asks for a drained shutdown; wait: until the server exits. */
int rsq_cmd_shutdown(const char *path, int wait);
/* talk: raw protocol, stdin to the server and replies to stdout. */
int rsq_cmd_talk(const char *path);

/* Prometheus text exposition of a STATS JSON object; -1 if it does not
 * parse. */
int rsq_prometheus(const char *json, size_t len);

#endif
