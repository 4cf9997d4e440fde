#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "line.h"
#include "log.h"
#include "out.h"

/* Big enough that a list page of pods goes out in a few writes. */
#define OUT_BUF (256u << 10)

/* The pipe to the consumer, when standard output is one, is made to hold
 * a list page of pods (500 pods shaped as bench/sync/gen writes them:
 * about 620 KiB), so that the next page is asked for while the consumer
 * reads this one, instead of after it: with Linux's 64 KiB the list
 * waited on rs-sync at every page (100,000 pods: 1.9 s between pages in
 * an 8.2 s list).
 * bench/scale/abstart, 100,000 pods, medians of 3 starts: synced in 5.36 s
 * before, 4.82 s after. 1 MiB is the default /proc/sys/fs/pipe-max-size;
 * a lower limit, or a file, keeps what it has. */
#define OUT_PIPE (1u << 20)

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
	int have = fcntl(fd, F_GETPIPE_SZ);

	if (have > 0 && (unsigned)have < OUT_PIPE &&
	    fcntl(fd, F_SETPIPE_SZ, (int)OUT_PIPE) < 0)
		rs_info(1, "standard output keeps its pipe buffer of %d bytes: %s",
		    have, strerror(errno));
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
