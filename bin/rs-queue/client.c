#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"
#include "line.h"
#include "log.h"
#include "queue_client.h"

/* Requests sent before waiting for the socket to take them: bounds the
 * client's buffer when thousands of keys come from a pipe. */
#define BATCH 4096

static struct rs_queue *
connect_or_die(const char *path)
{
	struct rs_queue *q;
	rs_code rc = rs_queue_open(path, &q);

	if (rc != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to connect to the queue at "
		    "%s: %s%s", path, strerror(errno), rc == RS_EAGAIN ?
		    " (is rs-queue serve running?)" : "");
	return q;
}

static void
lost(rs_code rc)
{
	rs_fatal(111, "unable to talk to the queue: %s", rc == RS_EEOF ?
	    "the server closed the connection" : rs_strerror(rc));
}

struct sender {
	struct rs_queue *q;
	const char *verb;
	double seconds;
	unsigned long bad, sent;
};

static void
send_key(struct sender *s, const char *key)
{
	rs_code rc;

	if (strcmp(s->verb, "ADD") == 0)
		rc = rs_queue_add(s->q, key);
	else if (strcmp(s->verb, "DONE") == 0)
		rc = rs_queue_done(s->q, key);
	else if (strcmp(s->verb, "FORGET") == 0)
		rc = rs_queue_forget(s->q, key);
	else if (strcmp(s->verb, "RETRY") == 0)
		rc = rs_queue_retry(s->q, key);
	else
		rc = rs_queue_after(s->q, s->seconds, key);
	if (rc == RS_EPARSE) {
		rs_warn("skipping \"%.*s\": %s", RS_QUEUE_KEY_MAX + 8, key,
		    rs_queue_key_check(key, strlen(key)));
		s->bad++;
		return;
	}
	if (rc != RS_OK)
		lost(rc);
	if (++s->sent % BATCH == 0 && (rc = rs_queue_flush(s->q)) != RS_OK)
		lost(rc);
}

/* Keys one a line; blank lines are skipped, spaces around a key too. */
static void
send_stdin(struct sender *s)
{
	struct rs_line_reader r;
	char *line, *end;
	size_t len;
	rs_code rc;

	if (rs_line_reader_init(&r, STDIN_FILENO, RS_QUEUE_LINE_MAX) != RS_OK)
		rs_fatal(111, "unable to allocate memory");
	for (;;) {
		rc = rs_line_read(&r, &line, &len);
		if (rc == RS_EEOF)
			break;
		if (rc == RS_ETOOBIG) {
			rs_warn("skipping line %lu: longer than %u bytes",
			    r.lineno, RS_QUEUE_LINE_MAX);
			s->bad++;
			continue;
		}
		if (rc != RS_OK)
			rs_fatal(111, "unable to read stdin: %s", rs_strerror(rc));
		end = line + len;
		while (end > line && isspace((unsigned char)end[-1]))
			*--end = '\0';
		while (isspace((unsigned char)*line))
			line++;
		if (*line)
			send_key(s, line);
	}
	rs_line_reader_free(&r);
}

static int
send_keys(struct sender *s, char **keys, int n)
{
	rs_code rc;
	int i;

	if (n == 1 && strcmp(keys[0], "-") == 0)
		send_stdin(s);
	else
		for (i = 0; i < n; i++)
			send_key(s, keys[i]);
	if ((rc = rs_queue_sync(s->q)) != RS_OK)
		lost(rc);
	return s->bad || rs_queue_errors(s->q) ? 1 : 0;
}

int
rsq_cmd_keys(const char *path, const char *verb, char **keys, int n)
{
	struct sender s = { connect_or_die(path), verb, 0, 0, 0 };
	int code = send_keys(&s, keys, n);

	rs_queue_close(s.q);
	return code;
}

int
rsq_cmd_after(const char *path, double seconds, char **keys, int n)
{
	struct sender s = { connect_or_die(path), "AFTER", seconds, 0, 0 };
	int code = send_keys(&s, keys, n);

	rs_queue_close(s.q);
	return code;
}

int
rsq_cmd_get(const char *path)
{
	struct rs_queue *q = connect_or_die(path);
	const char *key;
	rs_code rc = rs_queue_get(q, 1, &key);

	if (rc == RS_EEOF)
		rs_fatal(1, "unable to get a key: the queue is shutting down");
	if (rc != RS_OK)
		lost(rc);
	printf("%s\n", key);
	rs_queue_close(q);
	return fflush(stdout) == 0 ? 0 : 111;
}

/* One query; dies unless the reply starts with want. */
static char *
query(struct rs_queue *q, const char *req, const char *want)
{
	char *reply;
	rs_code rc = rs_queue_query(q, req, &reply);

	if (rc != RS_OK)
		lost(rc);
	if (strncmp(reply, want, strlen(want)) != 0)
		rs_fatal(strncmp(reply, "ERR", 3) == 0 ? 1 : 111,
		    "unable to %s: the server says: %.200s", req, reply);
	return reply;
}

int
rsq_cmd_len(const char *path)
{
	struct rs_queue *q = connect_or_die(path);
	char *reply = query(q, "LEN", "LEN ");

	printf("%s\n", reply + 4);
	free(reply);
	rs_queue_close(q);
	return fflush(stdout) == 0 ? 0 : 111;
}

int
rsq_cmd_stats(const char *path, int prometheus)
{
	struct rs_queue *q = connect_or_die(path);
	char *reply = query(q, "STATS", "STATS ");
	int code = 0;

	if (!prometheus)
		printf("%s\n", reply + 6);
	else if (rsq_prometheus(reply + 6, strlen(reply + 6)) < 0) {
		rs_error("unable to read the server's STATS: not JSON");
		code = 111;
	}
	free(reply);
	rs_queue_close(q);
	return fflush(stdout) == 0 ? code : 111;
}

int
rsq_cmd_shutdown(const char *path, int wait)
{
	struct rs_queue *q = connect_or_die(path);
	char *reply = query(q, "SHUTDOWN", "OK");
	rs_code rc;

	free(reply);
	if (wait && (rc = rs_queue_wait_closed(q)) != RS_OK)
		lost(rc);
	rs_queue_close(q);
	return 0;
}

static int
copy_out(int from, int to)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof buf);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 1 : -1;
	if (n == 0)
		return 0;
	return rs_write_all(to, buf, n) == RS_OK ? 1 : -1;
}

/* A byte relay, like nc -U: what stdin says goes out as it comes, so a
 * request can be sent in pieces. At the end of stdin the sending side is
 * shut; replies are copied until the server closes. */
int
rsq_cmd_talk(const char *path)
{
	struct rs_queue *q = connect_or_die(path);
	struct pollfd p[2];
	int fd = rs_queue_fd(q), in_open = 1, r;
	char buf[65536];
	ssize_t n;

	/* plain blocking writes: a person's or a test's few lines */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		rs_fatal(111, "unable to set up the socket: %s",
		    strerror(errno));
	for (;;) {
		p[0].fd = fd;
		p[0].events = POLLIN;
		p[1].fd = in_open ? STDIN_FILENO : -1;
		p[1].events = POLLIN;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rs_fatal(111, "unable to poll: %s", strerror(errno));
		}
		if (p[0].revents) {
			if ((r = copy_out(fd, STDOUT_FILENO)) < 0)
				rs_fatal(111, "unable to relay replies: %s",
				    strerror(errno));
			if (r == 0)
				break;
		}
		if (in_open && p[1].revents) {
			n = read(STDIN_FILENO, buf, sizeof buf);
			if (n < 0 && errno != EINTR)
				rs_fatal(111, "unable to read stdin: %s",
				    strerror(errno));
			if (n == 0) {
				in_open = 0;
				shutdown(fd, SHUT_WR);
			} else if (n > 0 && rs_write_all(fd, buf, n) != RS_OK) {
				rs_fatal(111, "unable to send: %s",
				    strerror(errno));
			}
		}
	}
	rs_queue_close(q);
	return 0;
}
