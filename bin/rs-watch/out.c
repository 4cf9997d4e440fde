#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "line.h"
#include "log.h"
#include "out.h"

/* Big enough that a list page of pods goes out in a few writes; the pipe
 * buffer is 64 KiB anyway. */
#define OUT_BUF (256u << 10)

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rs_line_writer out_w;
static unsigned long out_count;   /* lines written, under out_mu */

unsigned long
out_lines(void)
{
	unsigned long n;

	pthread_mutex_lock(&out_mu);
	n = out_count;
	pthread_mutex_unlock(&out_mu);
	return n;
}

void
out_init(int fd)
{
	if (rs_line_writer_init(&out_w, fd, OUT_BUF) != RS_OK)
		rs_fatal(111, "unable to allocate the output buffer: %s",
		    rs_strerror(RS_ENOMEM));
}

/* Called with the lock held after a failed write. _exit: other threads
 * are running and nothing else needs to be flushed. */
static void
out_failed(void)
{
	int e = errno;

	if (e == EPIPE)
		_exit(0);
	rs_error("unable to write to standard output: %s", strerror(e));
	_exit(111);
}

void
out_line(const char *s, size_t len, int flush)
{
	pthread_mutex_lock(&out_mu);
	if (rs_line_put(&out_w, s, len) != RS_OK)
		out_failed();
	out_count++;
	if (flush && rs_line_flush(&out_w) != RS_OK)
		out_failed();
	pthread_mutex_unlock(&out_mu);
}

void
out_flush(void)
{
	pthread_mutex_lock(&out_mu);
	if (out_w.len > 0 && rs_line_flush(&out_w) != RS_OK)
		out_failed();
	pthread_mutex_unlock(&out_mu);
}

void
out_exit(int code)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += 5;
	if (pthread_mutex_timedlock(&out_mu, &t) == 0 && out_w.len > 0)
		if (rs_line_flush(&out_w) != RS_OK && errno != EPIPE && code == 0)
			code = 111;
	_exit(code);
}
