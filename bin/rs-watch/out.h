/* out.h: the one output stream that every resource's thread writes to.
 * Lines go whole into one buffer under a lock and reach the pipe in whole
 * lines (one write(2) per flush while they fit the buffer). When the reader
 * goes away (EPIPE), the process exits 0 without a word: `rs-watch | head`
 * is a normal way to use it. Any other write error is fatal (111). */
#ifndef RS_WATCH_OUT_H
#define RS_WATCH_OUT_H

#include <stddef.h>

void out_init(int fd);
/* Appends one line (no newline in s); flush: write it out now. */
void out_line(const char *s, size_t len, int flush);
void out_flush(void);
/* Lines written so far (for the stats file). */
unsigned long out_lines(void);
/* Flushes what is buffered (giving up after a few seconds if another
 * thread is stuck writing to a reader that does not read) and exits. */
__attribute__((noreturn)) void out_exit(int code);

#endif
