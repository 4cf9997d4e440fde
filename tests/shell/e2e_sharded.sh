#!/bin/bash
# run-all: slow
# e2e.sh's tests, unchanged, against 3 sharded instances of the controller
# instead of one pipeline (RS_TEST_INSTANCES, lib.sh): each instance its
# own rs-queue, state directory and rs-lease --shards 32 over rs-pipeline,
# all in one Lease group, the buckets split fairly before the first test.
# Issue 32: the end-to-end suites pass with 3 sharded instances as with one.
RS_TEST_INSTANCES=${RS_TEST_INSTANCES:-3}
[ "$RS_TEST_INSTANCES" -gt 1 ] || { echo "e2e_sharded: RS_TEST_INSTANCES=$RS_TEST_INSTANCES is not sharded" >&2; exit 100; }
# shunit2 takes the tests from the file it is told, e2e.sh's
SHUNIT_PARENT=$(dirname "$0")/e2e.sh
. "$SHUNIT_PARENT"
