/* reply.h: one connection's replies, in request order. A GET that waits
 * for a key holds back the replies to the requests sent after it (they
 * are carried out at once): those wait in held until the GET is answered.
 * Each further waiting GET is marked in held by a NUL byte, which no reply
 * contains. Out of memory is fatal (111), as everywhere in the server. */
#ifndef RSQ_REPLY_H
#define RSQ_REPLY_H

#include <stddef.h>
#include <stdint.h>

struct rsq_buf {
	char *p;
	size_t off, len, cap;     /* data is p[off..len) */
};

struct rsq_replies {
	struct rsq_buf out;       /* ready to write */
	struct rsq_buf held;      /* behind the first waiting GET */
	uint32_t waiting;         /* GETs not yet answered */
};

/* A reply line a + b (b may be NULL), after every earlier one. */
void rsq_reply(struct rsq_replies *r, const char *a, size_t alen,
    const char *b, size_t blen);
/* A GET that waits: later replies are held behind it. */
void rsq_reply_wait(struct rsq_replies *r);
/* Answers the oldest waiting GET with a + b, and releases the replies
 * held behind it, up to the next waiting GET. */
void rsq_reply_answer(struct rsq_replies *r, const char *a, const char *b,
    size_t blen);
/* The client sends no more: its waiting GETs and the replies behind the
 * first of them are dropped. */
void rsq_reply_drop_waiting(struct rsq_replies *r);
/* Bytes ready to write, and ready plus held. */
size_t rsq_reply_ready(const struct rsq_replies *r);
size_t rsq_reply_pending(const struct rsq_replies *r);
/* Writes ready replies without blocking: 0 when all are written, 1 when
 * the socket is full, -1 on error (errno; EPIPE when the client left). */
int rsq_reply_send(struct rsq_replies *r, int fd);
void rsq_replies_free(struct rsq_replies *r);

#endif
