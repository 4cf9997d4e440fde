#!/bin/bash
# run-all: slow
# e2e_rc.sh's tests, unchanged, with 3 sharded instances of each controller
# instead of one pipeline each (RS_TEST_INSTANCES, lib.sh): the ReplicaSet
# instances in one Lease group, the ReplicationController ones in another,
# each instance its own rs-queue, state directory and rs-lease --shards 32
# over rs-pipeline. Issue 32: the end-to-end suites pass with 3 sharded
# instances as with one.
RS_TEST_INSTANCES=${RS_TEST_INSTANCES:-3}
[ "$RS_TEST_INSTANCES" -gt 1 ] || { echo "e2e_rc_sharded: RS_TEST_INSTANCES=$RS_TEST_INSTANCES is not sharded" >&2; exit 100; }
# shunit2 takes the tests from the file it is told, e2e_rc.sh's
SHUNIT_PARENT=$(dirname "$0")/e2e_rc.sh
. "$SHUNIT_PARENT"
