/* Unit tests of libcommon/prom: names, values, escaping, histograms and
 * the work-queue families of a STATS reply. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"
#include "prom.h"

static char *text;
static size_t textlen;

static FILE *
out(void)
{
	FILE *f = open_memstream(&text, &textlen);

	assert_non_null(f);
	return f;
}

static const char *
done(FILE *f)
{
	assert_int_equal(fclose(f), 0);
	return text;
}

static void
test_names(void **state)
{
	assert_true(rs_prom_name_ok("workqueue_depth"));
	assert_true(rs_prom_name_ok("a:b_c9"));
	assert_true(rs_prom_name_ok("_x"));
	assert_false(rs_prom_name_ok("9x"));
	assert_false(rs_prom_name_ok("a-b"));
	assert_false(rs_prom_name_ok(""));
	assert_false(rs_prom_name_ok(NULL));
	assert_true(rs_prom_label_ok("code"));
	assert_false(rs_prom_label_ok("a:b"));
	assert_false(rs_prom_label_ok("__name__"));
	assert_false(rs_prom_label_ok("1a"));
	assert_true(rs_prom_type_ok("counter"));
	assert_true(rs_prom_type_ok("histogram"));
	assert_false(rs_prom_type_ok("summary"));
	assert_false(rs_prom_type_ok(NULL));
}

static void
test_values(void **state)
{
	static const struct { double v; const char *s; } c[] = {
		{ 0, "0" }, { 3, "3" }, { -2.5, "-2.5" }, { 0.1, "0.1" },
		{ 1e-8, "1e-08" }, { 0.003538624, "0.003538624" },
		{ 1234567890123, "1234567890123" },
		{ 0.1 + 0.2, "0.30000000000000004" },
	};
	size_t i;
	FILE *f;

	for (i = 0; i < sizeof c / sizeof c[0]; i++) {
		f = out();
		rs_prom_value(f, c[i].v);
		assert_string_equal(done(f), c[i].s);
		free(text);
	}
	f = out();
	rs_prom_value(f, NAN);
	fputc(' ', f);
	rs_prom_value(f, INFINITY);
	fputc(' ', f);
	rs_prom_value(f, -INFINITY);
	assert_string_equal(done(f), "NaN +Inf -Inf");
	free(text);
}

static void
test_escaping(void **state)
{
	struct rs_prom_label l[] = { { "a", "x\"y\\z\nw" }, { "b", "" } };
	FILE *f = out();

	rs_prom_head(f, "m", "gauge", "line\\one\nline \"two\"");
	rs_prom_sample(f, "m", NULL, l, 2, 1);
	rs_prom_sample(f, "m", "_x", NULL, 0, 2);
	assert_string_equal(done(f),
	    "# HELP m line\\\\one\\nline \"two\"\n"
	    "# TYPE m gauge\n"
	    "m{a=\"x\\\"y\\\\z\\nw\",b=\"\"} 1\n"
	    "m_x 2\n");
	free(text);
}

static void
test_histogram(void **state)
{
	const char *j = "{\"le\":[0.005,0.025,1],\"counts\":[1,1,3],"
	    "\"sum\":1.5,\"count\":4}";
	struct rs_prom_label l = { "verb", "POST" };
	cJSON *h;
	FILE *f = out();

	assert_int_equal(rs_json_parse(j, strlen(j), &h, NULL), RS_OK);
	rs_prom_histogram(f, "d", &l, 1, h);
	cJSON_Delete(h);
	assert_string_equal(done(f),
	    "d_bucket{verb=\"POST\",le=\"0.005\"} 1\n"
	    "d_bucket{verb=\"POST\",le=\"0.025\"} 1\n"
	    "d_bucket{verb=\"POST\",le=\"1\"} 3\n"
	    "d_bucket{verb=\"POST\",le=\"+Inf\"} 4\n"
	    "d_sum{verb=\"POST\"} 1.5\n"
	    "d_count{verb=\"POST\"} 4\n");
	free(text);
}

static void
test_workqueue(void **state)
{
	const char *j = "{\"name\":\"replicaset\",\"depth\":2,\"adds_total\":7,"
	    "\"retries_total\":1,\"unfinished_work_seconds\":0.5,"
	    "\"longest_running_processor_seconds\":0.25,"
	    "\"queue_duration_seconds\":{\"le\":[1e-08,10],\"counts\":[0,5],"
	    "\"sum\":0.01,\"count\":5},"
	    "\"work_duration_seconds\":{\"le\":[1e-08,10],\"counts\":[0,4],"
	    "\"sum\":0.02,\"count\":4}}";
	const char *t;
	FILE *f = out();

	assert_int_equal(rs_prom_workqueue(f, j, strlen(j)), 0);
	t = done(f);
	assert_non_null(strstr(t, "# TYPE workqueue_depth gauge\n"
	    "workqueue_depth{name=\"replicaset\"} 2\n"));
	assert_non_null(strstr(t, "# TYPE workqueue_adds_total counter\n"
	    "workqueue_adds_total{name=\"replicaset\"} 7\n"));
	assert_non_null(strstr(t, "workqueue_queue_duration_seconds_bucket{"
	    "name=\"replicaset\",le=\"1e-08\"} 0\n"));
	assert_non_null(strstr(t, "workqueue_work_duration_seconds_count{"
	    "name=\"replicaset\"} 4\n"));
	assert_non_null(strstr(t, "workqueue_unfinished_work_seconds{"
	    "name=\"replicaset\"} 0.5\n"));
	assert_non_null(strstr(t, "workqueue_longest_running_processor_seconds{"
	    "name=\"replicaset\"} 0.25\n"));
	assert_non_null(strstr(t, "workqueue_retries_total{"
	    "name=\"replicaset\"} 1\n"));
	free(text);
	f = out();
	assert_int_equal(rs_prom_workqueue(f, "{nope", 5), -1);
	done(f);
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_workqueue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
