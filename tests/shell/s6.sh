#!/bin/bash
# s6.sh: the controller under s6 (service/rs-svscan), against the test
# apiserver. Each stage in turn (rs-watch, rs-sync, rs-apply, rs-queue) is
# SIGKILLed at a random moment while a ReplicaSet scales up to 300: s6 must
# bring the controller back so that it ends with exactly 300 pods, never
# created one beyond that, and never stalled for more than 10 s (rs-apply at
# 50 writes a second rather than its default 20, so that each scale-up
# takes 6 s, not 15, and a kill still lands in the middle of it). A killed
# stage must not leave the rest of its pipeline running. At the end
# s6-svscanctl -t must leave no process behind.
. "$(dirname "$0")/lib.sh"

SCAN=$RS_STATE_DIR/scan
CTL=$RS_STATE_DIR/ctl          # the supervised controller's RS_STATE_DIR
REPLICAS=300
MAX_STALL=10                   # seconds
SVSCAN=

oneTimeSetUp() {
  need_cluster || return
  RS_APPLY_FLAGS="-v 2 --kube-api-qps 50 --kube-api-burst 50" RS_SYNC_FLAGS="-v 2" RS_WATCH_FLAGS="-v 1" \
    "$top/service/rs-svscan" --state-dir "$CTL" --no-metrics "$SCAN" \
    >"$TMP/svscan.log" 2>&1 &
  SVSCAN=$!
  wait_for 20 test -d "$SCAN/rs-pipeline/supervise" || { cat "$TMP/svscan.log" >&2; return 1; }
  # the separate recorder: every pod event, for pod_adds and pod_peak
  rs_bg rs-watch pods >"$TMP/pods.ndjson" 2>"$TMP/podwatch.log"
}

oneTimeTearDown() {
  [ -n "$SVSCAN" ] && stop_svscan
  rs_cleanup
  if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$TMP" ]; then
    mkdir -p "$RS_KEEP_LOGS" && cp -r "$TMP" "$SCAN/.log" "$RS_KEEP_LOGS/" 2>/dev/null
  fi
  rm -rf "$RS_STATE_DIR"
}

# leftovers: pids of processes of this scan directory: run from it (the
# s6-supervise processes, the services) or started with its envdirs.
leftovers() {
  local p cwd
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    case $cwd in "$SCAN"|"$SCAN"/*) echo "${p#/proc/}"; continue ;; esac
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "RS_STATE_DIR=$CTL"; then
      echo "${p#/proc/}"
    fi
  done
}

# adds NS: pods of NS the recorder saw ADDED (cheap: grep, for polling).
adds() {
  grep -F '"type":"ADDED"' "$TMP/pods.ndjson" | grep -cF "\"namespace\":\"$1\""
}

now_ms() { date +%s%3N; }

# stall_s NS T: the longest wait in whole seconds, by the apiserver's
# creationTimestamps, from T (epoch seconds) to the first pod of NS made
# after it, and between each such pod and the next.
stall_s() {
  jq -rn --arg ns "$1" --argjson t "$2" '[inputs | select(.type == "ADDED" and
      .object.metadata.namespace == $ns) | .object.metadata.creationTimestamp |
      fromdateiso8601 | select(. >= $t)] | sort | [$t] + . |
    [range(1; length) as $i | .[$i] - .[$i - 1]] | max // 0' "$TMP/pods.ndjson"
}

test_services_up_and_queue_ready() {
  need_cluster || return
  assertTrue "rs-queue up and ready (notification-fd)" \
    "wait_for 20 sh -c 's6-svstat \"$SCAN/rs-queue\" | grep -q \"^up .*ready\"'"
  assertTrue "pipeline up with its three stages" "wait_for 20 pipeline_pids"
  assertTrue "rs-queue logs through s6-log" "wait_for 10 grep -q 'serving queue' '$SCAN/.log/rs-queue/current'"
  assertTrue "the pipeline logs through s6-log" "wait_for 10 grep -q 'rs-pipeline: started' '$SCAN/.log/rs-pipeline/current'"
  assertEquals "KUBECONFIG in the envdir" "$KUBECONFIG" "$(cat "$SCAN/rs-pipeline/env/KUBECONFIG")"
  assertTrue "no RC services without --rc" "[ ! -d '$SCAN/rs-rc-pipeline' ]"
}

# batch_or_gone TID: the thread is SCHED_BATCH, or has ended meanwhile.
batch_or_gone() { [ ! -d "/proc/$1" ] || [ "$(policy "$1")" = SCHED_BATCH ]; }

# The four stages run as SCHED_BATCH (libcommon/schedclass.c), rs-watch's
# reflector threads too; the supervisors that start them stay as they were.
# A stage's name is set before its main moves it: each thread gets 5 s.
test_stages_run_as_sched_batch() {
  need_cluster || return
  local pids p t
  assertTrue "rs-queue ready" \
    "wait_for 20 sh -c 's6-svstat \"$SCAN/rs-queue\" | grep -q \"^up .*ready\"'"
  assertTrue "pipeline up" "wait_for 20 pipeline_pids"
  pids=$(pipeline_pids) || return
  set -- $pids
  assertEquals "rs-pipeline's supervisor" SCHED_OTHER "$(policy "$1")"
  shift
  for p in "$@" "$(s6_stage_pid rs-queue)"; do
    for t in /proc/"$p"/task/*; do
      assertTrue "$(cat /proc/"$p"/comm 2>/dev/null) thread ${t##*/}: SCHED_BATCH" \
        "wait_for 5 batch_or_gone ${t##*/}"
    done
  done
}

# rs-pipeline runs rs-watch with --batch 20ms (a storm's events gathered,
# bench/results/cpu.md section 14), before RS_WATCH_FLAGS, which may set it
# again; the batch itself is watch.sh's test_batched_events_all_written.
test_pipeline_watch_gathers_storms() {
  need_cluster || return
  local pids args
  assertTrue "pipeline up" "wait_for 20 pipeline_pids"
  pids=$(pipeline_pids) || return
  set -- $pids
  args=$(tr '\0' ' ' <"/proc/$2/cmdline")
  assertContains "rs-watch's arguments" "$args" "--batch 20ms"
  assertEquals "RS_WATCH_FLAGS in the envdir" "-v 1" "$(cat "$SCAN/rs-pipeline/env/RS_WATCH_FLAGS")"
  case $args in
  *"--batch 20ms "*"-v 1 "*) ;;
  *) fail "--batch 20ms before RS_WATCH_FLAGS: $args" ;;
  esac
}

# kill_during_scale_up STAGE: a ReplicaSet of $REPLICAS; STAGE SIGKILLed once
# a random number of its pods exist; then the checks.
kill_during_scale_up() {
  local stage=$1 ns at old victim t_kill last n t maxgap converged=0 p
  ns=$(new_ns "kill-$stage")
  wait_for 30 pipeline_pids || { fail "no pipeline before the test"; return; }
  wait_for 10 sh -c 's6-svstat "$0" | grep -q "^up .*ready"' "$SCAN/rs-queue"
  make_rs "$ns" big "$REPLICAS"
  at=$(( 20 + RANDOM % (REPLICAS * 3 / 4 - 20) ))
  if ! wait_for 120 sh -c '[ $(grep -F "\"type\":\"ADDED\"" "$0" | grep -cF "\"namespace\":\"$1\"") -ge $2 ]' \
      "$TMP/pods.ndjson" "$ns" "$at"; then
    fail "$stage: scale-up never reached $at pods"; return
  fi
  old=$(pipeline_pids)
  victim=$(s6_stage_pid "$stage")
  assertTrue "$stage has a pid" "[ -n '$victim' ] && [ '$victim' -gt 0 ]"
  n=$(adds "$ns")
  kill -KILL "$victim"
  t_kill=$(now_ms); last=$t_kill
  echo "$stage: SIGKILL pid $victim at $n pods (aimed at $at)"

  # Until convergence, or no new pod for three times the stall allowed
  # (the test's view, which a slow machine delays: the stall itself is
  # measured from the pods' creationTimestamps).
  while [ $(( $(now_ms) - t_kill )) -lt 180000 ]; do
    p=$(adds "$ns")
    t=$(now_ms)
    [ "$p" -gt "$n" ] && { n=$p; last=$t; }
    if [ "$p" -ge "$REPLICAS" ]; then converged=1; break; fi
    [ $(( t - last )) -gt $(( MAX_STALL * 3000 )) ] && break
    sleep 0.2
  done
  maxgap=$(stall_s "$ns" $(( t_kill / 1000 )))
  echo "$stage: $n pods created $(( (last - t_kill) / 1000 )) s after the kill; longest stall ${maxgap} s"
  assertEquals "$stage: converged to $REPLICAS creates" 1 "$converged"
  assertTrue "$stage: no stall over ${MAX_STALL} s (longest ${maxgap} s)" \
    "[ $maxgap -le $MAX_STALL ]"

  # shellcheck disable=SC2086
  assertTrue "$stage: nothing of the old pipeline left running ($old)" \
    "wait_for 25 none_running $old"
  assertTrue "$stage: a new pipeline runs" "wait_for 20 pipeline_pids"
  [ "$stage" = rs-queue ] && assertNotEquals "rs-queue restarted" "$victim" "$(s6_stage_pid rs-queue)"
  assertTrue "$stage: $REPLICAS live pods" \
    "wait_for 60 sh -c '[ \$(kubectl -n $ns get pods -o name | wc -l) -eq $REPLICAS ]'"
  assertTrue "$stage: status.replicas $REPLICAS" "wait_for 60 rs_status_is $ns big '.replicas == $REPLICAS'"
  sleep 3
  assertEquals "$stage: pods ever created" "$REPLICAS" "$(pod_adds "$ns")"
  p=$(pod_peak "$ns")
  assertTrue "$stage: never more than $REPLICAS pods at once (peak $p)" "[ $p -le $REPLICAS ]"
  assertEquals "$stage: live pods" "$REPLICAS" "$(count_live "$ns" app=big)"

}

test_kill_rs_watch() { need_cluster || return; kill_during_scale_up rs-watch; }
test_kill_rs_sync() { need_cluster || return; kill_during_scale_up rs-sync; }
test_kill_rs_apply() { need_cluster || return; kill_during_scale_up rs-apply; }
test_kill_rs_queue() { need_cluster || return; kill_during_scale_up rs-queue; }

# The supervisor itself SIGKILLed (s6-svc -k): ./finish stops its stages.
test_kill_pipeline_supervisor() {
  local old ns
  need_cluster || return
  assertTrue "pipeline up" "wait_for 30 pipeline_pids"
  old=$(pipeline_pids)
  s6-svc -k "$SCAN/rs-pipeline"
  # shellcheck disable=SC2086
  assertTrue "stages of the killed supervisor stopped ($old)" "wait_for 10 none_running $old"
  assertTrue "finish said so" "wait_for 10 grep -q 'finish: stopping what is left' '$SCAN/.log/rs-pipeline/current'"
  assertTrue "a new pipeline runs" "wait_for 20 pipeline_pids"
  ns=$(new_ns after-k)
  make_rs "$ns" web 3
  assertTrue "the new pipeline works" "wait_for 30 sh -c '[ \$(kubectl -n $ns get pods -o name | wc -l) -eq 3 ]'"
  sleep 2
  assertEquals "creates" 3 "$(pod_adds "$ns")"
}

# Last (shunit2 runs tests in file order): a clean stop leaves nothing.
test_zz_svscanctl_t_leaves_nothing() {
  need_cluster || return
  assertNotNull "processes of the scan directory before the stop" "$(leftovers)"
  assertTrue "s6-svscan exits on s6-svscanctl -t" stop_svscan
  sleep 1
  left=$(leftovers)
  assertNull "nothing left running: $left" "$left"
  # shellcheck disable=SC2086
  if [ -n "$left" ]; then kill -KILL $left 2>/dev/null; fi
}

. "$SHUNIT2"
