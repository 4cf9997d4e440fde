/* proto.h: one request line of the queue protocol (doc/queue-protocol.md),
 * parsed. Words are separated by spaces or tabs; a trailing CR is ignored;
 * the verb is case-insensitive. */
#ifndef RSQ_PROTO_H
#define RSQ_PROTO_H

#include <stddef.h>
#include <stdint.h>

enum rsq_verb {
	RSQ_ADD, RSQ_GET, RSQ_DONE, RSQ_FORGET, RSQ_RETRY, RSQ_AFTER,
	RSQ_LEN, RSQ_STATS, RSQ_SHUTDOWN,
};

struct rsq_req {
	enum rsq_verb verb;
	const char *key;      /* points into the line */
	size_t keylen;
	int64_t delay_ns;     /* AFTER */
	int hold;             /* GET HOLD */
};

/* Parses line[0..len) (modified in place). NULL on success, else the
 * reason for the ERR reply. */
const char *rsq_parse(char *line, size_t len, struct rsq_req *r);

#endif
