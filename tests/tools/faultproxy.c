/* faultproxy: a loopback TCP proxy that a test drives, to put network
 * faults between the controller and kube-apiserver. TLS passes through
 * untouched (the test CA's server cert names 127.0.0.1, so a client
 * pointed at the proxy verifies the apiserver as usual).
 *
 *   faultproxy [-v N] [--port-file F] --control FIFO LISTEN-PORT TARGET-PORT
 *
 * Listens on 127.0.0.1:LISTEN-PORT (0: any; the port chosen is written to
 * --port-file, or printed), forwards each connection to
 * 127.0.0.1:TARGET-PORT. Commands, one a line, are read from the FIFO
 * (created if missing; write with `echo down > FIFO`):
 *   up      forward (the start state); stalled connections resume
 *   down    the apiserver is unreachable: every connection is reset and
 *           new ones are refused (ECONNREFUSED)
 *   drop    packets are dropped: connections stay open but nothing is
 *           forwarded either way, new ones are accepted and left hanging
 *   cut     reset every connection once, and stay up
 *   mute    requests go through, answers are held back (until up; a cut
 *           then resets the connections): the server carries out a
 *           request whose client never learns of it
 *   stats   one line on stderr: connections accepted, open, reset, bytes
 * A command is acknowledged with "faultproxy: MODE" on stderr. TERM or INT
 * exits 0. Exit 100 on usage, 111 when unable to listen. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "log.h"

#define MAXCONN 512
#define BUFSZ   (64 * 1024)

enum mode { M_UP, M_DOWN, M_DROP, M_MUTE };

struct half {                  /* one direction: bytes read from a, for b */
	char buf[BUFSZ];
	size_t off, len;
	int eof;                   /* a sent FIN; b gets it once drained */
};

struct pair {
	unsigned long id;
	int cfd, sfd;              /* client side, server side (-1: none yet) */
	int connecting;
	struct half up, down;      /* client to server, server to client */
};

static struct pair *conns[MAXCONN];
static int lfd = -1;
static enum mode mode = M_UP;
static unsigned short lport, tport;
static unsigned long accepted, resets, bytes;
static volatile sig_atomic_t stop;

static void on_term(int sig) { (void)sig; stop = 1; }

static void
usage(void)
{
	fputs("usage: faultproxy [-v N] [--port-file F] --control FIFO "
	    "LISTEN-PORT TARGET-PORT\n", stderr);
	exit(100);
}

static struct sockaddr_in
loopback(unsigned short port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* Binds 127.0.0.1:lport (the same port again after a "down"). */
static void
listen_open(void)
{
	struct sockaddr_in a = loopback(lport);
	socklen_t al = sizeof a;
	int one = 1;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		rs_fatal(111, "unable to create a socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    listen(lfd, 128) < 0)
		rs_fatal(111, "unable to listen on 127.0.0.1:%u: %s", lport,
		    strerror(errno));
	if (getsockname(lfd, (struct sockaddr *)&a, &al) == 0)
		lport = ntohs(a.sin_port);
}

/* Closing the listener is what makes a connect fail with ECONNREFUSED
 * (a listener merely shut down does not listen again on Linux). */
static void
listen_stop(void)
{
	close(lfd);
	lfd = -1;
}

static void
listen_resume(void)
{
	if (lfd < 0)
		listen_open();
}

static void
reset_fd(int fd)
{
	struct linger l = { 1, 0 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	close(fd);
}

static void
pair_close(int i, int reset)
{
	struct pair *p = conns[i];

	if (reset) {
		reset_fd(p->cfd);
		reset_fd(p->sfd);
		resets++;
	} else {
		close(p->cfd);
		if (p->sfd >= 0)
			close(p->sfd);
	}
	free(p);
	conns[i] = NULL;
}

static void
cut_all(void)
{
	for (int i = 0; i < MAXCONN; i++)
		if (conns[i])
			pair_close(i, 1);
}

static int
connect_target(struct pair *p)
{
	struct sockaddr_in a = loopback(tport);

	p->sfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->sfd < 0)
		return -1;
	if (connect(p->sfd, (struct sockaddr *)&a, sizeof a) < 0) {
		if (errno != EINPROGRESS)
			return -1;
		p->connecting = 1;
	}
	return 0;
}

static void
do_accept(void)
{
	struct pair *p;
	int fd, i, one = 1;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		for (i = 0; i < MAXCONN && conns[i]; i++)
			;
		if (i == MAXCONN || (p = calloc(1, sizeof *p)) == NULL) {
			rs_warn("too many connections: one refused");
			reset_fd(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		p->cfd = fd;
		p->sfd = -1;
		p->id = ++accepted;
		conns[i] = p;
		rs_info(2, "connection %lu accepted", accepted);
		if ((mode == M_UP || mode == M_MUTE) &&
		    connect_target(p) < 0) {
			rs_warn("unable to reach 127.0.0.1:%u: %s", tport,
			    strerror(errno));
			pair_close(i, 1);
		}
	}
}

/* Moves what a has for b; -1 when the pair is finished. */
static int
relay(int from, int to, struct half *h, short rev_from, short rev_to)
{
	ssize_t n;

	if (h->len == 0 && !h->eof && (rev_from & (POLLIN | POLLHUP | POLLERR))) {
		n = read(from, h->buf, sizeof h->buf);
		if (n > 0) {
			h->off = 0;
			h->len = (size_t)n;
			bytes += (unsigned long)n;
		} else if (n == 0) {
			h->eof = 1;
		} else if (errno != EAGAIN && errno != EINTR) {
			return -1;
		}
	}
	(void)rev_to;
	if (h->len > 0) {
		n = send(to, h->buf + h->off, h->len, MSG_NOSIGNAL);
		if (n > 0) {
			h->off += (size_t)n;
			h->len -= (size_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return -1;
		}
	}
	if (h->eof == 1 && h->len == 0) {
		shutdown(to, SHUT_WR);
		h->eof = 2;
	}
	return 0;
}

static void
command(const char *c)
{
	enum mode was = mode;

	if (strcmp(c, "up") == 0) {
		mode = M_UP;
		if (was == M_DOWN)
			listen_resume();
		/* connections accepted while dropping get their server now */
		for (int i = 0; i < MAXCONN; i++)
			if (conns[i] && conns[i]->sfd < 0 &&
			    connect_target(conns[i]) < 0)
				pair_close(i, 1);
	} else if (strcmp(c, "down") == 0) {
		/* the listener first: a client that reconnects the moment
		 * its connection is reset must be refused, not accepted into
		 * the backlog and reset again (a reset is not a refusal to
		 * rs-watch and rs-apply, whose refused waits end when the
		 * server is ready) */
		mode = M_DOWN;
		if (was != M_DOWN)
			listen_stop();
		cut_all();
	} else if (strcmp(c, "drop") == 0) {
		if (was == M_DOWN)
			listen_resume();
		mode = M_DROP;
	} else if (strcmp(c, "cut") == 0) {
		cut_all();
	} else if (strcmp(c, "mute") == 0) {
		if (was == M_DOWN)
			listen_resume();
		mode = M_MUTE;
	} else if (strcmp(c, "stats") != 0) {
		rs_warn("unknown command: %s", c);
		return;
	}
	int open_ = 0;
	for (int i = 0; i < MAXCONN; i++)
		open_ += conns[i] != NULL;
	fprintf(stderr, "faultproxy: %s accepted=%lu open=%d resets=%lu "
	    "bytes=%lu\n", mode == M_UP ? "up" : mode == M_DOWN ? "down" :
	    mode == M_MUTE ? "mute" : "drop", accepted, open_, resets, bytes);
}

static void
read_control(int cfd)
{
	static char buf[256];
	static size_t len;
	char *nl;
	ssize_t n = read(cfd, buf + len, sizeof buf - 1 - len);

	if (n <= 0)
		return;
	len += (size_t)n;
	buf[len] = '\0';
	while ((nl = strchr(buf, '\n')) != NULL) {
		*nl = '\0';
		if (nl > buf && nl[-1] == '\r')
			nl[-1] = '\0';
		if (buf[0])
			command(buf);
		len -= (size_t)(nl + 1 - buf);
		memmove(buf, nl + 1, len + 1);
	}
	if (len == sizeof buf - 1)
		len = 0;   /* a line too long for a command: drop it */
}

/* Whether bytes flow in a direction: toward the server (up) or back. */
static int
flows(int up)
{
	return mode == M_UP || (mode == M_MUTE && up);
}

/* The events of one side: it reads for `in`, writes what `out` holds;
 * in_up: `in` flows toward the server. */
static short
want(const struct half *in, const struct half *out, int connected,
    int in_up)
{
	short ev = 0;

	if (!connected)
		return 0;
	if (flows(in_up) && in->len == 0 && !in->eof)
		ev |= POLLIN;
	if (flows(!in_up) && out->len > 0)
		ev |= POLLOUT;
	return ev;
}

static void
loop(int cfd)
{
	static struct pollfd pf[2 + 2 * MAXCONN];
	static int idx[2 + 2 * MAXCONN];
	static unsigned long ids[2 + 2 * MAXCONN];

	while (!stop) {
		int n = 0;

		pf[n].fd = cfd;
		pf[n++].events = POLLIN;
		pf[n].fd = mode == M_DOWN ? -1 : lfd;
		pf[n++].events = POLLIN;
		for (int i = 0; i < MAXCONN; i++) {
			struct pair *p = conns[i];
			int ok;

			if (p == NULL)
				continue;
			ok = p->sfd >= 0 && !p->connecting;
			idx[n] = idx[n + 1] = i;
			ids[n] = ids[n + 1] = p->id;
			pf[n].events = want(&p->up, &p->down, ok, 1);
			pf[n + 1].events = p->connecting && flows(1) ?
			    POLLOUT : want(&p->down, &p->up, ok, 0);
			/* no interest: not polled, so a hangup does not spin */
			pf[n].fd = pf[n].events ? p->cfd : -1;
			pf[n + 1].fd = pf[n + 1].events ? p->sfd : -1;
			n += 2;
		}
		if (poll(pf, (nfds_t)n, 1000) < 0) {
			if (errno == EINTR)
				continue;
			rs_fatal(111, "unable to poll: %s", strerror(errno));
		}
		if (pf[0].revents & POLLIN)
			read_control(cfd);
		if (pf[1].revents & POLLIN)
			do_accept();
		for (int k = 2; k < n; k += 2) {
			int i = idx[k];
			struct pair *p = conns[i];

			if (p == NULL || !flows(1) || p->id != ids[k])
				continue;
			if (p->connecting) {
				int err = 0;
				socklen_t el = sizeof err;

				if (!(pf[k + 1].revents & (POLLOUT | POLLERR |
				    POLLHUP)))
					continue;
				getsockopt(p->sfd, SOL_SOCKET, SO_ERROR, &err,
				    &el);
				if (err) {
					rs_info(1, "apiserver refused: %s",
					    strerror(err));
					pair_close(i, 1);
					continue;
				}
				p->connecting = 0;
				continue;
			}
			if (relay(p->cfd, p->sfd, &p->up, pf[k].revents,
			    pf[k + 1].revents) < 0 || (flows(0) &&
			    relay(p->sfd, p->cfd, &p->down, pf[k + 1].revents,
			    pf[k].revents) < 0)) {
				pair_close(i, 1);
				continue;
			}
			if (p->up.eof == 2 && p->down.eof == 2)
				pair_close(i, 0);
		}
	}
}

static unsigned short
port_arg(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 0 || v > 65535)
		usage();
	return (unsigned short)v;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "control", required_argument, NULL, 'c' },
		{ "port-file", required_argument, NULL, 'p' },
		{ "v", required_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	const char *control = NULL, *port_file = NULL;
	struct sigaction sa;
	int c, cfd;

	rs_log_init(argv[0]);
	while ((c = getopt_long(argc, argv, "v:", lo, NULL)) != -1) {
		switch (c) {
		case 'c': control = optarg; break;
		case 'p': port_file = optarg; break;
		case 'v': rs_log_set_verbosity(atoi(optarg)); break;
		default: usage();
		}
	}
	if (control == NULL || argc - optind != 2)
		usage();
	lport = port_arg(argv[optind]);
	tport = port_arg(argv[optind + 1]);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (mkfifo(control, 0600) < 0 && errno != EEXIST)
		rs_fatal(111, "unable to create %s: %s", control, strerror(errno));
	/* read-write: the FIFO never reads as closed between two writers */
	if ((cfd = open(control, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
		rs_fatal(111, "unable to open %s: %s", control, strerror(errno));
	listen_open();
	if (port_file) {
		FILE *f = fopen(port_file, "w");

		if (f == NULL || fprintf(f, "%u\n", lport) < 0 || fclose(f) != 0)
			rs_fatal(111, "unable to write %s", port_file);
	} else {
		printf("%u\n", lport);
		fflush(stdout);
	}
	rs_info(1, "forwarding 127.0.0.1:%u to 127.0.0.1:%u", lport, tport);
	loop(cfd);
	cut_all();
	return 0;
}
