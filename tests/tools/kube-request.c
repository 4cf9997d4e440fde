/* kube-request: one API request through libcommon's client, for tests and
 * for people. The HTTP status goes to stderr ("HTTP/2 200"), the body to
 * stdout. Exit 0 on 2xx, 1 when the API refused (the Status's reason and
 * message are printed), 111 on transport errors, 100 on usage or
 * configuration errors.
 *
 *   kube-request [--kubeconfig F] [--context C] [--master URL] [-v N]
 *       [--timeout S] [--qps Q] [--burst B] [--content-type T]
 *       [--watch | --parallel N [--borrowed] [--direct] |
 *        --threads N [--repeat R]]
 *       METHOD PATH
 *       [BODY|-]
 *
 * --parallel N sends N copies at once through rs_kube_submit/rs_kube_run
 * (rs_kube_submit_borrowed with --borrowed: one body for all of them;
 * with --direct on libcommon's own HTTP/2 client, not libcurl, where it
 * can), and says how many were sent and how many found no server; on
 * TERM or INT it stops there and frees the client with the requests not
 * finished still queued or in flight (rs_kube_free drops them, no
 * callback), says how many, and exits 0;
 * --threads N sends R copies (default 1), one after the other, from each of
 * N threads with rs_kube_do.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "code.h"
#include "kube.h"
#include "kubeconfig.h"
#include "line.h"
#include "log.h"

static const char usage_text[] =
    "usage: kube-request [--kubeconfig F] [--context C] [--master URL] "
    "[-v N]\n"
    "           [--timeout S] [--qps Q] [--burst B] [--content-type T]\n"
    "           [--watch | --parallel N [--borrowed] [--direct] |\n"
    "            --threads N [--repeat R]]\n"
    "           METHOD PATH [BODY|-]\n";

static volatile int stopping;

struct par {
	const char *method, *path;
	int ok, api, net;
	int sent, noconn;
	long connects;
	int http2;
	rs_code last;
	char last_msg[1200];
};

struct thr {
	pthread_t t;
	struct rs_kube *k;
	const char *method, *path, *ctype, *body;
	size_t len;
	int repeat;
	struct par *p;
	pthread_mutex_t *mu;
};

static void
on_signal(int sig)
{
	stopping = 1;
}

/* TERM and INT set stopping: a watch ends, --parallel gives up. */
static void
on_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static void
usage(int code)
{
	fputs(usage_text, code ? stderr : stdout);
	exit(code);
}

static char *
read_stdin(size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap), *nb;
	ssize_t r;

	while (buf) {
		if (n + 1 >= cap) {
			nb = realloc(buf, cap *= 2);
			if (nb == NULL)
				break;
			buf = nb;
		}
		r = read(0, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rs_fatal(111, "unable to read stdin: %s",
			    strerror(errno));
		if (r == 0) {
			*len = n;
			buf[n] = '\0';
			return buf;
		}
		n += r;
	}
	rs_fatal(111, "unable to read stdin: %s", strerror(ENOMEM));
}

static void
print_code(const struct rs_kresp *r)
{
	if (r->code)
		fprintf(stderr, "HTTP/%s %ld\n", r->http2 ? "2" : "1.1",
		    r->code);
}

static void
print_body(const struct rs_kresp *r)
{
	if (r->body == NULL || r->len == 0)
		return;
	rs_write_all(1, r->body, r->len);
	if (r->body[r->len - 1] != '\n')
		rs_write_all(1, "\n", 1);
}

/* The exit for a failure, after its message. */
static void
die(const char *method, const char *path, rs_code rc,
    const struct rs_kresp *r)
{
	if (rc == RS_EAPI || rc == RS_ENOTFOUND)
		rs_fatal(1, "unable to %s %s: %s: %s", method, path,
		    r->status.reason, r->status.message);
	rs_fatal(rs_exit_code(rc), "unable to %s %s: %s%s%s", method, path,
	    rs_strerror(rc), r->status.message[0] ? ": " : "",
	    r->status.message);
}

static rs_code
watch_line(void *arg, char *line, size_t len)
{
	line[len] = '\n';
	if (rs_write_all(1, line, len + 1) != RS_OK)
		return RS_EIO;
	line[len] = '\0';
	return RS_OK;
}

static int
do_watch(struct rs_kube *k, const char *path, long timeout_ms)
{
	struct rs_kresp r;
	rs_code rc;

	on_stop_signals();
	rc = rs_kube_stream(k, path, timeout_ms, watch_line, NULL, NULL, &stopping,
	    &r);
	print_code(&r);
	/* The client-side timeout is how a bounded watch ends. */
	if (rc == RS_ETIMEOUT && r.code >= 200 && r.code < 300)
		rc = RS_OK;
	if (rc != RS_OK)
		die("GET", path, rc, &r);
	rs_kresp_free(&r);
	return 0;
}

static void
par_done(void *arg, rs_code rc, struct rs_kresp *r)
{
	struct par *p = arg;

	print_code(r);
	print_body(r);
	p->connects += r->connects;
	p->http2 += r->http2;
	p->sent += r->sent;
	p->noconn += r->refused;
	if (rc == RS_OK) {
		p->ok++;
		return;
	}
	if (rc == RS_EAPI || rc == RS_ENOTFOUND)
		p->api++;
	else
		p->net++;
	p->last = rc;
	snprintf(p->last_msg, sizeof p->last_msg, "%s%s%s",
	    rc == RS_EAPI || rc == RS_ENOTFOUND ? r->status.reason :
	    rs_strerror(rc), r->status.message[0] ? ": " : "",
	    r->status.message);
}

static int
do_parallel(struct rs_kube *k, const char *method, const char *path,
    const char *ctype, const char *body, size_t len, int n, int borrow)
{
	struct par p = { method, path, 0, 0, 0, 0, 0, 0, 0, RS_OK, "" };
	int64_t t0 = rs_mono_ns();
	int i, left;

	on_stop_signals();
	for (i = 0; i < n; i++)
		if ((borrow ? rs_kube_submit_borrowed : rs_kube_submit)(k,
		    method, path, ctype, body, len, par_done, &p) != RS_OK)
			rs_fatal(111, "unable to submit: out of memory");
	while ((left = rs_kube_run(k, 1000, -1)) > 0 && !stopping)
		;
	if (left > 0) {
		fprintf(stderr, "kube-request: stopped with %d of %d requests "
		    "not finished: dropped, no callback (%d answered)\n", left,
		    n, p.ok + p.api + p.net);
		return 0;
	}
	fprintf(stderr, "kube-request: %d requests: %d ok, %d refused, %d "
	    "failed in %lld ms; %ld new connections, %d over HTTP/2\n", n,
	    p.ok, p.api, p.net, (long long)((rs_mono_ns() - t0) / 1000000),
	    p.connects, p.http2);
	fprintf(stderr, "kube-request: %d sent, %d found no server\n", p.sent,
	    p.noconn);
	if (p.net)
		rs_fatal(111, "unable to %s %s: %s", method, path, p.last_msg);
	if (p.api)
		rs_fatal(1, "unable to %s %s: %s", method, path, p.last_msg);
	return 0;
}

static void *
thr_run(void *arg)
{
	struct thr *t = arg;
	struct rs_kresp r;
	rs_code rc;
	int i;

	for (i = 0; i < t->repeat; i++) {
		rc = rs_kube_do(t->k, t->method, t->path, t->ctype, t->body,
		    t->len, &r);
		pthread_mutex_lock(t->mu);
		par_done(t->p, rc, &r);
		pthread_mutex_unlock(t->mu);
		rs_kresp_free(&r);
	}
	return NULL;
}

static int
do_threads(struct rs_kube *k, const char *method, const char *path,
    const char *ctype, const char *body, size_t len, int n, int repeat)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	struct thr *t = calloc(n, sizeof *t);
	struct par p = { method, path, 0, 0, 0, 0, 0, 0, 0, RS_OK, "" };
	int64_t t0 = rs_mono_ns();
	int i;

	if (t == NULL)
		rs_fatal(111, "unable to start threads: out of memory");
	for (i = 0; i < n; i++) {
		t[i] = (struct thr){ .k = k, .method = method, .path = path,
		    .ctype = ctype, .body = body, .len = len,
		    .repeat = repeat, .p = &p, .mu = &mu };
		if (pthread_create(&t[i].t, NULL, thr_run, &t[i]) != 0)
			rs_fatal(111, "unable to start a thread");
	}
	for (i = 0; i < n; i++)
		pthread_join(t[i].t, NULL);
	free(t);
	fprintf(stderr, "kube-request: %d requests: %d ok, %d refused, %d "
	    "failed in %lld ms; %ld new connections, %d over HTTP/2\n",
	    n * repeat,
	    p.ok, p.api, p.net, (long long)((rs_mono_ns() - t0) / 1000000),
	    p.connects, p.http2);
	fprintf(stderr, "kube-request: %d sent, %d found no server\n", p.sent,
	    p.noconn);
	if (p.net)
		rs_fatal(111, "unable to %s %s: %s", method, path, p.last_msg);
	if (p.api)
		rs_fatal(1, "unable to %s %s: %s", method, path, p.last_msg);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "context", required_argument, NULL, 'c' },
		{ "master", required_argument, NULL, 'm' },
		{ "v", required_argument, NULL, 'v' },
		{ "timeout", required_argument, NULL, 't' },
		{ "qps", required_argument, NULL, 'q' },
		{ "burst", required_argument, NULL, 'b' },
		{ "content-type", required_argument, NULL, 'T' },
		{ "watch", no_argument, NULL, 'w' },
		{ "parallel", required_argument, NULL, 'p' },
		{ "borrowed", no_argument, NULL, 'B' },
		{ "direct", no_argument, NULL, 'D' },
		{ "threads", required_argument, NULL, 'P' },
		{ "repeat", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct rs_kube_config_opts co = { NULL, NULL, NULL };
	struct rs_kube_opts ko = { .user_agent = "kube-request/0.1" };
	struct rs_kube_config *cfg;
	struct rs_kube *k;
	struct rs_kresp r;
	const char *method, *path, *ctype = NULL;
	char *body = NULL;
	size_t len = 0;
	int c, watch = 0, parallel = 0, borrow = 0, threads = 0, repeat = 1;
	double timeout = 0;
	rs_code rc;

	rs_log_init(argv[0]);
	while ((c = getopt_long(argc, argv, "+v:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'k': co.kubeconfig = optarg; break;
		case 'c': co.context = optarg; break;
		case 'm': co.master = optarg; break;
		case 'v': rs_log_set_verbosity(atoi(optarg)); break;
		case 't': timeout = atof(optarg); break;
		case 'q': ko.qps = atof(optarg); break;
		case 'b': ko.burst = atoi(optarg); break;
		case 'T': ctype = optarg; break;
		case 'w': watch = 1; break;
		case 'p': parallel = atoi(optarg); break;
		case 'B': borrow = 1; break;
		case 'D': ko.http_client = RS_KUBE_HTTP_DIRECT; break;
		case 'P': threads = atoi(optarg); break;
		case 'R': repeat = atoi(optarg); break;
		case 'h': usage(0); break;
		default: usage(100);
		}
	}
	if (argc - optind < 2 || argc - optind > 3 || parallel < 0 ||
	    threads < 0 || repeat < 1)
		usage(100);
	method = argv[optind];
	path = argv[optind + 1];
	if (path[0] != '/')
		rs_fatal(100, "unable to use path %s: it must start with /",
		    path);
	if (argc - optind == 3) {
		if (strcmp(argv[optind + 2], "-") == 0) {
			body = read_stdin(&len);
		} else {
			body = strdup(argv[optind + 2]);
			len = body ? strlen(body) : 0;
		}
	}
	ko.timeout_ms = watch ? 0 : (long)(timeout * 1000);
	rc = rs_kube_config_load(&co, &cfg);
	if (rc != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to load the API "
		    "configuration: %s", rs_strerror(rc));
	rc = rs_kube_new(cfg, &ko, &k);
	if (rc != RS_OK)
		rs_fatal(rs_exit_code(rc), "unable to set up the API client: "
		    "%s", rs_strerror(rc));
	if (watch || parallel > 0 || threads > 0) {
		if (watch)
			c = do_watch(k, path, (long)(timeout * 1000));
		else if (parallel > 0)
			c = do_parallel(k, method, path, ctype, body, len,
			    parallel, borrow);
		else
			c = do_threads(k, method, path, ctype, body, len,
			    threads, repeat);
		rs_kube_free(k);
		free(body);
		return c;
	}
	rc = rs_kube_do(k, method, path, ctype, body, len, &r);
	print_code(&r);
	print_body(&r);
	if (rc != RS_OK)
		die(method, path, rc, &r);
	rs_kresp_free(&r);
	rs_kube_free(k);
	free(body);
	return 0;
}
