# expectations.sh: the expectations file shared by processes (no cluster).
# Two processes updating one file at once must add up exactly; a process
# killed with SIGKILL in the middle of updates, again and again, must
# neither wedge the other nor leave the file inconsistent.
. "$(dirname "$0")/lib.sh"

EXP_TOOL=${EXP_TOOL:-$RS_BIN/../test/exp-tool}
[ -x "$EXP_TOOL" ] || EXP_TOOL=$top/build/test/exp-tool

oneTimeSetUp() {
  # tmpfs, as in production, when there is one we may use.
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    EXP_DIR=$(mktemp -d /dev/shm/rs-exp-sh.XXXXXX)
  else
    EXP_DIR=$(mktemp -d "$TMP/exp.XXXXXX")
  fi
  chmod 0700 "$EXP_DIR"
}

oneTimeTearDown() {
  rs_cleanup
  rm -rf "$EXP_DIR" "$RS_STATE_DIR"
}

setUp() {
  F=$EXP_DIR/exp.$$.$RANDOM
}

x() {  # x ARGS...: exp-tool on $F, bounded
  timeout 30 "$EXP_TOOL" "$F" "$@"
}

field() {  # field KEY JQ: one field of KEY's record
  x get "$1" | jq -r "$2"
}

test_file_is_0600_and_checks() {
  x create || fail "create"
  assertEquals "mode" 600 "$(stat -c %a "$F")"
  x check || fail "a new file is inconsistent"
  # The default path is in RS_STATE_DIR, whose directory is made 0700.
  RS_STATE_DIR=$EXP_DIR/state timeout 30 "$EXP_TOOL" - expect-creations ns/a 1 ||
    fail "default path"
  assertEquals "default file mode" 600 "$(stat -c %a "$EXP_DIR/state/expectations")"
  assertEquals "state dir mode" 700 "$(stat -c %a "$EXP_DIR/state")"
  assertEquals "default file used" 1 \
    "$(RS_STATE_DIR=$EXP_DIR/state timeout 30 "$EXP_TOOL" - get ns/a | jq .add)"
}

test_refuses_shared_modes() {
  x create || fail "create"
  chmod 0640 "$F"
  x check 2>"$TMP/err"
  assertEquals "group-readable refused (exit 1)" 1 $?
  assertContains "says why" "$(cat "$TMP/err")" "mode 0640"
  chmod 0600 "$F"
  x check || fail "0600 accepted again"
}

test_rejects_garbage() {
  head -c 1048576 /dev/urandom >"$F"
  chmod 0600 "$F"
  x check 2>"$TMP/err"
  assertEquals "random bytes refused (exit 1)" 1 $?
  assertContains "says why" "$(cat "$TMP/err")" "not an expectations file"
  rm -f "$F"
  x expect-creations ns/a 1 || fail "create"
  truncate -s 65536 "$F"
  x check 2>"$TMP/err"
  assertEquals "truncated refused (exit 1)" 1 $?
  assertContains "says why" "$(cat "$TMP/err")" "truncated"
}

test_operations() {
  x expect-deletions ns/rs ns/a ns/b ns/c || fail "expect-deletions"
  x satisfied ns/rs >/dev/null
  assertEquals "pending" 1 $?
  x observe-deletion ns/rs ns/b ns/zz ns/b || fail "observe-deletion"
  assertEquals "del" 2 "$(field ns/rs .del)"
  assertEquals "set" '["ns/a","ns/c"]' "$(field ns/rs '.deleting|tostring')"
  x observe-deletion ns/rs ns/a ns/c || fail "observe-deletion"
  assertEquals "fulfilled" fulfilled "$(x satisfied ns/rs)"
  x expect-creations ns/rs 2 || fail "expect-creations"
  x observe-creation ns/rs || fail "observe-creation"
  assertEquals "pending" pending "$(x satisfied ns/rs)"
  x lower-creations ns/rs 1 || fail "lower-creations"
  assertEquals "fulfilled" fulfilled "$(x satisfied ns/rs)"
  x dump >"$TMP/dump" || fail "dump"
  assertEquals "dump lines" 1 "$(wc -l <"$TMP/dump")"
  assertEquals "dump fields" '["add","age","del","deleting","key","reason","satisfied","timestamp"]' \
    "$(jq -c 'keys' "$TMP/dump")"
  x delete ns/rs || fail "delete"
  assertEquals "no record" no-record "$(x satisfied ns/rs)"
  assertEquals "dump empty" "" "$(x dump)"
}

test_full_is_a_clear_error() {
  timeout 30 "$EXP_TOOL" --keys 2 --pods 3 "$F" create || fail "create"
  x expect-creations ns/a 1 && x expect-creations ns/b 1 || fail "two keys"
  x expect-creations ns/c 1 2>"$TMP/err"
  assertEquals "third key: exit 111" 111 $?
  assertContains "says full" "$(cat "$TMP/err")" "capacity exhausted"
  x expect-deletions ns/a p1 p2 p3 p4 2>/dev/null
  assertNotEquals "four pods in three" 0 $?
  assertEquals "unchanged" 1 "$(field ns/a .add)"
}

# Counts from two processes at once add up exactly: the lock covers the
# read-modify-write, and a pod's deletion is counted once however many
# processes observe it.
test_two_processes_add_up() {
  x expect-creations ns/c 100000 || fail "expect-creations"
  seq 0 3999 | sed 's|^|ns/p|' >"$TMP/pods"
  x expect-deletions ns/d - <"$TMP/pods" || fail "expect-deletions"
  assertEquals "4000 awaited" 4000 "$(field ns/d .del)"
  head -3000 "$TMP/pods" >"$TMP/pods3000"
  x observe-creation ns/c 20000 & p1=$!
  x observe-creation ns/c 20000 & p2=$!
  x observe-deletion ns/d - <"$TMP/pods3000" & p3=$!
  x observe-deletion ns/d - <"$TMP/pods3000" & p4=$!
  for p in $p1 $p2 $p3 $p4; do wait $p || fail "worker $p failed"; done
  assertEquals "creations" 60000 "$(field ns/c .add)"
  assertEquals "deletions counted once" 1000 "$(field ns/d .del)"
  assertEquals "set size" 1000 "$(field ns/d '.deleting|length')"
  x check || fail "inconsistent after concurrent updates"
}

test_two_hammers() {
  x hammer ns/h1 3000 12 >"$TMP/h1" & p1=$!
  x hammer ns/h2 3000 12 >"$TMP/h2" & p2=$!
  wait $p1 || fail "hammer 1"
  wait $p2 || fail "hammer 2"
  assertEquals "h1 rounds" "hammer ns/h1: 3000 rounds" "$(cat "$TMP/h1")"
  assertEquals "h2 rounds" "hammer ns/h2: 3000 rounds" "$(cat "$TMP/h2")"
  x check || fail "inconsistent"
}

# One process killed with SIGKILL at random points, 200 times, while
# another keeps hammering: the survivor never stalls (its lock waits give up
# after 5 s, and any failure ends it non-zero), the file stays consistent
# after every kill, and the counters show that kills did land inside
# transactions and were rolled back. A write takes well under a
# microsecond, so every other victim sleeps after each write
# (--write-delay): most of those die in the middle of a transaction.
test_sigkill_mid_update() {
  x create || fail "create"
  timeout 300 "$EXP_TOOL" --seconds 240 "$F" hammer ns/survivor 0 16 \
    >"$TMP/survivor" 2>"$TMP/survivor.err" &
  survivor=$!
  i=0
  while [ $i -lt 200 ]; do
    delay=0; [ $((i % 2)) -eq 1 ] && delay=20
    "$EXP_TOOL" --write-delay $delay --seconds 20 "$F" hammer ns/victim 0 16 \
      >/dev/null 2>&1 &
    victim=$!
    sleep "0.0$(printf %02d $((RANDOM % 40)))"
    kill -9 $victim 2>/dev/null
    wait $victim 2>/dev/null
    if ! x check 2>"$TMP/check.err"; then
      fail "inconsistent after kill $i: $(cat "$TMP/check.err")"
      break
    fi
    kill -0 $survivor 2>/dev/null || { fail "survivor died at kill $i"; break; }
    i=$((i + 1))
  done
  kill -TERM $survivor
  wait $survivor
  assertEquals "survivor ended cleanly: $(grep -v warning "$TMP/survivor.err" | tail -3)" 0 $?
  rounds=$(sed -n 's/^hammer ns\/survivor: \([0-9]*\) rounds$/\1/p' "$TMP/survivor")
  assertTrue "survivor made progress ($rounds rounds)" "[ ${rounds:-0} -gt 1000 ]"
  x stats >"$TMP/stats"
  recoveries=$(jq .recoveries "$TMP/stats")
  rollbacks=$(jq .rollbacks "$TMP/stats")
  echo "sigkill: $i kills, $recoveries lock recoveries, $rollbacks rollbacks," \
    "survivor $rounds rounds"
  assertTrue "kills landed while the lock was held ($recoveries)" "[ $recoveries -gt 20 ]"
  assertTrue "half-done updates were rolled back ($rollbacks)" "[ $rollbacks -gt 20 ]"
  # The victim's key is usable again at once.
  x hammer ns/victim 10 16 >/dev/null || fail "victim's key unusable"
  x check || fail "inconsistent at the end"
}

. "$SHUNIT2"
