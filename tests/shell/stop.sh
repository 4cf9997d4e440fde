#!/bin/bash
# stop.sh: a clean stop logs no error. The controller under s6 as a
# container runs it (service/rs-svscan, every service logging on its
# output, leader election, the ReplicationController manager too) gets
# SIGTERM, as `podman stop` and the kubelet send it to PID 1, after it has
# created the pods of a ReplicaSet: s6-svscan must exit 0 within the
# pipeline's timeout, leave no process behind, and its output must hold no
# fatal, error or warning line (it once said "rs-sync: fatal: lost the
# connection to rs-queue": the queue stopped before the pipeline that uses
# it). Three rounds, so that a race shows. And rs-sync alone takes the
# queue's orderly shutdown (its waiting GETs answered SHUTDOWN, then the
# socket closed) for the end it is: exit 0, no fatal line.
. "$(dirname "$0")/lib.sh"

SCAN=$RS_STATE_DIR/scan
CTL=$RS_STATE_DIR/ctl
SVSCAN=

oneTimeTearDown() {
  [ -n "$SVSCAN" ] && stop_svscan
  rs_cleanup
  if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$TMP" ]; then mkdir -p "$RS_KEEP_LOGS" && cp -r "$TMP" "$RS_KEEP_LOGS/"; fi
  rm -rf "$RS_STATE_DIR"
}

# leftovers: processes started with this suite's envdirs.
leftovers() {
  local p
  for p in /proc/[0-9]*; do
    tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "RS_STATE_DIR=$CTL" && echo "${p#/proc/}"
  done
}

# round N: start, a ReplicaSet of 4 converges, SIGTERM, the checks.
round() {
  local n=$1 ns log=$TMP/svscan-$1.log st
  # the Lease in the suite's namespace of the round, which it may use
  ns=$(new_ns "stop-$n") || return 1
  RS_LEASE_FLAGS="--lease-namespace $ns" RS_METRICS_FLAGS="--listen 127.0.0.1:0" \
    "$top/service/rs-svscan" --leader-elect --rc -v 2 --log-root - \
    --state-dir "$CTL" "$SCAN" >"$log" 2>&1 &
  SVSCAN=$!
  assertTrue "round $n: the pipelines started" \
    "wait_for 30 sh -c '[ \$(grep -c \"rs-pipeline: started\" \"$log\") -ge 2 ]'"
  make_rs "$ns" web 4
  assertTrue "round $n: 4 pods" "wait_count $ns app=web 4 30"
  assertTrue "round $n: status 4" "wait_for 20 rs_status_is $ns web '.replicas == 4'"
  kill -TERM "$SVSCAN"
  for _ in $(seq 1 200); do kill -0 "$SVSCAN" 2>/dev/null || break; sleep 0.2; done
  wait "$SVSCAN"; st=$?
  SVSCAN=
  assertEquals "round $n: s6-svscan exits 0 on SIGTERM" 0 "$st"
  sleep 0.5
  assertNull "round $n: nothing left: $(leftovers)" "$(leftovers)"
  assertEquals "round $n: no error in the log" "" \
    "$(grep -E '(^|: )(fatal|error|warning):|^[EWF][0-9]{4} ' "$log")"
  assertEquals "round $n: no stage ended badly" "" \
    "$(grep -E 'exited [1-9]|killed by signal' "$log")"
  assertTrue "round $n: the Lease released" "grep -q 'released lease' '$log'"
  assertEquals "round $n: still 4 pods" 4 "$(count_live "$ns" app=web)"
}

test_rs_sync_takes_queue_shutdown_as_clean() {
  local st=$RS_STATE_DIR/q qp sp rc n
  mkdir -p -m 0700 "$st"
  RS_STATE_DIR=$st rs-queue serve 2>"$TMP/q.log" &
  qp=$!
  assertTrue "the queue listens" "wait_for 10 test -S '$st/queue.sock'"
  mkfifo "$TMP/events"
  RS_STATE_DIR=$st rs-sync -v 1 <"$TMP/events" >/dev/null 2>"$TMP/sync.log" &
  sp=$!
  exec 7>"$TMP/events"
  printf '%s\n' '{"type":"SYNCED","resource":"replicasets"}' '{"type":"SYNCED","resource":"pods"}' >&7
  # synced, rs-sync keeps its GETs waiting at the queue
  assertTrue "rs-sync waits for keys" \
    "wait_for 10 sh -c 'RS_STATE_DIR=$st rs-queue stats | jq -e \".getters > 0\"'"
  kill -TERM "$qp"
  for n in $(seq 1 50); do none_running "$sp" && break; sleep 0.1; done
  wait "$sp"; rc=$?
  exec 7>&-
  wait "$qp"
  assertEquals "rs-sync exits 0: $(cat "$TMP/sync.log")" 0 "$rc"
  assertEquals "no fatal line" "" "$(grep -E ': (fatal|error):' "$TMP/sync.log")"
  assertTrue "it says why it ends" "grep -q 'queue is shutting down' '$TMP/sync.log'"
}

# The race of a clean stop, made certain: rs-sync is blocked writing
# intents to a next stage that does not read (a full pipe), gets TERM,
# and then that stage is gone, as when every stage gets TERM at once and
# rs-apply exits first. Broken pipe is then the end of the stop: exit 0,
# no fatal line (it once said "rs-sync: fatal: unable to write intents").
# Without TERM the same is a broken pipeline: faults.sh checks that.
test_rs_sync_reader_gone_while_stopping() {
  local st=$RS_STATE_DIR/q2 qp sp rp rc i pad
  mkdir -p -m 0700 "$st"
  RS_STATE_DIR=$st rs-queue serve 2>"$TMP/q2.log" &
  qp=$!
  assertTrue "the queue listens" "wait_for 10 test -S '$st/queue.sock'"
  mkfifo "$TMP/events2" "$TMP/intents2"
  sleep 600 <"$TMP/intents2" &
  rp=$!
  RS_STATE_DIR=$st rs-sync -v 1 <"$TMP/events2" >"$TMP/intents2" 2>"$TMP/sync2.log" &
  sp=$!
  exec 7>"$TMP/events2"
  # 40 ReplicaSets with no pods, each template 8 KiB: more intents than
  # a pipe holds
  pad=$(head -c 8192 /dev/zero | tr '\0' x)
  for i in $(seq 1 40); do
    printf '{"type":"ADDED","resource":"replicasets","object":{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web%s","namespace":"ns","uid":"uid-web%s","resourceVersion":"10%s","generation":1},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web%s"}},"template":{"metadata":{"labels":{"app":"web%s"},"annotations":{"pad":"%s"}},"spec":{"containers":[{"name":"c","image":"x"}]}}},"status":{"replicas":0}}}\n' \
      "$i" "$i" "$i" "$i" "$i" "$pad" >&7
  done
  printf '%s\n' '{"type":"SYNCED","resource":"replicasets"}' '{"type":"SYNCED","resource":"pods"}' >&7
  assertTrue "rs-sync blocks writing to the full pipe" \
    "wait_for 10 grep -q pipe_write /proc/$sp/wchan"
  kill -TERM "$sp"
  sleep 0.3
  assertTrue "TERM taken, still writing: $(cat "$TMP/sync2.log")" "grep -q pipe_write /proc/$sp/wchan"
  kill -KILL "$rp"; wait "$rp" 2>/dev/null
  for i in $(seq 1 50); do none_running "$sp" && break; sleep 0.1; done
  wait "$sp"; rc=$?
  exec 7>&-
  kill -TERM "$qp"; wait "$qp"
  assertEquals "rs-sync exits 0: $(cat "$TMP/sync2.log")" 0 "$rc"
  assertEquals "no fatal line" "" "$(grep -E ': (fatal|error):' "$TMP/sync2.log")"
  assertTrue "it says why it ends" "grep -q 'reader of standard output is gone: stopping' '$TMP/sync2.log'"
}

test_clean_stop_logs_no_error() {
  need_cluster || return
  local n
  for n in 1 2 3; do
    round "$n" || fail "round $n: unable to start"
  done
}

. "$SHUNIT2"
