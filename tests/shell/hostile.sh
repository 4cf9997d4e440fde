#!/bin/bash
# run-all: no cluster
# Hostile input to every reader: malformed, truncated, oversized (1 GiB,
# streamed, never stored), deeply nested and invalid UTF-8 lines into
# rs-sync and rs-apply; garbage, a 10 MB line, half-closed, flooding and
# idle connections to rs-queue; slowloris clients, oversized heads,
# garbage and more connections than allowed to rs-metrics; a corrupted
# expectations file; a ReplicaSet with an invalid selector; objects with
# thousands of labels.
# Each must give a clear message on stderr, never crash (no signal, no
# sanitizer report), and go on: every test feeds a good input after the bad
# one and checks that it is still handled right. No cluster needed.
#   RS_BIN=$PWD/build-asan/bin bash tests/shell/hostile.sh   (sanitizers)
. "$(dirname "$0")/lib.sh"

EXP_TOOL=${EXP_TOOL:-$RS_BIN/../test/exp-tool}
[ -x "$EXP_TOOL" ] || EXP_TOOL=$top/build/test/exp-tool
GIB=$((1 << 30))
NOW=2026-01-01T00:10:00Z
# Peak memory allowed to a stage that skipped a 1 GiB line (its line limit
# is 16 MiB): far below the line, whatever the build.
case $RS_BIN in *asan*) RSS_MAX_KB=400000 ;; *) RSS_MAX_KB=120000 ;; esac

# peak_kb PID: the process's peak resident memory so far, in kB.
peak_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# good events: ReplicaSet ns/web wants 3, one pod exists: create 2
good_events() {
  cat <<'EOF'
{"type":"ADDED","resource":"replicasets","object":{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web","namespace":"ns","uid":"uid-rs-web","resourceVersion":"100","generation":1,"creationTimestamp":"2025-12-31T23:50:00Z"},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}},"status":{"replicas":0}}}
{"type":"ADDED","resource":"pods","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-a","namespace":"ns","uid":"uid-web-a","resourceVersion":"200","creationTimestamp":"2025-12-31T23:50:00Z","labels":{"app":"web"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"uid-rs-web","controller":true,"blockOwnerDeletion":true}]},"spec":{"containers":[{"name":"c","image":"nginx"}],"nodeName":"node-1"},"status":{"phase":"Running"}}}
{"type":"SYNCED","resource":"pods"}
{"type":"SYNCED","resource":"replicasets"}
EOF
}

# once_ok FILE: FILE holds rs-sync --once ns/web's intents for good_events.
once_ok() {
  jq -se 'map(.op) == ["create", "status", "end"] and .[0].count == 2 and
      .[0].key == "ns/web" and .[1].object.status.replicas == 1' "$1" >/dev/null 2>&1
}

# sync_once [ARGS...] < input: rs-sync --once ns/web, intents in
# $TMP/out, stderr in $TMP/err, exit status in $TMP/rc.
sync_once() {
  rs-sync --once ns/web --now "$NOW" -v 1 "$@" >"$TMP/out" 2>"$TMP/err"
  echo $? >"$TMP/rc"
}

# not_crashed WHAT: the stage exited by itself (no signal, no sanitizer
# report in its stderr).
not_crashed() {
  _rc=$(cat "$TMP/rc")
  assertTrue "$1: killed by a signal (exit $_rc)" "[ $_rc -lt 128 ]"
  if grep -qE 'ERROR: (Address|Leak|Memory)Sanitizer|runtime error:|SUMMARY: ' "$TMP/err"; then
    fail "$1: sanitizer report: $(grep -m3 -E 'ERROR|runtime error|SUMMARY' "$TMP/err")"
  fi
}

# goes_on WHAT: exit 0 and the intents of the good events.
sync_goes_on() {
  not_crashed "$1"
  assertEquals "$1: exit status" 0 "$(cat "$TMP/rc")"
  once_ok "$TMP/out" || fail "$1: wrong intents after the bad input: $(head -c 400 "$TMP/out")"
}

# skipped N: rs-sync -v 1 reported N events skipped.
skipped() { grep -q "($1 skipped)" "$TMP/err"; }

# --- rs-sync ---------------------------------------------------------------

test_sync_malformed_and_truncated() {
  { printf 'not json at all\n{"type":"ADDED","resource":"pods","object":{"metadata":\n'
    printf '{"type":"ADDED"}\n[1,2\n\n"just a string"\n{"type":"MODIFIED","resource":"replicasets","object":[]}\n'
    good_events
    printf '{"type":"ADDED","resource":"pods","object":{"metadata":{"name":"web-tr'; } |
    sync_once
  sync_goes_on "malformed lines"
  assertTrue "malformed JSON reported" "grep -q 'malformed JSON at byte' '$TMP/err'"
  assertTrue "six bad events skipped, and the truncated last one" "skipped 7"
}

# waits_for_input PID: the process sleeps in a pipe's read, which only
# rs-sync's main loop does (its loader reads no pipe).
waits_for_input() { case $(cat "/proc/$1/wchan" 2>/dev/null) in *pipe_read*) ;; *) return 1 ;; esac; }

# RS_SCHED_BATCH (libcommon/schedclass.c): 0 leaves the stage in the class
# it was started in; a value other than 0 or 1 is reported and taken as 1;
# a stage started in another class than SCHED_OTHER (here SCHED_IDLE) keeps
# it. rs-sync reads the good events from a FIFO kept open, so that it waits
# for more, past its start, when its class is read; chrt starts it.
test_sync_sched_batch_setting() {
  local v cls want pid
  for case in "0 -o SCHED_OTHER" "yes -o SCHED_BATCH" "1 -i SCHED_IDLE"; do
    set -- $case; v=$1 cls=$2 want=$3
    mkfifo "$TMP/in.$v"
    chrt "$cls" 0 env RS_SCHED_BATCH=$v rs-sync --once ns/web --now "$NOW" -v 1 \
      <"$TMP/in.$v" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    exec 7>"$TMP/in.$v"
    good_events >&7
    assertTrue "RS_SCHED_BATCH=$v: the events read" "wait_for 5 waits_for_input $pid"
    assertEquals "RS_SCHED_BATCH=$v, started with chrt $cls" "$want" "$(policy "$pid")"
    [ "$v" = yes ] &&
      assertTrue "RS_SCHED_BATCH=$v reported" "grep -q 'RS_SCHED_BATCH=yes is neither 0 nor 1' '$TMP/err'"
    exec 7>&-
    wait "$pid"; echo $? >"$TMP/rc"
    sync_goes_on "RS_SCHED_BATCH=$v"
  done
}

test_sync_oversized_gib_line() {
  # a 1 GiB line (zero bytes) with its newline, then the good events; the
  # stream stays open until the memory figure is read
  rm -f "$TMP/fifo" "$TMP/mark"; mkfifo "$TMP/fifo"
  rs-sync --once ns/web --now "$NOW" -v 1 <"$TMP/fifo" >"$TMP/out" 2>"$TMP/err" &
  pid=$!
  { head -c $GIB /dev/zero; printf '\n'; good_events; touch "$TMP/mark"; sleep 2; } >"$TMP/fifo" &
  wait_for 60 test -e "$TMP/mark"
  hwm=$(peak_kb $pid)
  wait $pid; echo $? >"$TMP/rc"
  sync_goes_on "1 GiB line"
  assertTrue "the long line reported" "grep -q 'longer than 16777216 bytes' '$TMP/err'"
  assertTrue "peak memory ${hwm:-?} kB after a 1 GiB line, at most $RSS_MAX_KB" "[ ${hwm:-999999999} -le $RSS_MAX_KB ]"

  # 1 GiB without a newline, at the end of the stream, after good events
  { good_events; head -c $GIB /dev/zero; } | sync_once
  sync_goes_on "1 GiB unterminated last line"
  assertTrue "the long line reported" "grep -q 'longer than' '$TMP/err'"
}

# many_pods N: N pod events of ns, labels app=web.
many_pods() {
  awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "{\"type\":\"ADDED\",\"resource\":\"pods\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%d\",\"namespace\":\"ns\",\"uid\":\"u-%d\",\"resourceVersion\":\"%d\",\"labels\":{\"app\":\"web\",\"n\":\"x%d\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]},\"status\":{\"phase\":\"Running\"}}}\n", i, i, i + 300, i }'
}

# A cache that cannot take an object would decide without it (a pod not
# seen is a pod created again): out of memory, rs-sync says so and exits
# 111, for its supervisor to start it again, and it never crashes.
test_sync_out_of_memory_exits_clearly() {
  case $RS_BIN in *asan*) skip_test "a sanitizer build reserves more address space than any limit"; return ;; esac
  command -v prlimit >/dev/null || { skip_test "no prlimit (util-linux)"; return; }
  # the limit: what an idle rs-sync maps (the expectations map included),
  # plus 32 MiB; 200,000 cached pods need twice that
  sleep 3 | rs-sync --once ns/web --now "$NOW" >/dev/null 2>&1 &
  pid=$!
  wait_for 5 grep -q '/expectations$' "/proc/$pid/maps"
  vm=$(awk '/^VmSize:/ { print $2 }' "/proc/$pid/status")
  wait
  assertTrue "an idle rs-sync's address space (${vm:-?} kB)" "[ -n '$vm' ]"
  { good_events; many_pods 200000; } |
    prlimit --as=$(( (vm + 32768) * 1024 )) rs-sync --once ns/web --now "$NOW" -v 1 >"$TMP/out" 2>"$TMP/err"
  echo $? >"$TMP/rc"
  not_crashed "out of memory"
  assertEquals "exit status" 111 "$(cat "$TMP/rc")"
  assertTrue "says why: $(tail -c 300 "$TMP/err")" \
    "grep -qE '^rs-sync: fatal: unable to keep event [0-9]+ in the cache: out of memory$' '$TMP/err'"
  assertFalse "no decision made" "[ -s '$TMP/out' ]"
  assertEquals "no other warning or error" "" "$(grep -vE '^I[0-9]|: fatal: ' "$TMP/err")"
}

test_sync_deep_nesting() {
  { head -c 100000 /dev/zero | tr '\0' '['; printf '\n'
    for _ in $(seq 1 2000); do printf '{"a":'; done; printf '\n'
    printf '{"type":"ADDED","resource":"pods","object":{"metadata":{"labels":'
    head -c 100000 /dev/zero | tr '\0' '['; printf '\n'
    good_events; } | sync_once
  sync_goes_on "100,000 ["
  assertTrue "three nested lines skipped" "skipped 3"
}

test_sync_invalid_utf8() {
  { # raw bytes, an orphan pod whose name and label are not UTF-8 (it
    # would be adopted by ns/web if read), a lone surrogate, overlong NUL
    printf '\377\376\375\n'
    printf '{"type":"ADDED","resource":"pods","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-\377\376","namespace":"ns","uid":"u-\303","resourceVersion":"7","labels":{"app":"web"}},"spec":{},"status":{"phase":"Running"}}}\n'
    printf '{"type":"ADDED","resource":"pods","object":{"metadata":{"name":"x\\ud800","namespace":"ns","labels":{"app":"w\300\200"}}}}\n'
    good_events; } | sync_once
  not_crashed "invalid UTF-8"
  once_ok "$TMP/out" || fail "invalid UTF-8: a pod that is not valid UTF-8 was used: $(head -c 300 "$TMP/out")"
  assertTrue "the three lines reported and skipped" "skipped 3"
}

test_sync_out_of_range_numbers() {
  # numbers no int64 holds (1e400 parses as infinity): converting them was
  # undefined behaviour (clang UBSan in the events fuzz target; GCC's
  # -fsanitize=undefined has no float-cast-overflow)
  { printf '%s\n' '{"type":"ADDED","resource":"replicasets","object":{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"big","namespace":"ns","uid":"uid-big","resourceVersion":"9","generation":1e400},"spec":{"replicas":-1e400,"minReadySeconds":1e19,"selector":{"matchLabels":{"app":"big"}},"template":{"metadata":{"labels":{"app":"big"}}}}}}'
    printf '%s\n' '{"type":"ADDED","resource":"pods","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big-a","namespace":"ns","uid":"uid-big-a","resourceVersion":"10","labels":{"app":"big"}},"spec":{},"status":{"phase":"Running","containerStatuses":[{"name":"c","restartCount":1e400}],"initContainerStatuses":[{"name":"i","restartCount":-1e999,"restartPolicy":"Always"}]}}}'
    good_events; } >"$TMP/big.ndjson"
  sync_once <"$TMP/big.ndjson"
  sync_goes_on "out-of-range numbers"
  rs-sync --once ns/big --now "$NOW" <"$TMP/big.ndjson" >"$TMP/out" 2>"$TMP/err"
  echo $? >"$TMP/rc"
  not_crashed "sync of a ReplicaSet with out-of-range numbers"
}

test_sync_invalid_selector() {
  { printf '%s\n' '{"type":"ADDED","resource":"replicasets","object":{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"bad","namespace":"ns","uid":"uid-bad","resourceVersion":"7","generation":1},"spec":{"replicas":2,"selector":{"matchExpressions":[{"key":"app","operator":"Bogus","values":["web"]}]},"template":{"metadata":{"labels":{"app":"web"}},"spec":{}}}}}'
    printf '%s\n' '{"type":"ADDED","resource":"replicasets","object":{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"bad2","namespace":"ns","uid":"uid-bad2","resourceVersion":"8","generation":1},"spec":{"replicas":2,"selector":{"matchLabels":{"-not a key-":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{}}}}}'
    good_events; } >"$TMP/badsel.ndjson"
  sync_once <"$TMP/badsel.ndjson"
  sync_goes_on "invalid selectors"
  assertTrue "the operator named" "grep -q 'ns/bad has an invalid selector:.*Bogus' '$TMP/err'"
  assertTrue "the key named" "grep -q 'ns/bad2 has an invalid selector' '$TMP/err'"
  rs-sync --once ns/bad --now "$NOW" <"$TMP/badsel.ndjson" >"$TMP/out" 2>"$TMP/err"
  echo $? >"$TMP/rc"
  not_crashed "sync of a key with a bad selector"
  assertTrue "no pod created or adopted for a bad selector" \
    "jq -se 'map(.op) | (index(\"create\") == null and index(\"adopt\") == null and .[-1] == \"end\")' '$TMP/out'"
}

test_sync_thousands_of_labels() {
  # a ReplicaSet selecting on 3,000 labels, 200 orphans carrying them all
  jq -cn '([range(0;3000) | {key: "example.com/k\(.)", value: "v\(.)"}] | from_entries) as $l |
    {type: "ADDED", resource: "replicasets", object: {apiVersion: "apps/v1", kind: "ReplicaSet",
      metadata: {name: "many", namespace: "ns", uid: "uid-many", resourceVersion: "5", generation: 1},
      spec: {replicas: 200, selector: {matchLabels: $l},
        template: {metadata: {labels: $l}, spec: {containers: [{name: "c", image: "x"}]}}}}},
    (range(0;200) as $i | {type: "ADDED", resource: "pods", object: {apiVersion: "v1", kind: "Pod",
      metadata: {name: "orphan-\($i)", namespace: "ns", uid: "uid-o\($i)", resourceVersion: "\(10 + $i)",
        labels: $l}, spec: {}, status: {phase: "Running"}}})' >"$TMP/many.ndjson"
  good_events >>"$TMP/many.ndjson"
  t0=$(date +%s)
  rs-sync --once ns/many --now "$NOW" <"$TMP/many.ndjson" >"$TMP/out" 2>"$TMP/err"
  echo $? >"$TMP/rc"
  t=$(( $(date +%s) - t0 ))
  not_crashed "thousands of labels"
  assertEquals "all 200 orphans adopted" 200 "$(jq -s 'map(select(.op == "adopt")) | length' "$TMP/out")"
  assertTrue "in ${t} s" "[ $t -le 30 ]"
  sync_once <"$TMP/many.ndjson"
  sync_goes_on "thousands of labels, the other key"
}

# In its long-running mode, rs-sync takes keys from rs-queue: bad input in
# the middle of the stream, then the good events, and the key is still
# synced.
test_sync_loop_goes_on() {
  sock=$RS_STATE_DIR/hq.sock
  rs-queue serve --socket "$sock" 2>"$TMP/hq.log" &
  qpid=$!
  wait_for 10 test -S "$sock"
  { printf 'garbage\n\377\376\n'; head -c $((20 << 20)) /dev/zero; printf '\n'
    head -c 100000 /dev/zero | tr '\0' '['; printf '\n'
    good_events; sleep 3; } |
    rs-sync -v 1 --queue "$sock" --expectations "$RS_STATE_DIR/hq.exp" >"$TMP/out" 2>"$TMP/err"
  echo $? >"$TMP/rc"
  kill $qpid; wait $qpid 2>/dev/null
  not_crashed "rs-sync loop"
  assertEquals "rs-sync loop: exit status" 0 "$(cat "$TMP/rc")"
  assertTrue "the key synced after the bad input" \
    "jq -se 'map(select(.op == \"create\" and .key == \"ns/web\" and .count == 2)) | length == 1' '$TMP/out'"
}

# --- the expectations file, corrupted --------------------------------------

# a file with records for ns/web, then damaged: body, the bytes of the
# records (their magic is "RSEX", stored little-endian); header, LMDB's first
# meta page; truncated, cut short of the pages in use
damaged_file() {
  rm -f "$1" "$1-lock"
  "$EXP_TOOL" "$1" create >/dev/null 2>&1
  "$EXP_TOOL" "$1" expect-creations ns/web 2 >/dev/null 2>&1
  "$EXP_TOOL" "$1" expect-deletions ns/other ns/p1 ns/p2 >/dev/null 2>&1
  case $2 in
  body)  # every copy: pages a transaction replaced keep old ones
    for off in $(grep -obUa XESR "$1" | cut -d: -f1); do
      dd if=/dev/urandom of="$1" bs=1 seek=$((off + 8)) count=24 conv=notrunc 2>/dev/null
    done ;;
  header) dd if=/dev/urandom of="$1" bs=1 seek=8 count=4000 conv=notrunc 2>/dev/null ;;
  truncated) truncate -s 12288 "$1" ;;
  esac
}

test_expectations_damaged_body_sync() {
  f=$RS_STATE_DIR/exp-body
  damaged_file "$f" body
  good_events | sync_once --expectations "$f"
  not_crashed "damaged body, rs-sync --once"
  assertEquals "exit status" 0 "$(cat "$TMP/rc")"
  assertTrue "says the file is damaged, and how to repair" \
    "grep -q 'is damaged: .*(rs_exp_reset or remove it)' '$TMP/err'"
  assertTrue "still ends the key" "jq -se '.[-1].op == \"end\"' '$TMP/out'"
  # a starting rs-sync drops every record: it repairs the file and goes on
  sock=$RS_STATE_DIR/hq2.sock
  rs-queue serve --socket "$sock" 2>"$TMP/hq.log" &
  qpid=$!
  wait_for 10 test -S "$sock"
  { good_events; sleep 3; } | rs-sync -v 1 --queue "$sock" --expectations "$f" >"$TMP/out" 2>"$TMP/err"
  echo $? >"$TMP/rc"
  not_crashed "damaged body, rs-sync starting"
  assertTrue "synced on a repaired file" "once_ok '$TMP/out'"
  assertTrue "the file is consistent again" "'$EXP_TOOL' '$f' check"
  # --keep-expectations keeps the damage: said, and no crash
  damaged_file "$f" body
  { good_events; sleep 2; } | rs-sync -v 1 --keep-expectations --queue "$sock" --expectations "$f" >"$TMP/out" 2>"$TMP/err"
  echo $? >"$TMP/rc"
  kill $qpid; wait $qpid 2>/dev/null
  not_crashed "damaged body, rs-sync --keep-expectations"
  assertTrue "says so" "grep -q 'is damaged' '$TMP/err'"
}

test_expectations_damaged_header_sync() {
  for how in header truncated; do
    f=$RS_STATE_DIR/exp-$how
    damaged_file "$f" $how
    good_events | sync_once --expectations "$f"
    not_crashed "damaged $how, rs-sync"
    assertTrue "damaged $how: refused with a clear message" \
      "grep -qE 'unable to use .*(not an expectations file|checksum|size does not match|unsupported|byte order)' '$TMP/err'"
    assertTrue "damaged $how: a fatal error, not a success" "[ $(cat "$TMP/rc") -ne 0 ]"
  done
}

# rs-apply lowers expectations when writes fail: an API server that cannot
# be reached (a closed port) makes every create fail.
closed_kubeconfig() {
  cat >"$TMP/closed.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: not-a-real-token}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
EOF
}

test_expectations_damaged_apply() {
  closed_kubeconfig
  good_events | rs-sync --once ns/web --now "$NOW" >"$TMP/intents" 2>/dev/null
  for how in body header; do
    f=$RS_STATE_DIR/exp-apply-$how
    damaged_file "$f" $how
    rs-apply -v 2 --kubeconfig "$TMP/closed.kubeconfig" --no-queue --expectations "$f" \
      <"$TMP/intents" >"$TMP/out" 2>"$TMP/err"
    echo $? >"$TMP/rc"
    not_crashed "damaged $how, rs-apply"
    assertEquals "damaged $how, rs-apply: exit status" 0 "$(cat "$TMP/rc")"
    assertTrue "damaged $how: says so" \
      "grep -qE 'is damaged|unable to use .*(not an expectations file|checksum|byte order|unsupported)' '$TMP/err'"
    assertTrue "damaged $how: the key still finished" "grep -q 'ns/web: sync failed, retry' '$TMP/err'"
  done
}

# --- rs-apply ----------------------------------------------------------------

# apply_ok: rs-apply --dry-run printed the good intents' requests.
apply_ok() {
  jq -se 'map(select(.method == "POST" and .path == "/api/v1/namespaces/ns/pods?fieldManager=rs-apply")) | length == 2' \
    "$TMP/out" >/dev/null 2>&1 &&
  jq -se 'map(select(.method == "PUT" and (.path | endswith("/replicasets/web/status")))) | length == 1' \
    "$TMP/out" >/dev/null 2>&1
}

apply_dry() {
  rs-apply --dry-run -v 1 >"$TMP/out" 2>"$TMP/err"
  echo $? >"$TMP/rc"
}

apply_goes_on() {
  not_crashed "$1"
  assertEquals "$1: exit status" 0 "$(cat "$TMP/rc")"
  apply_ok || fail "$1: the good intents were not carried out: $(head -c 400 "$TMP/out")"
}

good_intents() { good_events | rs-sync --once ns/web --now "$NOW" 2>/dev/null; }

test_apply_malformed_truncated_nested_utf8() {
  good_intents >"$TMP/good-intents"
  [ -s "$TMP/good-intents" ] || { fail "no good intents"; return; }
  { printf 'not json\n{"op":"create","key":"ns/x","count":\n[]\n{"op":"bogus","key":"ns/web"}\n'
    printf '{"op":"create","key":"ns/../../etc","count":1,"template":{}}\n'
    printf '{"op":"delete","key":"ns/web","owner":{"apiVersion":"apps/v1","kind":"ReplicaSet","namespace":"ns","name":"web","uid":"u"},"pods":[{"name":"../../x","uid":"u"}]}\n'
    printf '{"op":"adopt","key":"ns/w\377","pod":{"name":"p","uid":"u"}}\n'
    printf '{"op":"adopt","key":"ns/web","owner":{"apiVersion":"apps/v1","kind":"ReplicaSet","namespace":"ns","name":"web","uid":"u"},"pod":{"name":"p\303(","uid":"u"}}\n'
    head -c 100000 /dev/zero | tr '\0' '['; printf '\n'
    for _ in $(seq 1 3000); do printf '{"a":'; done; printf '\n'
    cat "$TMP/good-intents"
    printf '{"op":"end","key":"ns/tr'; } | apply_dry
  apply_goes_on "malformed intents"
  assertTrue "malformed JSON reported" "grep -q 'malformed JSON near byte' '$TMP/err'"
  assertTrue "a path-escaping name refused" "grep -qE 'not a valid name|namespace/name|character outside' '$TMP/err'"
  assertEquals "nothing else written" 3 "$(grep -c '"method"' "$TMP/out")"
}

test_apply_oversized_gib_line() {
  good_intents >"$TMP/good-intents"
  rm -f "$TMP/fifo" "$TMP/mark"; mkfifo "$TMP/fifo"
  rs-apply --dry-run -v 1 <"$TMP/fifo" >"$TMP/out" 2>"$TMP/err" &
  pid=$!
  { head -c $GIB /dev/zero; printf '\n'; cat "$TMP/good-intents"; touch "$TMP/mark"; sleep 2; } >"$TMP/fifo" &
  wait_for 60 test -e "$TMP/mark"
  hwm=$(peak_kb $pid)
  wait $pid; echo $? >"$TMP/rc"
  apply_goes_on "1 GiB intent line"
  assertTrue "the long line reported" "grep -q 'longer than 16777216 bytes' '$TMP/err'"
  assertTrue "peak memory ${hwm:-?} kB, at most $RSS_MAX_KB" "[ ${hwm:-999999999} -le $RSS_MAX_KB ]"
  { cat "$TMP/good-intents"; head -c $GIB /dev/zero; } | apply_dry
  apply_goes_on "1 GiB unterminated last intent line"
}

test_apply_thousands_of_labels() {
  good_intents >"$TMP/good-intents"
  jq -c 'if .op == "create" then .template.metadata.labels +=
      ([range(0;5000) | {key: "example.com/k\(.)", value: "v\(.)"}] | from_entries) else . end' \
    "$TMP/good-intents" | apply_dry
  apply_goes_on "5,000 labels in a template"
  assertEquals "every label sent" 5001 \
    "$(jq -s 'map(select(.method == "POST")) | .[0].body.metadata.labels | length' "$TMP/out")"
}

# --- the kubeconfig reader -----------------------------------------------------

test_kubeconfig_hostile() {
  # 64 KB of YAML whose aliases expand to gigabytes
  x=$(head -c 65536 /dev/zero | tr '\0' x)
  { echo "a: &a \"$x\""
    echo "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]"
    echo "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]"
    echo "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]"
    echo "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]"
    echo "f: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]"; } >"$TMP/bomb.kubeconfig"
  # nesting, invalid UTF-8, binary
  { for _ in $(seq 1 100000); do printf '['; done; echo; } >"$TMP/deep.kubeconfig"
  printf 'apiVersion: v1\nclusters:\n- name: "c\377"\n' >"$TMP/utf8.kubeconfig"
  head -c 100000 /dev/urandom >"$TMP/random.kubeconfig"
  for k in bomb deep utf8 random; do
    t0=$(date +%s)
    timeout 60 rs-watch --kubeconfig "$TMP/$k.kubeconfig" pods >/dev/null 2>"$TMP/err"
    echo $? >"$TMP/rc"
    not_crashed "kubeconfig $k"
    assertEquals "kubeconfig $k: refused as wrong usage" 100 "$(cat "$TMP/rc")"
    assertTrue "kubeconfig $k: names the file" "grep -q 'kubeconfig .*$k.kubeconfig' '$TMP/err'"
    assertTrue "kubeconfig $k: in $(( $(date +%s) - t0 )) s" "[ $(( $(date +%s) - t0 )) -le 10 ]"
  done
  timeout 60 rs-watch --kubeconfig "$TMP/bomb.kubeconfig" pods >/dev/null 2>"$TMP/err"
  assertTrue "the alias expansion cut off" "grep -q 'alias expansion' '$TMP/err'"
  timeout 60 rs-watch --kubeconfig "$TMP/deep.kubeconfig" pods >/dev/null 2>"$TMP/err"
  assertTrue "the nesting refused" "grep -q 'nested more than' '$TMP/err'"
}

# --- rs-queue ----------------------------------------------------------------

qstart() {
  QSOCK=$RS_STATE_DIR/q.sock
  rs-queue serve --socket "$QSOCK" 2>"$TMP/q.log" &
  QPID=$!
  wait_for 10 test -S "$QSOCK"
}

# qstop: TERM (a drain), a second TERM after 3 s if keys are still out.
qstop() {
  kill "$QPID" 2>/dev/null
  wait_for 3 sh -c "! kill -0 $QPID" || kill "$QPID" 2>/dev/null
  wait "$QPID" 2>/dev/null
  echo $? >"$TMP/rc"
  cp "$TMP/q.log" "$TMP/err"
}

# serves: rs-queue still answers a client: ADD, LEN, and on an empty queue
# GET and DONE of the key added.
serves() {
  _k=ns/probe-$RANDOM
  _n=$(timeout 5 rs-queue --queue "$QSOCK" len 2>/dev/null) || return 1
  timeout 5 rs-queue --queue "$QSOCK" add "$_k" >/dev/null 2>&1 || return 1
  [ "$(timeout 5 rs-queue --queue "$QSOCK" len 2>/dev/null)" = $((_n + 1)) ] || return 1
  [ "$_n" = 0 ] || return 0
  [ "$(timeout 5 rs-queue --queue "$QSOCK" get 2>/dev/null)" = "$_k" ] &&
  timeout 5 rs-queue --queue "$QSOCK" done "$_k" >/dev/null 2>&1
}

test_queue_garbage_and_huge_line() {
  qstart
  out=$({ printf 'garbage\n\0\1\2\377\376\nADD\nADD ns/a ns/b\nADD ../etc\nAFTER nan ns/a\nAFTER 1e400 ns/a\n'
          head -c $((10 << 20)) /dev/urandom | tr '\n' 'x'; printf '\n'
          head -c $((10 << 20)) /dev/zero; printf '\nLEN\n'; } | timeout 30 rs-queue --queue "$QSOCK" talk)
  assertTrue "the 10 MB lines answered 'line too long'" "[ $(echo "$out" | grep -c '^ERR line too long') -eq 2 ]"
  assertTrue "garbage answered ERR" "[ $(echo "$out" | grep -c '^ERR') -ge 8 ]"
  assertEquals "the last request still answered" "LEN 0" "$(echo "$out" | tail -1)"
  assertTrue "still serves" serves
  qstop
  not_crashed "rs-queue after garbage"
}

test_queue_half_closed_connections() {
  qstart
  rs-queue --queue "$QSOCK" add ns/held >/dev/null
  # takes a key with a plain GET, then shuts its sending side: the key must
  # go back to the queue; a GET waiting on an empty queue, then a shutdown
  perl -MIO::Socket::UNIX -e '
    my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!";
    print $s "GET\n"; my $l = <$s>; print $l;
    $s->shutdown(1); my $rest = join("", <$s>); exit($rest eq "" ? 0 : 1);' "$QSOCK" >"$TMP/got"
  assertEquals "the client got the key" "KEY ns/held" "$(cat "$TMP/got")"
  assertEquals "the key is back" "LEN 1" "LEN $(rs-queue --queue "$QSOCK" len)"
  perl -MIO::Socket::UNIX -e '
    my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die; print $s "GET\nGET\nGET\n";
    $s->shutdown(1); sleep 1;' "$QSOCK"
  # a partial request, never finished, held open (a slow client)
  perl -MIO::Socket::UNIX -e '
    my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die; print $s "ADD ns/sl"; sleep 8;' "$QSOCK" &
  slow=$!
  # 200 idle connections
  perl -MIO::Socket::UNIX -e '
    my @c; for (1..200) { push @c, IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect $_: $!" } sleep 8;' "$QSOCK" &
  idle=$!
  sleep 1
  assertTrue "serves beside a slow client and 200 idle ones" serves
  assertEquals "the keys are there" 2 "$(rs-queue --queue "$QSOCK" len)"
  kill $slow $idle 2>/dev/null; wait $slow $idle 2>/dev/null
  qstop
  not_crashed "rs-queue after half-closed connections"
}

test_queue_flooding_client_never_reads() {
  qstart
  # 100 MB of requests from a client that never reads a reply: the server
  # must push back on it and keep serving the others, in bounded memory
  perl -MIO::Socket::UNIX -e '
    my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die; $s->blocking(0);
    my $b = "LEN\n" x 65536; my $sent = 0; my $t = time;
    while (time - $t < 6 && $sent < 100 << 20) {
      my $n = syswrite($s, $b); if (defined $n) { $sent += $n } else { select(undef, undef, undef, 0.01) } }
    print "$sent\n"; sleep 2;' "$QSOCK" >"$TMP/sent" &
  flood=$!
  sleep 2
  assertTrue "serves while a client floods" serves
  rss=$(peak_kb $QPID)
  wait $flood
  assertTrue "pushed back: $(cat "$TMP/sent") bytes accepted of 100 MB" "[ $(cat "$TMP/sent") -lt $((100 << 20)) ]"
  assertTrue "server memory ${rss} kB stays bounded" "[ $rss -le $RSS_MAX_KB ]"
  assertTrue "serves after the flood" serves
  qstop
  not_crashed "rs-queue after a flood"
}

# --- rs-metrics --------------------------------------------------------------

# mstart [FLAGS...]: rs-metrics on a free port, no stage required and no
# rs-queue (/metrics answers 200 all the same); sets MPORT.
mstart() {
  : >"$TMP/m.log"
  rs-metrics --listen 127.0.0.1:0 --stages "" --queue "$RS_STATE_DIR/none.sock" \
    -v 2 "$@" 2>"$TMP/m.log" &
  MPID=$!
  wait_for 10 grep -q 'listening on' "$TMP/m.log" || return 1
  MPORT=$(sed -n 's|.*listening on http://[0-9.]*:\([0-9]*\)/$|\1|p' "$TMP/m.log" | tail -1)
  [ -n "$MPORT" ]
}

# mstop: TERM; its exit status in $TMP/rc, its stderr in $TMP/err.
mstop() {
  kill "$MPID" 2>/dev/null
  wait_for 10 sh -c "! kill -0 $MPID" || kill -KILL "$MPID" 2>/dev/null
  wait "$MPID" 2>/dev/null
  echo $? >"$TMP/rc"
  cp "$TMP/m.log" "$TMP/err"
}

# mserves [SECONDS]: a scrape answered 200 (within SECONDS, default 10).
mserves() {
  [ "$(curl -s -o /dev/null -m "${1:-10}" -w '%{http_code}' "http://127.0.0.1:$MPORT/metrics")" = 200 ]
}

# mraw [SECONDS]: sends stdin as it is on one connection, prints the first
# line of the answer ("" when closed without one), "timeout" if neither
# came within SECONDS (default 30).
mraw() {
  perl -MIO::Socket::INET -e '
    $SIG{PIPE} = "IGNORE"; $SIG{ALRM} = sub { print "timeout\n"; exit 0 }; alarm $ARGV[1];
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ARGV[0]") or die "connect: $!";
    my $req = do { local $/; <STDIN> };
    for (my $o = 0; $o < length $req; ) { my $n = syswrite($s, $req, 65536, $o); last unless defined $n; $o += $n }
    my $l = <$s> // ""; $l =~ s/\r?\n$//; print "$l\n";' "$MPORT" "${1:-30}"
}

# A request may take --timeout from accept to its last byte, however its
# bytes trickle: clients sending their head a byte a second hold every
# connection slot; each is answered 408 and closed while still sending,
# and the scrape waiting behind them is served. An inactivity timeout
# alone would let them hold the slots for the whole 60 s.
test_metrics_slowloris() {
  mstart --max-connections 4 --timeout 3 || fail "rs-metrics did not start"
  perl -MIO::Socket::INET -MIO::Select -e '
    $SIG{PIPE} = "IGNORE";
    my ($port, $n, $secs) = @ARGV; my (@s, %got, %end); my $sel = IO::Select->new;
    for (1 .. $n) {
      my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") or die "connect: $!";
      syswrite($s, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "); push @s, $s; $sel->add($s);
    }
    my $t = time;
    while ($sel->count && time - $t < $secs) {
      for my $s ($sel->can_read(1)) {
        my $r = sysread($s, my $b, 4096); $got{$s} .= $b if $r;
        if (!$r) { $end{$s} = 1; $sel->remove($s) }
      }
      syswrite($_, "x") for $sel->handles;   # a byte a second to those still open
    }
    for my $s (@s) { my ($l) = split /\r?\n/, $got{$s} // ""; print $end{$s} ? "closed" : "open", " ", $l // "", "\n" }
  ' "$MPORT" 4 60 >"$TMP/slow" &
  slow=$!
  sleep 1
  assertTrue "a scrape behind 4 slow clients is served" "mserves 50"
  wait $slow
  assertEquals "every slow client closed while sending: $(cat "$TMP/slow")" 4 \
    "$(grep -c '^closed HTTP/1.1 408 Request Timeout$' "$TMP/slow")"
  assertTrue "serves after" mserves
  mstop
  not_crashed "rs-metrics after slow clients"
  assertEquals "exit on TERM" 0 "$(cat "$TMP/rc")"
}

# Heads beyond a connection's memory (about 8 KiB) are answered 431 (414
# for a request line) and the rest of them is never stored: 16 KiB, 1 MB,
# 10,000 small headers. The library's default (32 KiB) would take 16 KiB.
test_metrics_oversized_heads() {
  mstart || fail "rs-metrics did not start"
  a16k=$(head -c 16384 /dev/zero | tr '\0' a)
  assertEquals "16 KiB header" "HTTP/1.1 431 Request Header Fields Too Large" \
    "$(printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n' "$a16k" | mraw)"
  big=$( { printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: '; head -c $((1 << 20)) /dev/zero | tr '\0' a
           printf '\r\n\r\n'; } | mraw)
  assertTrue "1 MB header: 431 or closed, not '$big'" \
    "[ '$big' = 'HTTP/1.1 431 Request Header Fields Too Large' ] || [ -z '$big' ]"
  assertTrue "serves after a 1 MB header" mserves
  uri=$( { printf 'GET /'; head -c $((1 << 20)) /dev/zero | tr '\0' a; printf ' HTTP/1.1\r\nHost: x\r\n\r\n'; } | mraw)
  assertTrue "1 MB target: 414 or closed, not '$uri'" \
    "[ '$uri' = 'HTTP/1.1 414 URI Too Long' ] || [ -z '$uri' ]"
  assertEquals "10,000 headers" "HTTP/1.1 431 Request Header Fields Too Large" \
    "$( { printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n'; yes 'X: y' | head -10000 | sed 's/$/\r/'
          printf '\r\n'; } | mraw)"
  assertTrue "serves after" mserves
  mstop
  not_crashed "rs-metrics after oversized heads"
  assertEquals "exit on TERM" 0 "$(cat "$TMP/rc")"
}

# What is not HTTP is answered 4xx or closed, within the bounds (memory
# for what never ends a line, the deadline for what never ends a head).
test_metrics_garbage() {
  mstart --timeout 3 || fail "rs-metrics did not start"
  for g in 'random:head -c 65536 /dev/urandom' 'random-no-newline:head -c 65536 /dev/urandom | tr -d "\n"' \
      'binary-line:printf "\0\1\2\377\r\n\r\n"' 'one-word:printf "HELLO\r\n\r\n"' \
      'no-target:printf "GET\r\n\r\n"' 'http-0.9:printf "GET /metrics\r\n\r\n"' \
      'tls-hello:printf "\26\3\1\0\245\1\0\0\241\3\3"; head -c 160 /dev/urandom'; do
    got=$(sh -c "${g#*:}" | mraw 30)
    case $got in
      ''|'HTTP/1.1 4'[0-9][0-9]' '*) ;;
      *) fail "${g%%:*}: answered '$got'" ;;
    esac
  done
  assertTrue "serves after garbage" mserves
  mstop
  not_crashed "rs-metrics after garbage"
  assertEquals "exit on TERM" 0 "$(cat "$TMP/rc")"
}

# --max-connections at once: the one over waits in the listen backlog (no
# answer while the others hold their slots) and is served once they go;
# TERM ends rs-metrics with connections open.
test_metrics_connection_limit() {
  mstart --max-connections 4 --timeout 60 || fail "rs-metrics did not start"
  perl -MIO::Socket::INET -e '
    my @c = map { IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ARGV[0]") or die "connect: $!" } 1 .. 4;
    syswrite($_, "GET /metrics HTTP/1.1\r\n") for @c; sleep 60;' "$MPORT" &
  held=$!
  sleep 1
  assertFalse "no answer over the limit" "mserves 3"
  curl -s -o "$TMP/late" -m 50 -w '%{http_code}' "http://127.0.0.1:$MPORT/metrics" >"$TMP/late.code" &
  late=$!
  sleep 1
  kill $held; wait $held 2>/dev/null
  wait $late
  assertEquals "the one that waited is served once the others go" 200 "$(cat "$TMP/late.code")"
  assertTrue "serves" mserves
  perl -MIO::Socket::INET -e '
    my @c = map { IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ARGV[0]") or die "connect: $!" } 1 .. 6;
    sleep 60;' "$MPORT" &
  held=$!
  sleep 1
  mstop
  kill $held; wait $held 2>/dev/null
  not_crashed "rs-metrics with connections held"
  assertEquals "exit on TERM with connections held" 0 "$(cat "$TMP/rc")"
}

. "$SHUNIT2"
