# run-all: no cluster
# queue.sh: rs-queue over its socket. Needs no cluster: a server per test
# on the suite's own state directory, clients as people and scripts use
# them (rs-queue add/get/done/...), raw protocol through `rs-queue talk`.
. "$(dirname "$0")/lib.sh"

SOCK=$RS_STATE_DIR/queue.sock

# start_server [ARGS...]: rs-queue serve, back once it says it listens.
start_server() {
  rm -f "$TMP/ready"
  rs-queue serve --notify-fd 3 "$@" 3>"$TMP/ready" 2>>"$TMP/server.log" &
  SERVER=$!
  wait_for 5 test -s "$TMP/ready" || fail "server not ready"
}

# stop_server: kill it whatever it holds, and forget its socket.
stop_server() {
  if [ -n "${SERVER:-}" ]; then
    kill -9 "$SERVER" 2>/dev/null
    wait "$SERVER" 2>/dev/null
  fi
  SERVER=
  rm -f "$SOCK"
}

# talk_open: a raw protocol client fed from fd 7, replies in $TMP/talk.out.
talk_open() {
  rm -f "$TMP/talk.in"
  mkfifo "$TMP/talk.in"
  rs-queue talk <"$TMP/talk.in" >"$TMP/talk.out" 2>&1 &
  TALK=$!
  exec 7>"$TMP/talk.in"
}

talk_close() {
  exec 7>&-
  wait "$TALK" 2>/dev/null
}

# lines_in FILE N: FILE has at least N lines.
lines_in() { [ "$(wc -l <"$1")" -ge "$2" ]; }
qlen_is() { [ "$(rs-queue len)" = "$1" ]; }
stat_of() { rs-queue stats | jq -r ".$1"; }
stat_is() { [ "$(stat_of "$1")" = "$2" ]; }

setUp() {
  : >"$TMP/server.log"
  start_server
}

tearDown() {
  [ -n "${SYNC:-}" ] && stop_sync
  [ -n "${TALK:-}" ] && kill -9 "$TALK" 2>/dev/null
  TALK=
  exec 7>&- 2>/dev/null
  stop_server
}

test_socket_and_directory_modes() {
  assertEquals "socket mode" 600 "$(stat -c %a "$SOCK")"
  assertTrue "is a socket" "[ -S '$SOCK' ]"
  assertEquals "directory mode" 700 "$(stat -c %a "$RS_STATE_DIR")"
  # a directory that others may enter is refused
  mkdir -p "$TMP/open" && chmod 0755 "$TMP/open"
  rs-queue serve --socket "$TMP/open/q.sock" 2>"$TMP/err"
  assertEquals "open directory refused" 1 $?
  assertContains "$(cat "$TMP/err")" "open to others"
  assertFalse "no socket made" "[ -e '$TMP/open/q.sock' ]"
  # a missing directory is made, closed to others
  start_other() {
    rs-queue serve --queue "$TMP/new/q.sock" --notify-fd 3 3>"$TMP/ready2" 2>>"$TMP/server.log" &
    OTHER=$!
    wait_for 5 test -s "$TMP/ready2"
  }
  start_other || fail "server in a new directory"
  assertEquals "new directory mode" 700 "$(stat -c %a "$TMP/new")"
  assertEquals "its socket mode" 600 "$(stat -c %a "$TMP/new/q.sock")"
  kill "$OTHER"; wait "$OTHER"
  assertEquals "clean exit on SIGTERM" 0 $?
  assertFalse "socket removed at exit" "[ -e '$TMP/new/q.sock' ]"
}

test_live_socket_not_replaced() {
  rs-queue add ns/a || fail "add"
  rs-queue serve 2>"$TMP/err"
  assertEquals "second server exit" 111 $?
  assertContains "$(cat "$TMP/err")" "$SOCK"
  assertEquals "first server still answers" 1 "$(rs-queue len)"
  # even without the lock file to tell, the live socket is probed
  rm -f "$SOCK.lock"
  rs-queue serve 2>"$TMP/err"
  assertEquals "second server exit without lock" 111 $?
  assertContains "$(cat "$TMP/err")" "live server"
  assertEquals "still the first server" 1 "$(rs-queue len)"
}

test_stale_socket_replaced() {
  rs-queue add ns/a || fail "add"
  kill -9 "$SERVER"; wait "$SERVER" 2>/dev/null
  assertTrue "stale socket left" "[ -S '$SOCK' ]"
  rs-queue len 2>"$TMP/err"
  assertEquals "no server: temporary failure" 111 $?
  assertContains "$(cat "$TMP/err")" "unable to connect"
  start_server
  assertEquals "new, empty queue" 0 "$(rs-queue len)"
  assertContains "$(cat "$TMP/server.log")" "stale socket"
  # a path that is not a socket is never removed
  stop_server
  echo data >"$SOCK"
  rs-queue serve 2>"$TMP/err"
  assertEquals "not a socket: refused" 1 $?
  assertEquals "file kept" data "$(cat "$SOCK")"
  rm -f "$SOCK"
  start_server
}

test_fifo_dedup_and_hold() {
  rs-queue add ns/a ns/b ns/c ns/a || fail "add"
  assertEquals "deduplicated" 3 "$(rs-queue len)"
  assertEquals "first in, first out" ns/a "$(rs-queue get)"
  # the key stays out after get exits, until DONE from anyone
  assertEquals "processing" 1 "$(stat_of processing)"
  rs-queue add ns/a
  assertEquals "added while out: not queued" 2 "$(rs-queue len)"
  rs-queue done ns/a || fail "done"
  assertEquals "queued again at DONE" 3 "$(rs-queue len)"
  rs-queue done ns/zz 2>"$TMP/err"
  assertEquals "done of a key not out" 1 $?
  assertContains "$(cat "$TMP/err")" "not processing"
  assertEquals ns/b "$(rs-queue get --hold)"
  assertEquals ns/c "$(rs-queue get)"
  assertEquals ns/a "$(rs-queue get)"
}

test_add_from_pipe() {
  printf 'ns/a\nBAD KEY\n\n  ns/b  \nns/a\nx/%0300d\n' 0 | rs-queue add - 2>"$TMP/err"
  assertEquals "bad keys make exit 1" 1 $?
  assertContains "$(cat "$TMP/err")" "BAD KEY"
  assertEquals "two bad keys reported" 2 "$(grep -c skipping "$TMP/err")"
  assertEquals "good keys added" 2 "$(rs-queue len)"
  seq 1 20000 | sed 's|^|bulk/k-|' | rs-queue add -
  assertEquals "bulk add" 0 $?
  assertEquals "bulk queued" 20002 "$(rs-queue len)"
  assertEquals "order kept" ns/a "$(rs-queue get)"
  assertEquals "order kept" ns/b "$(rs-queue get)"
  assertEquals "order kept" bulk/k-1 "$(rs-queue get)"
}

# Workers take keys concurrently while a producer adds more: every key is
# handed out exactly once.
test_concurrent_clients() {
  seq 1 60 | sed 's|^|c/k|' | rs-queue add - || fail "add"
  for w in 1 2 3 4; do
    (
      for i in $(seq 1 30); do
        k=$(timeout 20 rs-queue get) || exit 1
        echo "$k" >>"$TMP/worker.$w"
        rs-queue done "$k" || exit 1
      done
    ) &
    eval "W$w=\$!"
  done
  seq 61 120 | sed 's|^|c/k|' | rs-queue add - || fail "producer"
  for w in 1 2 3 4; do
    eval "wait \$W$w"
    assertEquals "worker $w" 0 $?
  done
  assertEquals "all handed out" 120 "$(cat "$TMP"/worker.* | wc -l)"
  assertEquals "each once" 120 "$(cat "$TMP"/worker.* | sort -u | wc -l)"
  assertEquals "none left" 0 "$(rs-queue len)"
  assertEquals "none out" 0 "$(stat_of processing)"
  rm -f "$TMP"/worker.*
}

# A client killed while holding keys: they go back on the queue.
test_sigkill_returns_keys() {
  rs-queue add ns/a ns/b ns/c || fail "add"
  talk_open
  printf 'GET\nGET\n' >&7
  wait_for 5 lines_in "$TMP/talk.out" 2 || fail "no keys"
  assertEquals "KEY ns/a
KEY ns/b" "$(cat "$TMP/talk.out")"
  assertEquals "two out" 2 "$(stat_of processing)"
  assertEquals "one left" 1 "$(rs-queue len)"
  kill -9 "$TALK"
  wait "$TALK" 2>/dev/null
  exec 7>&-
  wait_for 5 qlen_is 3 || fail "keys not returned"
  assertEquals "none out" 0 "$(stat_of processing)"
  assertEquals "back after the rest" ns/c "$(rs-queue get)"
  assertEquals "in the order handed out" ns/a "$(rs-queue get)"
  assertEquals ns/b "$(rs-queue get)"
  # a key taken with get (held) is not returned by its client's exit
  assertEquals "held keys stay out" 3 "$(stat_of processing)"
}

test_malformed_requests() {
  printf 'BOGUS\nADD\nADD Bad/Key\nADD ns/a ns/b\nAFTER soon ns/a\n\nADD ns/ok\nLEN\n' |
    timeout 5 rs-queue talk >"$TMP/out"
  assertEquals "talk exit" 0 $?
  assertEquals "ERR unknown request
ERR one key expected
ERR key has a character outside [a-z0-9.-]
ERR one key expected
ERR bad delay
ERR empty request
OK
LEN 1" "$(cat "$TMP/out")"
}

test_oversized_requests() {
  long=$(printf '%05000d' 0)
  edge=$(printf 'LEN%4093s' '')
  over=$(printf 'LEN%4094s' '')
  printf 'ADD ns/%s\n%s\n%s\nADD ns/after\nLEN\n' "$long" "$edge" "$over" |
    timeout 5 rs-queue talk >"$TMP/out"
  assertEquals "ERR line too long
LEN 0
ERR line too long
OK
LEN 1" "$(cat "$TMP/out")"
  # a huge line sent in pieces, then a normal request on the same connection
  { printf 'ADD ns/'; head -c 1000000 /dev/zero | tr '\0' a; sleep 0.2
    head -c 1000000 /dev/zero | tr '\0' a; printf '\nLEN\n'; } |
    timeout 10 rs-queue talk >"$TMP/out"
  assertEquals "ERR line too long
LEN 1" "$(cat "$TMP/out")"
}

test_half_sent_requests() {
  { printf 'LE'; sleep 0.3; printf 'N\nADD ns/h'; sleep 0.3; printf 'alf\nLEN\n'; } |
    timeout 5 rs-queue talk >"$TMP/out"
  assertEquals "LEN 0
OK
LEN 1" "$(cat "$TMP/out")"
  # a last request without its newline still counts
  printf 'ADD ns/x\nLEN' | timeout 5 rs-queue talk >"$TMP/out"
  assertEquals "OK
LEN 2" "$(cat "$TMP/out")"
}

# Replies come in request order: requests behind a waiting GET are done at
# once, their replies wait for the GET's.
test_pipelined_get_ordering() {
  printf 'GET\nLEN\nADD ns/p\nLEN\nGET\nADD ns/q\n' | timeout 5 rs-queue talk >"$TMP/out"
  assertEquals "KEY ns/p
LEN 0
OK
LEN 0
KEY ns/q
OK" "$(cat "$TMP/out")"
  # the keys of a client that closed went back, in the order handed out;
  # a GET still waiting when the client stops sending is dropped with the
  # replies behind it
  printf 'GET\nGET\nGET\nLEN\n' | timeout 5 rs-queue talk >"$TMP/out"
  assertEquals "KEY ns/p
KEY ns/q" "$(cat "$TMP/out")"
  wait_for 5 qlen_is 2 || fail "keys of a closed client not back"
  assertEquals "no GET left waiting" 0 "$(stat_of getters)"
}

test_retry_and_after() {
  stop_server
  start_server --base-delay 1s
  rs-queue retry ns/r || fail "retry"
  rs-queue after 2 ns/x || fail "after"
  assertEquals "waiting" 2 "$(stat_of waiting)"
  assertEquals "not queued yet" 0 "$(rs-queue len)"
  wait_for 3 qlen_is 1 || fail "retry not back after its 1 s"
  assertEquals ns/r "$(rs-queue get)"
  assertEquals "after still waits" 1 "$(stat_of waiting)"
  wait_for 5 qlen_is 1 || fail "after never fired"
  assertEquals ns/x "$(rs-queue get)"
  assertEquals "retries counted" 2 "$(stat_of retries_total)"
  rs-queue forget ns/r || fail "forget"
  assertEquals "after with a bad number" 100 "$(rs-queue after soon ns/x 2>/dev/null; echo $?)"
}

test_shutdown_drains() {
  rs-queue add ns/a ns/b || fail "add"
  assertEquals ns/a "$(rs-queue get)"
  assertEquals ns/b "$(rs-queue get)"
  talk_open
  printf 'GET\n' >&7
  wait_for 5 stat_is getters 1 || fail "GET not waiting"
  rs-queue shutdown
  assertEquals "shutdown asked" 0 $?
  wait_for 5 lines_in "$TMP/talk.out" 1
  assertEquals "waiting GET told" SHUTDOWN "$(cat "$TMP/talk.out")"
  talk_close
  rs-queue get 2>"$TMP/err"
  assertEquals "no more keys" 1 $?
  assertContains "$(cat "$TMP/err")" "shutting down"
  rs-queue add ns/c 2>/dev/null
  assertEquals "no more adds" 1 $?
  assertTrue "still up: keys out" "kill -0 $SERVER"
  rs-queue done ns/a
  assertEquals "done still taken" 0 $?
  sleep 0.2
  assertTrue "still up: one key out" "kill -0 $SERVER"
  rs-queue done ns/b
  wait "$SERVER"
  assertEquals "exit once drained" 0 $?
  SERVER=
  assertFalse "socket removed" "[ -e '$SOCK' ]"
}

# Keys done within the drain deadline: a clean exit.
test_sigterm_drains() {
  stop_server
  start_server --drain-timeout 60s
  rs-queue add ns/a && rs-queue get >/dev/null || fail "get"
  kill -TERM "$SERVER"
  sleep 0.3
  assertTrue "waits for the key out" "kill -0 $SERVER"
  rs-queue shutdown --wait &
  WAITER=$!
  wait_for 5 stat_is clients 2 || fail "waiter not connected"
  rs-queue done ns/a
  wait "$SERVER"
  assertEquals "drained exit" 0 $?
  wait "$WAITER"
  assertEquals "shutdown --wait returns when it exits" 0 $?
  SERVER=
}

# A client that holds a key and never says DONE (a stuck stage, a
# forgotten `rs-queue get`) does not keep the server from stopping on one
# TERM: it exits 111 at the drain deadline, its socket removed.
test_sigterm_drain_deadline() {
  stop_server
  start_server --drain-timeout 2s
  rs-queue add ns/a ns/b || fail "add"
  talk_open
  printf 'GET\n' >&7
  wait_for 5 lines_in "$TMP/talk.out" 1 || fail "no key"
  assertEquals "held by a connection" "KEY ns/a" "$(cat "$TMP/talk.out")"
  assertEquals "held by get" ns/b "$(rs-queue get)"
  kill -TERM "$SERVER"
  sleep 0.5
  assertTrue "drains: still up before the deadline" "kill -0 $SERVER"
  rs-queue shutdown --wait &
  WAITER=$!
  # 2 s deadline, generous margin for a loaded machine; no second signal
  assertTrue "exits by the deadline" "wait_for 20 none_running $SERVER"
  wait "$SERVER"
  assertEquals "exit: keys given up" 111 $?
  SERVER=
  wait "$WAITER"
  assertEquals "shutdown --wait returns at the exit" 0 $?
  assertContains "says why" "$(cat "$TMP/server.log")" "drain deadline (2 s) has passed"
  assertContains "says what" "$(cat "$TMP/server.log")" "exiting with 2 keys processing"
  assertFalse "socket removed" "[ -e '$SOCK' ]"
}

# --drain-timeout 0 waits for ever; a second signal still ends it.
test_drain_timeout_zero_waits() {
  stop_server
  start_server --drain-timeout 0
  rs-queue add ns/a && rs-queue get >/dev/null || fail "get"
  kill -TERM "$SERVER"
  sleep 1
  assertTrue "still draining" "kill -0 $SERVER"
  kill -TERM "$SERVER"
  wait "$SERVER"
  assertEquals "second signal: exit now" 111 $?
  SERVER=
  rs-queue serve --drain-timeout soon 2>/dev/null
  assertEquals "bad duration: usage" 100 $?
}

test_shutdown_wait_idle() {
  rs-queue add ns/a || fail "add"
  rs-queue shutdown --wait
  assertEquals "shutdown --wait" 0 $?
  assertFalse "server gone" "kill -0 $SERVER 2>/dev/null"
  wait "$SERVER"
  assertEquals "server exit" 0 $?
  SERVER=
}

test_stats_json_and_prometheus() {
  stop_server
  start_server --name rsq-test
  rs-queue add ns/a ns/b ns/c || fail "add"
  rs-queue get >/dev/null && rs-queue done ns/a || fail "work"
  rs-queue get >/dev/null
  rs-queue after 30 ns/later
  rs-queue stats >"$TMP/stats.json" || fail "stats"
  jq -e '.name == "rsq-test" and .adds_total == 3 and .depth == 1 and
    .len == 1 and .processing == 1 and .waiting == 1 and .retries_total == 1 and
    .queue_duration_seconds.count == 2 and .work_duration_seconds.count == 1 and
    (.queue_duration_seconds.le | length) == 10 and
    .queue_duration_seconds.le[0] == 1e-08 and .queue_duration_seconds.le[9] == 10 and
    .longest_running_processor_seconds > 0 and .unfinished_work_seconds > 0' \
    "$TMP/stats.json" >/dev/null
  rc=$?
  assertEquals "stats JSON: $(cat "$TMP/stats.json")" 0 "$rc"
  rs-queue stats --prometheus >"$TMP/prom" || fail "prometheus"
  for m in workqueue_depth workqueue_adds_total workqueue_unfinished_work_seconds \
      workqueue_longest_running_processor_seconds workqueue_retries_total; do
    assertTrue "$m" "grep -q '^$m{name=\"rsq-test\"} ' '$TMP/prom'"
    assertTrue "$m type" "grep -q '^# TYPE $m ' '$TMP/prom'"
  done
  for h in workqueue_queue_duration_seconds workqueue_work_duration_seconds; do
    assertTrue "$h histogram" "grep -q '^# TYPE $h histogram' '$TMP/prom'"
    assertEquals "$h buckets" 11 "$(grep -c "^${h}_bucket{name=\"rsq-test\",le=" "$TMP/prom")"
    assertTrue "$h +Inf" "grep -q '^${h}_bucket{name=\"rsq-test\",le=\"+Inf\"} ' '$TMP/prom'"
    assertTrue "$h sum" "grep -q '^${h}_sum{name=\"rsq-test\"} ' '$TMP/prom'"
  done
  assertEquals "adds value" "workqueue_adds_total{name=\"rsq-test\"} 3" \
    "$(grep '^workqueue_adds_total{' "$TMP/prom")"
  assertEquals "queue count" "workqueue_queue_duration_seconds_count{name=\"rsq-test\"} 2" \
    "$(grep '^workqueue_queue_duration_seconds_count{' "$TMP/prom")"
}

# --- rs-sync, the queue's consumer ------------------------------------------
EXP_TOOL=${EXP_TOOL:-$RS_BIN/../test/exp-tool}
[ -x "$EXP_TOOL" ] || EXP_TOOL=$top/build/test/exp-tool

# two_sets: ns/idle (0 replicas, its status as rs-sync computes it: a sync
# of it writes nothing) and ns/web (1 replica, no pod: a create and a
# status), both resources synced.
rs_event() {  # TYPE NAME REPLICAS RV
  jq -cn --arg type "$1" --arg name "$2" --argjson n "$3" --arg rv "$4" \
      '{type: $type, resource: "replicasets",
    object: {apiVersion: "apps/v1", kind: "ReplicaSet",
      metadata: {name: $name, namespace: "ns", uid: "uid-\($name)",
        resourceVersion: $rv, generation: 1},
      spec: {replicas: $n, selector: {matchLabels: {app: $name}},
        template: {metadata: {labels: {app: $name}},
          spec: {containers: [{name: "c", image: "x"}]}}},
      status: {replicas: 0, terminatingReplicas: 0, observedGeneration: 1}}}'
}

two_sets() {
  rs_event ADDED idle 0 100
  rs_event ADDED web 1 101
  echo '{"type":"SYNCED","resource":"pods","resourceVersion":"101"}'
  echo '{"type":"SYNCED","resource":"replicasets","resourceVersion":"101"}'
}

# start_sync [ARGS...]: rs-sync on two_sets, kept running (its input, a
# fifo, stays open on fd 8); intents in $TMP/out, which nothing reads: no
# rs-apply.
start_sync() {
  rm -f "$TMP/ev.fifo"
  mkfifo "$TMP/ev.fifo"
  rs-sync -v 2 --queue "$SOCK" --expectations "$RS_STATE_DIR/sync.exp" "$@" \
    <"$TMP/ev.fifo" >"$TMP/out" 2>"$TMP/err" &
  SYNC=$!
  exec 8>"$TMP/ev.fifo"
  two_sets >&8
}

stop_sync() {
  exec 8>&-
  kill "$SYNC" 2>/dev/null
  wait "$SYNC" 2>/dev/null
  SYNC=
  rm -f "$RS_STATE_DIR/sync.exp" "$RS_STATE_DIR/sync.exp-lock"
}

# ends_is N: rs-sync has ended N syncs itself (rs_sync_ends_total).
ends_is() { [ "$(stage_stat rs-sync rs_sync_ends_total)" = "$1" ]; }
retries_at_least() { [ "$(stat_of retries_total)" -ge "$1" ]; }

# A sync that writes nothing ends at rs-queue from rs-sync (DONE, FORGET);
# rs-apply gets only keys with writes and ends those. Here nothing ends
# ns/web, which stays out: without rs-sync's own ends ns/idle would too.
test_sync_ends_keys_without_writes() {
  start_sync
  assertTrue "ns/web's intents, its end last" \
    "wait_for 10 grep -q '\"op\":\"end\",\"key\":\"ns/web\"' '$TMP/out'"
  assertTrue "rs-sync counts one end of its own" "wait_for 5 ends_is 1"
  # its DONE may wait --queue-hold for ADDs that do not come
  assertTrue "only ns/web is out" "wait_for 5 stat_is processing 1"
  assertEquals "nothing queued" 0 "$(rs-queue len)"
  assertEquals "no retry" 0 "$(stat_of retries_total)"
  assertEquals "no line for ns/idle" 0 "$(grep -c 'ns/idle' "$TMP/out")"
  # ns/idle is not out: queued again, it is synced again at once
  rs-queue add ns/idle || fail "add"
  assertTrue "synced again" "wait_for 5 ends_is 2"
  assertTrue "still only ns/web out" "wait_for 5 stat_is processing 1"
  stop_sync
}

# A stale cache's skip (a written version ahead of the stream) writes
# nothing either: rs-sync sends DONE and RETRY, and the key comes back
# after the queue's backoff, again and again while the stream is behind.
test_sync_retries_a_stale_key_itself() {
  "$EXP_TOOL" "$RS_STATE_DIR/sync.exp" create >/dev/null 2>&1
  "$EXP_TOOL" "$RS_STATE_DIR/sync.exp" wrote ns/idle uid-idle replicasets.apps=999 ||
    fail "exp-tool wrote"
  start_sync --keep-expectations
  assertTrue "retried through the queue" \
    "wait_for 10 retries_at_least 3"
  assertTrue "each skip said" "[ $(grep -c 'ns/idle: not synced: read version 101 is not as new as written version 999' "$TMP/err") -ge 3 ]"
  assertEquals "no line for ns/idle" 0 "$(grep -c 'ns/idle' "$TMP/out")"
  assertTrue "ns/web synced" "grep -q '\"op\":\"end\",\"key\":\"ns/web\"' '$TMP/out'"
  stop_sync
}

# soon T CMD...: wait_for, at 20 ms steps
soon() {
  _end=$(( $(date +%s%N) + $1 * 1000000000 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s%N)" -ge "$_end" ] && return 1
    sleep 0.02
  done
}
syncs_of_idle_at_least() { [ "$(grep -c 'syncing ns/idle' "$TMP/err")" -ge "$1" ]; }

# rs-sync's own ends (DONE and FORGET here) and its GETs wait up to
# --queue-hold for its next ADDs: meanwhile rs-queue still counts the key
# out. The hold's end sends them, and so does an ADD, at once, in its
# write. ns/web stays out throughout (no rs-apply ends it).
test_sync_holds_its_ends_for_the_next_adds() {
  local t0 ms
  start_sync -v 4 --queue-hold 10s
  assertTrue "ns/idle synced" "soon 10 syncs_of_idle_at_least 1"
  assertEquals "its end held: ns/idle still out" 2 "$(stat_of processing)"
  assertTrue "the end sent once the hold is over" "wait_for 20 stat_is processing 1"
  rs-queue add ns/idle || fail "add"
  assertTrue "ns/idle synced again" "soon 10 syncs_of_idle_at_least 2"
  assertEquals "its end held again" 2 "$(stat_of processing)"
  t0=$(date +%s%N)
  rs_event MODIFIED web 1 102 >&8
  assertTrue "sent with the ADD of ns/web" "soon 10 stat_is processing 1"
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  assertTrue "within ${ms} ms, not at the hold's end" "[ $ms -lt 5000 ]"
  stop_sync
}

test_help_and_usage() {
  rs-queue --help >"$TMP/help"
  assertEquals "help exit" 0 $?
  assertContains "$(cat "$TMP/help")" "usage: rs-queue"
  assertContains "$(cat "$TMP/help")" "--notify-fd"
  assertContains "$(cat "$TMP/help")" "--drain-timeout"
  rs-queue serve --help >/dev/null
  assertEquals "serve help exit" 0 $?
  rs-queue frob 2>/dev/null
  assertEquals "unknown command" 100 $?
  rs-queue len --prometheus 2>/dev/null
  assertEquals "misplaced option" 100 $?
  rs-queue add 2>/dev/null
  assertEquals "add needs keys" 100 $?
  rs-queue --queue "$TMP/none.sock" len 2>"$TMP/err"
  assertEquals "no server" 111 $?
  assertContains "$(cat "$TMP/err")" "$TMP/none.sock"
}

. "$SHUNIT2"
