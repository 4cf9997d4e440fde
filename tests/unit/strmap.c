/* Unit tests of libcommon's string map: rs_strmap_free leaves the map
 * empty and usable again without rs_strmap_init (rs-apply's parked keys
 * are emptied that way, and the map filled again at the next outage). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "strmap.h"

static void
free_leaves_empty(void **state)
{
	static const char *keys[] = { "ns/a", "ns/b", "ns/c" };
	struct rs_strmap m;
	const char *k;
	void *v;
	size_t i;

	rs_strmap_init(&m);
	for (i = 0; i < 3; i++)
		assert_int_equal(rs_strmap_put(&m, keys[i], (void *)keys[i],
		    NULL), RS_OK);
	assert_int_equal(m.len, 3);
	rs_strmap_free(&m);
	assert_int_equal(m.len, 0);
	assert_null(rs_strmap_get(&m, "ns/a"));
	i = 0;
	assert_false(rs_strmap_next(&m, &i, &k, &v));
	/* used again as it is */
	assert_int_equal(rs_strmap_put(&m, keys[1], (void *)keys[1], NULL),
	    RS_OK);
	assert_ptr_equal(rs_strmap_get(&m, "ns/b"), keys[1]);
	assert_null(rs_strmap_get(&m, "ns/a"));
	assert_int_equal(m.len, 1);
	rs_strmap_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(free_leaves_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
