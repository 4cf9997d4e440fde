/* The flags every tool reads alike: the merged long options and what each
 * common flag sets. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "clientflags.h"
#include "log.h"

static const struct option own[] = {
	{ "queue", required_argument, NULL, 256 },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const struct option *
find(const struct option *all, const char *name)
{
	for (; all->name != NULL; all++)
		if (strcmp(all->name, name) == 0)
			return all;
	return NULL;
}

static size_t
count(const struct option *all)
{
	size_t n = 0;

	while (all[n].name != NULL)
		n++;
	return n;
}

static void
test_longopts_sets(void **state)
{
	struct option *a = rs_flags_longopts(own, RS_FLAGS_LOG), *b;

	(void)state;
	assert_int_equal(count(a), 4);
	assert_non_null(find(a, "queue"));
	assert_non_null(find(a, "log-format"));
	assert_int_equal(find(a, "v")->val, 'v');
	assert_null(find(a, "kubeconfig"));
	assert_null(find(a, "kube-api-qps"));
	b = rs_flags_longopts(own, RS_FLAGS_LOG | RS_FLAGS_API | RS_FLAGS_RATE);
	assert_int_equal(count(b), 9);
	assert_int_equal(find(b, "kubeconfig")->val, RS_OPT_KUBECONFIG);
	assert_int_equal(find(b, "master")->has_arg, required_argument);
	assert_int_equal(find(b, "kube-api-burst")->val, RS_OPT_BURST);
	assert_int_equal(find(b, "help")->val, 'h');
}

static void
test_common_sets_client(void **state)
{
	struct rs_client_flags cf;

	(void)state;
	memset(&cf, 0, sizeof cf);
	assert_int_equal(rs_flags_common(RS_OPT_KUBECONFIG, "/k", &cf), 1);
	assert_int_equal(rs_flags_common(RS_OPT_CONTEXT, "ctx", &cf), 1);
	assert_int_equal(rs_flags_common(RS_OPT_MASTER, "https://h:6443", &cf), 1);
	assert_int_equal(rs_flags_common(RS_OPT_QPS, "12.5", &cf), 1);
	assert_int_equal(rs_flags_common(RS_OPT_BURST, "40", &cf), 1);
	assert_string_equal(cf.ko.kubeconfig, "/k");
	assert_string_equal(cf.ko.context, "ctx");
	assert_string_equal(cf.ko.master, "https://h:6443");
	assert_true(cf.kopts.qps == 12.5);
	assert_int_equal(cf.kopts.burst, 40);
	assert_int_equal(rs_flags_common(RS_OPT_QPS, "0", &cf), 1);
	assert_true(cf.kopts.qps == 0);
}

static void
test_common_log_and_unknown(void **state)
{
	(void)state;
	assert_int_equal(rs_flags_common('v', "4", NULL), 1);
	assert_true(rs_log_verbosity() == 4);
	assert_int_equal(rs_flags_common('v', "0", NULL), 1);
	assert_true(rs_log_verbosity() == 0);
	assert_int_equal(rs_flags_common(RS_OPT_LOGFMT, "text", NULL), 1);
	/* API flags are not common to a tool without a client */
	assert_int_equal(rs_flags_common(RS_OPT_KUBECONFIG, "/k", NULL), 0);
	assert_int_equal(rs_flags_common(256, "x", NULL), 0);
	assert_int_equal(rs_flags_common('h', NULL, NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_longopts_sets),
		cmocka_unit_test(test_common_sets_client),
		cmocka_unit_test(test_common_log_and_unknown),
	};

	rs_log_init("clientflags");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
