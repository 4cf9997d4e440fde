/* Unit tests of libcommon/stagestats: the file's place and modes, its JSON
 * (families, samples, cumulative buckets, the API client's figures, the
 * latency buckets and the time since a stamp), the rate of writes (at most
 * one a second, on the clock passed in), atomic replacement under a reader
 * that never sees half a file, and failures. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "stagestats.h"

#define SEC 1000000000LL

static char dir[64];
static char file[128];
static pid_t child;                 /* test_atomic's reader */

static int
setup(void **state)
{
	snprintf(dir, sizeof dir, "/tmp/rs-ss.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	setenv("RS_STATE_DIR", dir, 1);
	snprintf(file, sizeof file, "%s/stats/t.json", dir);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
	rs_stagestats_close();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static cJSON *
load(void)
{
	static char buf[1 << 16];
	FILE *f = fopen(file, "r");
	size_t n;
	cJSON *o;

	assert_non_null(f);
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	assert_true(n > 0 && buf[n - 1] == '\n');
	assert_int_equal(rs_json_parse(buf, n - 1, &o, NULL), RS_OK);
	return o;
}

static const cJSON *
family(const cJSON *o, const char *name)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, cJSON_GetObjectItem(o, "families"))
		if (strcmp(rs_json_str(f, "name", NULL), name) == 0)
			return f;
	return NULL;
}

/* The sample of family name whose labels print as want (compact JSON). */
static const cJSON *
sample(const cJSON *o, const char *name, const char *want)
{
	const cJSON *f = family(o, name), *s;
	char *l;
	int eq;

	if (f == NULL)
		return NULL;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(f, "samples")) {
		l = rs_json_print(cJSON_GetObjectItem(s, "labels"));
		eq = strcmp(l, want) == 0;
		cJSON_free(l);
		if (eq)
			return s;
	}
	return NULL;
}

static double
value(const cJSON *o, const char *name, const char *labels)
{
	const cJSON *s = sample(o, name, labels);

	assert_non_null(s);
	return cJSON_GetObjectItem(s, "value")->valuedouble;
}

static ino_t
inode(void)
{
	struct stat sb;

	assert_int_equal(stat(file, &sb), 0);
	return sb.st_ino;
}

static void
test_open_modes(void **state)
{
	char sd[128];
	struct stat sb;
	cJSON *o;

	assert_int_equal(rs_stagestats_open("t"), RS_OK);
	assert_string_equal(rs_stagestats_path(), file);
	snprintf(sd, sizeof sd, "%s/stats", dir);
	assert_int_equal(stat(sd, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	assert_int_equal(stat(file, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	o = load();
	assert_string_equal(rs_json_str(o, "stage", NULL), "t");
	assert_int_equal(rs_json_int(o, -1, "pid", NULL), getpid());
	assert_true(fabs(rs_json_int(o, 0, "time", NULL) - rs_wall_now()) < 5);
	assert_true(cJSON_IsArray(cJSON_GetObjectItem(o, "families")));
	cJSON_Delete(o);
	/* one set per process */
	assert_int_equal(rs_stagestats_open("t"), RS_EUSAGE);
}

static void
test_bad_names(void **state)
{
	assert_int_equal(rs_stagestats_open("T"), RS_EUSAGE);
	assert_int_equal(rs_stagestats_open("a/b"), RS_EUSAGE);
	assert_int_equal(rs_stagestats_open(""), RS_EUSAGE);
	assert_int_equal(rs_stagestats_open(
	    "a-very-long-stage-name-longer-than-32"), RS_EUSAGE);
	assert_null(rs_stagestats_path());
	assert_int_equal(rs_stagestats_open("t"), RS_OK);
	assert_int_equal(rs_stagestats_declare("9bad", RS_STAT_GAUGE, "", NULL,
	    0), RS_EUSAGE);
	assert_int_equal(rs_stagestats_declare("h", RS_STAT_HISTOGRAM, "",
	    NULL, 0), RS_EUSAGE);
	assert_int_equal(rs_stagestats_declare("g", RS_STAT_GAUGE, "", NULL,
	    0), RS_OK);
	assert_int_equal(rs_stagestats_declare("g", RS_STAT_GAUGE, "", NULL,
	    0), RS_OK);
	assert_int_equal(rs_stagestats_declare("g", RS_STAT_COUNTER, "", NULL,
	    0), RS_EUSAGE);
}

/* A directory others may enter is refused, as for the queue socket. */
static void
test_open_dir_refused(void **state)
{
	char sd[128];

	snprintf(sd, sizeof sd, "%s/stats", dir);
	assert_int_equal(mkdir(sd, 0755), 0);
	assert_int_equal(chmod(sd, 0755), 0);
	assert_int_equal(rs_stagestats_open("t"), RS_EREFUSED);
	assert_null(rs_stagestats_path());
}

static void
test_figures(void **state)
{
	static const double b[] = { 0.1, 1, 10 };
	const cJSON *h;
	cJSON *o;

	/* nothing is kept while no set is open */
	rs_stagestats_add("c_total", NULL, 5);
	assert_int_equal(rs_stagestats_open("t"), RS_OK);
	assert_int_equal(rs_stagestats_declare("c_total", RS_STAT_COUNTER,
	    "a counter", NULL, 0), RS_OK);
	assert_int_equal(rs_stagestats_declare("g", RS_STAT_GAUGE,
	    "a gauge\nwith a newline", NULL, 0), RS_OK);
	assert_int_equal(rs_stagestats_declare("h_seconds", RS_STAT_HISTOGRAM,
	    "a histogram", b, 3), RS_OK);
	rs_stagestats_add("c_total", NULL, 1);
	rs_stagestats_add("c_total", "", 2);
	rs_stagestats_add("c_total", "op=create", 4);
	rs_stagestats_add("c_total", "op=create,kind=a b", 1);
	rs_stagestats_set("g", "resource=pods", 1);
	rs_stagestats_set("g", "resource=pods", 0);
	rs_stagestats_set("g", "resource=replicasets", 1);
	/* ignored: undeclared, wrong kind, bad labels */
	rs_stagestats_set("nope", NULL, 1);
	rs_stagestats_set("h_seconds", NULL, 1);
	rs_stagestats_observe("g", NULL, 1);
	rs_stagestats_set("g", "le=1", 1);
	rs_stagestats_set("g", "9x=1", 1);
	rs_stagestats_set("g", "novalue", 1);
	rs_stagestats_observe("h_seconds", NULL, 0.05);
	rs_stagestats_observe("h_seconds", NULL, 0.1);
	rs_stagestats_observe("h_seconds", NULL, 5);
	rs_stagestats_observe("h_seconds", NULL, 50);
	assert_int_equal(rs_stagestats_write(rs_mono_ns()), RS_OK);
	o = load();
	assert_null(family(o, "nope"));
	assert_string_equal(rs_json_str(family(o, "c_total"), "type", NULL),
	    "counter");
	assert_string_equal(rs_json_str(family(o, "g"), "help", NULL),
	    "a gauge\nwith a newline");
	assert_true(value(o, "c_total", "{}") == 3);
	assert_true(value(o, "c_total", "{\"op\":\"create\"}") == 4);
	assert_true(value(o, "c_total",
	    "{\"op\":\"create\",\"kind\":\"a b\"}") == 1);
	assert_true(value(o, "g", "{\"resource\":\"pods\"}") == 0);
	assert_true(value(o, "g", "{\"resource\":\"replicasets\"}") == 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(family(o, "g"),
	    "samples")), 2);
	h = sample(o, "h_seconds", "{}");
	assert_non_null(h);
	assert_int_equal(rs_json_int(h, -1, "count", NULL), 4);
	assert_true(fabs(cJSON_GetObjectItem(h, "sum")->valuedouble - 55.15) <
	    1e-9);
	/* cumulative: le 0.1 holds 0.05 and 0.1 (upper bounds inclusive) */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(h, "le")), 3);
	assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(h, "counts"),
	    0)->valueint, 2);
	assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(h, "counts"),
	    1)->valueint, 2);
	assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(h, "counts"),
	    2)->valueint, 3);
	cJSON_Delete(o);
}

static void
test_requests(void **state)
{
	cJSON *o;
	const cJSON *h;

	/* before open: nothing, and no crash */
	rs_stagestats_request("https://10.0.0.1:6443", "GET", 200, 0.01);
	assert_int_equal(rs_stagestats_open("t"), RS_OK);
	rs_stagestats_request("https://user@10.0.0.1:6443/prefix/", "POST",
	    201, 0.003);
	rs_stagestats_request("https://10.0.0.1:6443", "POST", 201, 0.2);
	rs_stagestats_request("https://10.0.0.1:6443", "POST", 0, 0.2);
	rs_stagestats_request("https://10.0.0.1:6443", "GET", 200, -1);
	rs_stagestats_request(NULL, "GET", 404, 0.001);
	assert_int_equal(rs_stagestats_write(rs_mono_ns()), RS_OK);
	o = load();
	assert_true(value(o, "rest_client_requests_total",
	    "{\"code\":\"201\",\"method\":\"POST\",\"host\":\"10.0.0.1:6443\","
	    "\"stage\":\"t\"}") == 2);
	assert_true(value(o, "rest_client_requests_total",
	    "{\"code\":\"<error>\",\"method\":\"POST\","
	    "\"host\":\"10.0.0.1:6443\",\"stage\":\"t\"}") == 1);
	assert_true(value(o, "rest_client_requests_total",
	    "{\"code\":\"200\",\"method\":\"GET\",\"host\":\"10.0.0.1:6443\","
	    "\"stage\":\"t\"}") == 1);
	assert_true(value(o, "rest_client_requests_total",
	    "{\"code\":\"404\",\"method\":\"GET\",\"host\":\"none\","
	    "\"stage\":\"t\"}") == 1);
	h = sample(o, "rest_client_request_duration_seconds",
	    "{\"verb\":\"POST\",\"host\":\"10.0.0.1:6443\",\"stage\":\"t\"}");
	assert_non_null(h);
	assert_int_equal(rs_json_int(h, -1, "count", NULL), 3);
	/* client-go's 12 buckets; 0.003 in the first (0.005) */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(h, "le")), 12);
	assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(h, "counts"),
	    0)->valueint, 1);
	/* the watch (seconds < 0) was counted, not timed */
	assert_null(sample(o, "rest_client_request_duration_seconds",
	    "{\"verb\":\"GET\",\"host\":\"10.0.0.1:6443\",\"stage\":\"t\"}"));
	cJSON_Delete(o);
}

/* The latency families: the shared buckets, 10 us to 50 s in 1-2-5
 * steps, and the time since a stamp: none without one, 0 for a stamp
 * from the future (a clock stepped back). */
static void
test_latency(void **state)
{
	static const double want[] = {
		1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3,
		0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50,
	};
	const cJSON *h, *le, *counts;
	cJSON *o;
	int i, n = sizeof want / sizeof want[0];

	assert_int_equal(rs_stagestats_open("t"), RS_OK);
	assert_int_equal(rs_stagestats_declare_latency("l_seconds", "lat"),
	    RS_OK);
	assert_int_equal(rs_stagestats_declare_latency("l_seconds", "lat"),
	    RS_OK);
	rs_stagestats_observe_since("l_seconds", NULL, 100, 100.00003);
	rs_stagestats_observe_since("l_seconds", NULL, 100, 103);
	rs_stagestats_observe_since("l_seconds", NULL, 100, 99);
	rs_stagestats_observe_since("l_seconds", NULL, 0, 99);
	rs_stagestats_observe_since("l_seconds", NULL, -1, 99);
	rs_stagestats_observe_since("l_seconds", NULL, 1, 1000);
	assert_int_equal(rs_stagestats_write(rs_mono_ns()), RS_OK);
	o = load();
	assert_string_equal(rs_json_str(family(o, "l_seconds"), "type", NULL),
	    "histogram");
	h = sample(o, "l_seconds", "{}");
	assert_non_null(h);
	le = cJSON_GetObjectItem(h, "le");
	counts = cJSON_GetObjectItem(h, "counts");
	assert_int_equal(cJSON_GetArraySize(le), n);
	for (i = 0; i < n; i++)
		assert_true(cJSON_GetArrayItem(le, i)->valuedouble == want[i]);
	/* 0 (the stepped clock), 30 us, 3 s, 999 s (past the last bound) */
	assert_int_equal(rs_json_int(h, -1, "count", NULL), 4);
	assert_true(fabs(cJSON_GetObjectItem(h, "sum")->valuedouble -
	    1002.00003) < 1e-6);
	assert_int_equal(cJSON_GetArrayItem(counts, 0)->valueint, 1);
	assert_int_equal(cJSON_GetArrayItem(counts, 2)->valueint, 2);
	assert_int_equal(cJSON_GetArrayItem(counts, 16)->valueint, 2);
	assert_int_equal(cJSON_GetArrayItem(counts, 17)->valueint, 3);
	assert_int_equal(cJSON_GetArrayItem(counts, n - 1)->valueint, 3);
	cJSON_Delete(o);
}

static void
test_rate(void **state)
{
	int64_t t0;
	ino_t i0;
	int ms;

	assert_int_equal(rs_stagestats_open("t"), RS_OK);
	t0 = rs_mono_ns();
	assert_int_equal(rs_stagestats_declare("g", RS_STAT_GAUGE, "", NULL,
	    0), RS_OK);
	i0 = inode();
	ms = rs_stagestats_timeout_ms(t0);
	assert_true(ms > 900 && ms <= 1000);
	/* the write at open was just before t0: not due for a second */
	assert_false(rs_stagestats_due(t0 + SEC / 2));
	assert_int_equal(rs_stagestats_flush(t0 + SEC / 2), 0);
	assert_int_equal(inode(), i0);
	rs_stagestats_set("g", NULL, 1);
	assert_int_equal(rs_stagestats_flush(t0 + SEC / 2), 0);
	assert_true(rs_stagestats_due(t0 + 2 * SEC));
	assert_int_equal(rs_stagestats_flush(t0 + 2 * SEC), 1);
	assert_true(inode() != i0);
	i0 = inode();
	/* a thousand calls within the next second: no write */
	for (int i = 0; i < 1000; i++)
		assert_int_equal(rs_stagestats_flush(t0 + 2 * SEC + i * 999999LL),
		    0);
	assert_int_equal(inode(), i0);
	assert_int_equal(rs_stagestats_timeout_ms(t0 + 2 * SEC + SEC / 4), 750);
	assert_int_equal(rs_stagestats_timeout_ms(t0 + 5 * SEC), 0);
	assert_int_equal(rs_stagestats_flush(t0 + 3 * SEC), 1);
	rs_stagestats_close();
	assert_int_equal(rs_stagestats_timeout_ms(t0), -1);
	assert_int_equal(rs_stagestats_flush(t0 + 9 * SEC), 0);
}

/* A reader in another process reads the file as fast as it can while this
 * process rewrites it with growing content: every read is one whole JSON
 * object, and no temporary file is left behind. */
static void
test_atomic(void **state)
{
	char label[64];
	int status, i, n = 0;
	struct dirent *d;
	pid_t pid;
	DIR *dp;
	char sd[128], c;
	int p[2];

	assert_int_equal(rs_stagestats_open("t"), RS_OK);
	assert_int_equal(rs_stagestats_declare("g", RS_STAT_GAUGE, "", NULL,
	    0), RS_OK);
	assert_int_equal(pipe(p), 0);
	child = pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static char buf[1 << 20];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		for (;;) {
			FILE *f = fopen(file, "r");
			size_t len;
			cJSON *o;

			if (f == NULL)
				_exit(2);
			len = fread(buf, 1, sizeof buf, f);
			fclose(f);
			if (len == 0 || buf[len - 1] != '\n' ||
			    rs_json_parse(buf, len - 1, &o, NULL) != RS_OK)
				_exit(1);
			cJSON_Delete(o);
			if (p[1] >= 0) {
				/* reading: the writer may start */
				if (write(p[1], "r", 1) != 1)
					_exit(4);
				close(p[1]);
				p[1] = -1;
			}
		}
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	for (i = 0; i < 3000; i++) {
		snprintf(label, sizeof label, "i=%d", i % 200);
		rs_stagestats_set("g", label, i);
		assert_int_equal(rs_stagestats_write(rs_mono_ns()), RS_OK);
	}
	assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	child = 0;
	assert_true(WIFSIGNALED(status));
	snprintf(sd, sizeof sd, "%s/stats", dir);
	dp = opendir(sd);
	assert_non_null(dp);
	while ((d = readdir(dp)) != NULL)
		if (d->d_name[0] != '.' || strncmp(d->d_name, ".t.", 3) == 0)
			n++;
	closedir(dp);
	assert_int_equal(n, 1);    /* t.json alone */
}

static void
test_write_failure(void **state)
{
	char sd[128];

	assert_int_equal(rs_stagestats_open("t"), RS_OK);
	assert_int_equal(unlink(file), 0);
	snprintf(sd, sizeof sd, "%s/stats", dir);
	assert_int_equal(rmdir(sd), 0);
	assert_int_equal(rs_stagestats_write(rs_mono_ns()), RS_EIO);
	assert_int_equal(rs_stagestats_flush(rs_mono_ns() + 2 * SEC), -1);
	/* the directory back: writes go on */
	assert_int_equal(mkdir(sd, 0700), 0);
	assert_int_equal(rs_stagestats_flush(rs_mono_ns() + 4 * SEC), 1);
	assert_int_equal(access(file, R_OK), 0);
}

static void
test_close_writes_last(void **state)
{
	cJSON *o;

	assert_int_equal(rs_stagestats_open("t"), RS_OK);
	assert_int_equal(rs_stagestats_declare("c_total", RS_STAT_COUNTER, "",
	    NULL, 0), RS_OK);
	rs_stagestats_add("c_total", NULL, 7);
	rs_stagestats_close();
	o = load();
	assert_true(value(o, "c_total", "{}") == 7);
	cJSON_Delete(o);
	/* and a new set may be opened, empty */
	assert_int_equal(rs_stagestats_open("t"), RS_OK);
	o = load();
	assert_null(family(o, "c_total"));
	cJSON_Delete(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_dir_refused, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_figures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_latency, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_failure, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_close_writes_last, setup,
		    teardown),
	};

	rs_log_init("stagestats");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
