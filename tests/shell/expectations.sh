# expectations.sh: the expectations file shared by processes (no cluster).
# run-all: no cluster
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
  assertEquals "left as it was" 1048576 "$(stat -c %s "$F")"
  rm -f "$F" "$F-lock"
  x expect-creations ns/a 1 || fail "create"
  x expect-deletions ns/b p1 p2 || fail "expect-deletions"
  # LMDB keeps the file as long as its map: only a cut into the pages in
  # use can be told
  truncate -s 12288 "$F"
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

# The smallest map (64 KiB) filled with keys until a write fails: exit 111
# and "capacity exhausted", nothing of the failed write, the earlier records
# as they were, the file consistent.
test_full_is_a_clear_error() {
  timeout 30 "$EXP_TOOL" --map-size 65536 "$F" create || fail "create"
  assertEquals "map size" 65536 "$(x stats | jq .map_size)"
  i=0 rc=0
  while [ $i -lt 5000 ]; do
    x expect-creations "ns/k$i" $((i + 1)) 2>"$TMP/err" || { rc=$?; break; }
    i=$((i + 1))
  done
  assertEquals "a write failed: exit 111" 111 $rc
  assertContains "says full" "$(cat "$TMP/err")" "capacity exhausted"
  assertTrue "keys fitted before ($i)" "[ $i -gt 20 ]"
  x get "ns/k$i" >/dev/null
  assertEquals "nothing of the failed write" 1 $?
  assertEquals "keys" "$i" "$(x stats | jq .keys)"
  for j in 0 $((i / 2)) $((i - 1)); do
    assertEquals "ns/k$j unchanged" $((j + 1)) "$(field "ns/k$j" .add)"
  done
  seq 1 3000 | sed 's|^|ns/p|' | x expect-deletions ns/k0 - 2>/dev/null
  assertNotEquals "3000 pods in a full map" 0 $?
  assertEquals "unchanged" 1 "$(field ns/k0 .add)"
  assertEquals "no set" 0 "$(field ns/k0 '.deleting|length')"
  x check || fail "inconsistent when full"
}

# Counts from two processes at once add up exactly: LMDB's write lock
# covers the read-modify-write, and a pod's deletion is counted once however many
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

# Written resource versions recorded by two processes at once, each
# version newer than the one before it: the newest stays, compared as
# numbers ("10" after "9"), per resource.
test_two_processes_keep_newest_written() {
  x create || fail "create"
  ( i=1; while [ $i -le 399 ]; do
      x wrote ns/w u1 pods=$i replicasets.apps=$i || exit 1; i=$((i + 2))
    done ) & p1=$!
  ( i=2; while [ $i -le 400 ]; do
      x wrote ns/w u1 pods=$i || exit 1; i=$((i + 2))
    done ) & p2=$!
  wait $p1 || fail "writer 1"
  wait $p2 || fail "writer 2"
  assertEquals "newest" '{"uid":"u1","written":{"pods":"400","replicasets.apps":"399"}}' \
    "$(x written ns/w | jq -cS .)"
  x wrote ns/w u1 pods=9 || fail "wrote"
  assertEquals "an older one changes nothing" 400 "$(x written ns/w | jq -r .written.pods)"
  x clear-written ns/w u2 || fail "clear-written"
  assertEquals "another uid clears nothing" 400 "$(x written ns/w | jq -r .written.pods)"
  x clear-written ns/w u1 || fail "clear-written"
  x written ns/w >/dev/null
  assertEquals "cleared" 1 $?
  x check || fail "inconsistent"
}

# hammer's record of KEY between rounds: add 0, del 0, no set; or none
# (every eighth round deletes it).
between_rounds() {
  if x get "$1" >"$TMP/rec"; then
    [ "$(jq -c '[.add, .del, .deleting]' "$TMP/rec")" = '[0,0,[]]' ]
  else
    [ ! -s "$TMP/rec" ]
  fi
}

# One process killed with SIGKILL at random points, 200 times, while
# another keeps hammering: the survivor never stalls (a write lock held by
# a dead process is taken over: LMDB's robust mutex) and any failure of
# its checks ends it non-zero; the file is consistent after every kill,
# and a new writer gets through at once. A write takes about a microsecond,
# so every other victim sleeps after each write (--write-delay): those are
# likely to die inside a write transaction, and --mark says whether they
# did (one byte, 1 from the first write of an operation until it
# returned). Nothing of a killed transaction is left: hammer, which checks
# every step, goes on with the victim's key afterwards.
test_sigkill_mid_update() {
  x create || fail "create"
  mark=$TMP/mark
  timeout 300 "$EXP_TOOL" --seconds 240 "$F" hammer ns/survivor 0 16 \
    >"$TMP/survivor" 2>"$TMP/survivor.err" &
  survivor=$!
  i=0 inside=0
  while [ $i -lt 200 ]; do
    delay=0; [ $((i % 2)) -eq 1 ] && delay=20
    printf 0 >"$mark"
    "$EXP_TOOL" --mark "$mark" --write-delay $delay --seconds 20 "$F" \
      hammer ns/victim 0 16 >/dev/null 2>&1 &
    victim=$!
    sleep "0.0$(printf %02d $((RANDOM % 40)))"
    kill -9 $victim 2>/dev/null
    wait $victim 2>/dev/null
    [ "$(head -c 1 "$mark")" = 1 ] && inside=$((inside + 1))
    if ! x check 2>"$TMP/check.err"; then
      fail "inconsistent after kill $i: $(cat "$TMP/check.err")"
      break
    fi
    if ! x expect-creations ns/probe $i 2>"$TMP/probe.err"; then
      fail "no write after kill $i: $(cat "$TMP/probe.err")"
      break
    fi
    kill -0 $survivor 2>/dev/null || { fail "survivor died at kill $i"; break; }
    i=$((i + 1))
  done
  kill -TERM $survivor
  wait $survivor
  rc=$?
  assertEquals "survivor ended cleanly: $(grep -v warning "$TMP/survivor.err" | tail -3)" 0 "$rc"
  rounds=$(sed -n 's/^hammer ns\/survivor: \([0-9]*\) rounds$/\1/p' "$TMP/survivor")
  assertTrue "survivor made progress ($rounds rounds)" "[ ${rounds:-0} -gt 1000 ]"
  echo "sigkill: $i kills, $inside inside a write transaction," \
    "survivor $rounds rounds"
  assertTrue "kills landed inside write transactions ($inside)" "[ $inside -gt 20 ]"
  assertTrue "survivor's record as a round leaves it" "between_rounds ns/survivor"
  # The victim's key is usable again at once, and left as a round leaves
  # it (round 9 of 10 keeps the record).
  x hammer ns/victim 10 16 >/dev/null || fail "victim's key unusable"
  assertEquals "victim's record" '[0,0,[]]' \
    "$(x get ns/victim | jq -c '[.add, .del, .deleting]')"
  x check || fail "inconsistent at the end"
}

. "$SHUNIT2"
