/* fuzz_queue_proto: rs-queue's request parser (bin/rs-queue/proto.c) on
 * one line. Oracle: no crash or sanitizer report; a request accepted with
 * a key names a valid key inside the line; a delay is within 0..1e9 s. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "queue_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rsq_req r;
	const char *why;
	char *line;

	/* the server hands over at most RS_QUEUE_LINE_MAX bytes, NUL-ended */
	if (size > RS_QUEUE_LINE_MAX)
		return 0;
	if ((line = malloc(size + 1)) == NULL)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	why = rsq_parse(line, size, &r);
	if (why == NULL) {
		switch (r.verb) {
		case RSQ_ADD: case RSQ_DONE: case RSQ_FORGET: case RSQ_RETRY:
		case RSQ_AFTER:
			if (r.key < line || r.key + r.keylen > line + size ||
			    rs_queue_key_check(r.key, r.keylen) != NULL)
				abort();
			break;
		case RSQ_GET: case RSQ_LEN: case RSQ_STATS: case RSQ_SHUTDOWN:
			break;
		default:
			abort();
		}
		if (r.delay_ns < 0 || r.delay_ns > (int64_t)1e18)
			abort();
	} else if (*why == '\0') {
		abort();   /* an ERR reply needs a reason */
	}
	free(line);
	return 0;
}
