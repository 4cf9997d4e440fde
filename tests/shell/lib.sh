# lib.sh: sourced by every shunit2 suite. Gives each suite its own state
# directory and namespace on the shared test cluster, and cleans both up.
#   . "$(dirname "$0")/lib.sh"   at the top of a suite, then define tests,
#   then end the suite with:  . "$SHUNIT2"
export SHUNIT_COLOR=none
top=$(cd "$(dirname "$0")/../.." && pwd)
SHUNIT2=${SHUNIT2:-/usr/bin/shunit2}
[ -f "$SHUNIT2" ] || SHUNIT2=/usr/share/shunit2/shunit2
RS_BIN=${RS_BIN:-$top/build/bin}
PATH="$RS_BIN:$PATH"
[ -n "${K8S_BIN:-}" ] && PATH="$K8S_BIN:$PATH"
export PATH
SUITE=$(basename "$0" .sh)
RS_STATE_DIR=$(mktemp -d "/tmp/rs-state-$SUITE.XXXXXX")
export RS_STATE_DIR
chmod 0700 "$RS_STATE_DIR"
TMP=$RS_STATE_DIR/tmp
mkdir -p "$TMP"
# Background processes a test started; killed by rs_cleanup.
RS_PIDS=

rs_bg() {  # rs_bg CMD...: start CMD in the background, remembered for cleanup
  "$@" &
  RS_PIDS="$RS_PIDS $!"
}

rs_cleanup() {
  for p in $RS_PIDS; do kill "$p" 2>/dev/null; done
  for p in $RS_PIDS; do wait "$p" 2>/dev/null; done
  RS_PIDS=
}

# skip_test REASON: this test does not run here, and says why. shunit2
# counts skipped assertions, not tests (a test that skips before its first
# assertion shows as a pass), so the suite, the test and REASON go to
# $RS_SKIPS, which run-all.sh reads: it counts the test skipped, and under
# CI fails it unless the test is on its list of soak-only tests. The caller
# returns next:  skip_test "why"; return
skip_test() {
  echo "skipped: $*"
  [ -n "${RS_SKIPS:-}" ] &&
    printf '%s %s %s\n' "$SUITE" "${_shunit_test_:-oneTimeSetUp}" "$*" >>"$RS_SKIPS"
  startSkipping
}

# need_cluster || return: fails the test with no cluster. run-all.sh starts
# one for every suite that calls this, so none is a broken run, not a skip.
need_cluster() {
  if [ -z "${KUBECONFIG:-}" ] || [ ! -f "$KUBECONFIG" ]; then
    fail "no test cluster (KUBECONFIG unset or not a file): run the suite with tests/run-all.sh shell $SUITE"
    startSkipping
    return 1
  fi
  return 0
}

# new_ns NAME: a fresh namespace for one test; prints its name.
new_ns() {
  ns="$1-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
  kubectl create namespace "$ns" >/dev/null || return 1
  echo "$ns"
}

# cluster_server: the test cluster's API server URL, from $KUBECONFIG.
cluster_server() {
  kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}'
}

# stage_stat STAGE NAME: the sum of the samples of NAME in STAGE's stats
# file ($RS_STATE_DIR/stats/STAGE.json, rewritten at most once a second);
# 0 before the file or the figure exists.
stage_stat() {
  jq --arg n "$2" '[.families[] | select(.name == $n) | .samples[].value]
    | add // 0' "$RS_STATE_DIR/stats/$1.json" 2>/dev/null || echo 0
}

# role_sa NS NAME VERBS RESOURCES: a ServiceAccount NAME in NS, bound to
# a Role NAME of VERBS on RESOURCES (kubectl's comma lists).
role_sa() {
  kubectl -n "$1" create serviceaccount "$2" >/dev/null &&
    kubectl -n "$1" create role "$2" --verb="$3" --resource="$4" >/dev/null &&
    kubectl -n "$1" create rolebinding "$2" --role="$2" \
      --serviceaccount="$1:$2" >/dev/null
}

# cluster_of_our_own DIR [VAR=VALUE...]: a test's own etcd and
# kube-apiserver in DIR, started with the given environment
# (tests/env/cluster reads RS_TEST_MAX_INFLIGHT,
# RS_TEST_MAX_MUTATING_INFLIGHT, RS_TEST_APISERVER_FLAGS); DIR/kubeconfig
# reaches it. Taken down by `tests/env/cluster down DIR`, or when the
# suite ends. Fails the test when it does not start.
cluster_of_our_own() {
  _own=$1; shift
  # tests/env/cluster picks free ports, which another cluster starting on
  # this machine may take first: try again
  for _try in 1 2 3; do
    env "$@" "$top/tests/env/cluster" up "$_own" --owner $$ >"$_own.log" 2>&1 && return 0
    "$top/tests/env/cluster" down "$_own" >/dev/null 2>&1
    sleep 1
  done
  fail "unable to start a cluster of our own: $(tail -3 "$_own.log")"
  return 1
}

# alive PID: the process exists and is no zombie; dead: not alive.
alive() {
  _st=$(ps -o stat= -p "$1" 2>/dev/null)
  [ -n "$_st" ] && [ "${_st#Z}" = "$_st" ]
}
dead() { ! alive "$1"; }
# policy PID: its scheduling class as chrt names it (SCHED_OTHER, SCHED_BATCH).
policy() { LC_ALL=C chrt -p "$1" 2>/dev/null | sed -n 's/.*scheduling policy: //p'; }
now_ms() { date +%s%3N; }
# kill9 PID: SIGKILL, without the shell's "Killed" job report.
kill9() { disown "$1" 2>/dev/null; kill -KILL "$1"; }
# kill_markers: the sleeping progs that wrote their pid to $TMP/*.pid.
kill_markers() {
  for _f in "$TMP"/*.pid; do
    [ -f "$_f" ] || continue
    _p=$(cat "$_f")
    [ "$(ps -o comm= -p "$_p" 2>/dev/null)" = sleep ] && kill -KILL "$_p"
    rm -f "$_f"
  done
}

# wait_for SECONDS CMD...: retry CMD every 0.2 s until it succeeds.
wait_for() {
  _t=$1; shift
  _end=$(( $(date +%s) + _t ))
  while ! "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge "$_end" ] && return 1
    sleep 0.2
  done
  return 0
}

# none_running PID...: true when none of them is alive (zombies count dead:
# a zombie waits for its parent, maybe this shell, to reap it).
none_running() {
  local p st
  for p in "$@"; do
    st=$(sed -e 's/^.*) //' -e 's/ .*//' "/proc/$p/stat" 2>/dev/null) || continue
    [ "$st" = Z ] || return 1
  done
  return 0
}

# The controller under s6 (service/rs-svscan, s6.sh and deb.sh): its scan
# directory is $SCAN, s6-svscan's pid $SVSCAN.

# stop_svscan: s6-svscanctl -t, then wait for s6-svscan (30 s at most).
stop_svscan() {
  s6-svscanctl -t "$SCAN" 2>/dev/null
  for _ in $(seq 1 150); do kill -0 "$SVSCAN" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$SVSCAN" 2>/dev/null && return 1
  wait "$SVSCAN" 2>/dev/null
  SVSCAN=
  return 0
}

# s6_stage_pid STAGE: the pid of rs-queue, or of a stage of the pipeline.
s6_stage_pid() {
  local sup
  case $1 in
  rs-queue) s6-svstat -p "$SCAN/rs-queue" ;;
  rs-pipeline) s6-svstat -p "$SCAN/rs-pipeline" ;;
  *) sup=$(s6-svstat -p "$SCAN/rs-pipeline") && pgrep -P "$sup" -x "$1" ;;
  esac
}

# pipeline_pids: the supervisor and the three stages, when all are up.
pipeline_pids() {
  local sup w s a
  sup=$(s6-svstat -p "$SCAN/rs-pipeline") && [ "$sup" -gt 0 ] || return 1
  w=$(pgrep -P "$sup" -x rs-watch) && s=$(pgrep -P "$sup" -x rs-sync) &&
    a=$(pgrep -P "$sup" -x rs-apply) || return 1
  echo "$sup $w $s $a"
}

oneTimeTearDown() {
  stop_controller
  rm -rf "$RS_STATE_DIR"
}

# start_controller [EXTRA RS-APPLY FLAGS...]: rs-queue serve plus the
# pipeline rs-watch | rs-sync | rs-apply, logs and intents in $TMP. A second
# rs-watch records every pod event in $TMP/pods.ndjson (see pod_adds).
# RS_RELAY, when set, is a command put between rs-watch and rs-sync. The
# pipeline's rs-watch reads pods in protobuf and gathers a storm's events
# for 20 ms, as rs-pipeline's does.
# With RS_TEST_INSTANCES=N (N > 1), N sharded instances instead
# (start_instances), the same recorder beside them.
start_controller() {
  if sharded; then
    [ -z "${RS_RELAY:-}" ] || { echo "start_controller: RS_RELAY with RS_TEST_INSTANCES" >&2; return 1; }
    rs_bg rs-watch pods >"$TMP/pods.ndjson" 2>"$TMP/podwatch.log"
    INSTANCE_APPLY_FLAGS="-v 2 $*" start_instances "$RS_TEST_INSTANCES" i
    return
  fi
  RS_QUEUE_SOCK=$RS_STATE_DIR/queue.sock
  rs_bg rs-queue serve --socket "$RS_QUEUE_SOCK" 2>"$TMP/queue.log"
  wait_for 10 test -S "$RS_QUEUE_SOCK" || { echo "rs-queue did not start" >&2; return 1; }
  rs_bg rs-watch pods >"$TMP/pods.ndjson" 2>"$TMP/podwatch.log"
  # a process group of its own, so that stop_controller stops every stage
  TMP=$TMP RS_WATCH_FLAGS=${RS_WATCH_FLAGS:-} RS_RESOURCES=${RS_RESOURCES:-replicasets pods} \
  RS_SYNC_FLAGS=${RS_SYNC_FLAGS:-} RS_RELAY=${RS_RELAY:-} setsid bash -c '
    eval "rs-watch --protobuf --batch 20ms \$RS_WATCH_FLAGS \$RS_RESOURCES 2>\"\$TMP/watch.log\" ${RS_RELAY:+| $RS_RELAY} |
    rs-sync -v 2 \$RS_SYNC_FLAGS 2>\"\$TMP/sync.log\" | tee \"\$TMP/intents.ndjson\" |
    rs-apply -v 2 \"\$@\" 2>\"\$TMP/apply.log\""' rs-pipeline "$@" &
  RS_PIPELINE=$!
  RS_PGIDS="${RS_PGIDS:-} $RS_PIPELINE"
}

# pipeline_logs: the last lines of each stage's log, on stderr: what a test
# prints when the pipeline did not come up, since CI keeps no files.
pipeline_logs() {
  for _f in queue podwatch watch sync apply metrics $(cd "$TMP" && ls -d */ 2>/dev/null | sed 's|/$|/pipeline|'); do
    [ -s "$TMP/$_f.log" ] || continue
    echo "--- $_f.log" >&2
    tail -15 "$TMP/$_f.log" >&2
  done
}

# stop_controller: the pipeline's process group, the queue, the recorder;
# or the instances.
stop_controller() {
  stop_instances
  for g in ${RS_PGIDS:-}; do kill -TERM -- "-$g" 2>/dev/null; done
  for g in ${RS_PGIDS:-}; do
    wait_for 10 sh -c "! kill -0 -- -$g 2>/dev/null" && continue
    echo "stop_controller: the pipeline outlived TERM by 10 s: KILL" >&2
    kill -KILL -- "-$g" 2>/dev/null
    # gone before the caller removes the state directory it writes to
    wait_for 5 sh -c "! kill -0 -- -$g 2>/dev/null"
  done
  RS_PGIDS=
  rs_cleanup
}

# stop_leases: TERM to each rs-lease of $LEASE_PIDS, waited for, and the
# marker progs they left (kill_markers).
LEASE_PIDS=
stop_leases() {
  for p in $LEASE_PIDS; do kill -TERM "$p" 2>/dev/null; done
  for p in $LEASE_PIDS; do wait "$p" 2>/dev/null; done
  LEASE_PIDS=
  kill_markers
}

# --- sharded instances (doc/sharding.md) ------------------------------------
# An instance is what a pod of its own would run: rs-queue and
# service/rs-pipeline with RS_SHARDS, that is rs-lease --shards over
# rs-watch | rs-sync | rs-apply. Every instance of a group is in the lease
# namespace $LNS, group $SHARD_GROUP, $SHARD_B buckets, short timings
# ($SHARD_TIMING): lease 4 s, renew deadline 3 s, retry 1 s.
# RS_TEST_INSTANCES=N makes start_controller (e2e.sh) and e2e_rc.sh run N
# instances of each controller instead of one pipeline.
RS_TEST_INSTANCES=${RS_TEST_INSTANCES:-1}
sharded() { [ "$RS_TEST_INSTANCES" -gt 1 ]; }
SHARD_B=${SHARD_B:-32}
SHARD_GROUP=${SHARD_GROUP:-grp}
LEASE_DUR=4 RENEW=3
SHARD_TIMING="--leader-elect-lease-duration ${LEASE_DUR}s --leader-elect-renew-deadline ${RENEW}s --leader-elect-retry-period 1s --kill-after 1s"
INSTANCE_APPLY_FLAGS=${INSTANCE_APPLY_FLAGS:--v 4 --kube-api-qps 50 --kube-api-burst 50}
INSTANCES= LNS=

# descendants PID: every process under PID, deepest last.
descendants() {
  for _c in $(ps -o pid= --ppid "$1"); do echo "$_c"; descendants "$_c"; done
}

# start_instance ID [KUBECONFIG]: an instance with its state in
# $TMP/ID/state, every log in $TMP/ID/pipeline.log, its intents in
# $TMP/ID/intents.ndjson. RS_KIND and RS_QUEUE_NAME (rs-queue --name)
# choose the controller (the ReplicaSet one by default). INSTANCE_LEADER=1:
# a copy under leader election (the Lease $SHARD_GROUP) rather than a
# shard; INSTANCE_TIMING: rs-lease's timings ($SHARD_TIMING when unset,
# rs-lease's defaults when empty).
start_instance() {
  local shards=$SHARD_B
  [ -n "${INSTANCE_LEADER:-}" ] && shards=
  _d=$TMP/$1
  mkdir -p "$_d/state"; chmod 0700 "$_d/state"
  RS_STATE_DIR=$_d/state rs-queue serve --socket "$_d/state/queue.sock" \
    ${RS_QUEUE_NAME:+--name "$RS_QUEUE_NAME"} 2>"$_d/queue.log" &
  echo $! >"$_d/queue.pid"
  wait_for 10 test -S "$_d/state/queue.sock" || { echo "rs-queue of $1 did not start" >&2; return 1; }
  KUBECONFIG=${2:-$KUBECONFIG} RS_KIND=${RS_KIND:-ReplicaSet} RS_STATE_DIR=$_d/state RS_SHARDS=$shards RS_LEADER_ELECT=${INSTANCE_LEADER:-0} \
  RS_LEASE_NAME=$SHARD_GROUP RS_LEASE_FLAGS="-v 1 --lease-namespace $LNS --identity $1 ${INSTANCE_TIMING-$SHARD_TIMING}" \
  RS_WATCH_FLAGS="-v 1" RS_SYNC_FLAGS="-v 2" RS_APPLY_FLAGS="$INSTANCE_APPLY_FLAGS" RS_STOP_GRACE=5 \
  RS_RECORD_INTENTS=$_d/intents.ndjson \
    "${SHARD_PIPELINE:-$top/service/rs-pipeline}" 2>"$_d/pipeline.log" &
  echo $! >"$_d/lease.pid"
  INSTANCES="$INSTANCES $1"
}

# start_instances N PREFIX: instances PREFIX1 .. PREFIXN in a fresh lease
# namespace (unless $LNS is set), then waits until the buckets split
# fairly, so that no rebalance restarts a pipeline in the middle of a test.
start_instances() {
  local i ids=
  [ -n "$LNS" ] || LNS=$(new_ns shard) || return 1
  for i in $(seq 1 "$1"); do
    start_instance "$2$i" || return 1
    ids="$ids $2$i"
  done
  wait_for 60 fair_split $ids || { echo "start_instances: no fair split of $SHARD_B buckets over$ids" >&2; return 1; }
}

# stop_instances: TERM to each instance's rs-lease (which stops its
# pipeline and releases), then to its rs-queue; both waited for, since an
# rs-queue writes its stats file as it exits, into the state directory
# that the caller removes next.
stop_instances() {
  local pid i
  for i in $INSTANCES; do kill -TERM "$(cat "$TMP/$i/lease.pid")" 2>/dev/null; done
  for i in $INSTANCES; do
    pid=$(cat "$TMP/$i/lease.pid")
    wait_for 20 dead "$pid" ||
      kill -KILL "$pid" $(descendants "$pid") 2>/dev/null
    kill -TERM "$(cat "$TMP/$i/queue.pid")" 2>/dev/null
  done
  for i in $INSTANCES; do
    pid=$(cat "$TMP/$i/queue.pid")
    wait_for 10 dead "$pid" || kill -KILL "$pid" 2>/dev/null
  done
  INSTANCES=
}

# kill_instance ID: kill -9 of its rs-lease, everything under it and its
# rs-queue, all at once, as when its pod's node dies.
kill_instance() {
  _l=$(cat "$TMP/$1/lease.pid")
  _all="$_l $(descendants "$_l") $(cat "$TMP/$1/queue.pid")"
  disown "$_l" 2>/dev/null; disown "$(cat "$TMP/$1/queue.pid")" 2>/dev/null
  # shellcheck disable=SC2086
  kill -KILL $_all 2>/dev/null
  INSTANCES=$(echo " $INSTANCES " | sed "s/ $1 / /")
}

# held FILE: the buckets in a shard file ($TMP/FILE.json, or
# $TMP/ID/state/shards.json for an instance ID), one line; nheld: how many.
shard_file() { if [ -d "$TMP/$1/state" ]; then echo "$TMP/$1/state/shards.json"; else echo "$TMP/$1.json"; fi; }
held() { jq -r '.held | map(tostring) | join(" ")' "$(shard_file "$1")" 2>/dev/null; }
nheld() { jq -r '.held | length' "$(shard_file "$1")" 2>/dev/null || echo 0; }
nheld_is() { [ "$(nheld "$1")" = "$2" ]; }
# split_ok B ID...: every bucket in exactly one shard file.
split_ok() {
  _b=$1; shift
  for _i in "$@"; do held "$_i"; echo; done | tr ' ' '\n' | sed '/^$/d' | sort -n >"$TMP/split"
  [ "$(wc -l <"$TMP/split")" -eq "$_b" ] && [ "$(sort -u -n "$TMP/split" | wc -l)" -eq "$_b" ] &&
    [ "$(head -1 "$TMP/split")" = 0 ] && [ "$(tail -1 "$TMP/split")" = $((_b - 1)) ]
}
# fair_split ID...: every bucket held once, at least B/N each.
fair_split() {
  split_ok "$SHARD_B" "$@" || return 1
  for _i in "$@"; do
    [ "$(nheld "$_i")" -ge $(( SHARD_B / $# )) ] || return 1
  done
}
# instance_intents PREFIX: the intents every instance PREFIX* recorded.
instance_intents() { cat "$TMP/$1"[0-9]*/intents.ndjson; }
# recorded_intents: the intents start_controller's pipeline or instances
# recorded; false when there is no record (deb.sh's controller, under s6).
recorded_intents() {
  if sharded; then instance_intents i; else cat "$TMP/intents.ndjson" 2>/dev/null; fi
}

# pod_adds NS: how many pods of NS the recorder saw ADDED so far.
pod_adds() {
  jq -c "select(.type==\"ADDED\" and .object.metadata.namespace==\"$1\")" \
    "$TMP/pods.ndjson" 2>/dev/null | wc -l
}

# pod_peak NS: the most pods of NS that existed at once, by the recorder.
pod_peak() {
  jq -rn --arg ns "$1" '
    reduce (inputs | select(.object.metadata.namespace==$ns)) as $e
      ({n: 0, peak: 0, live: {}};
       if $e.type == "ADDED" and (.live[$e.object.metadata.name] | not)
       then .live[$e.object.metadata.name] = true | .n += 1
       elif $e.type == "DELETED" and .live[$e.object.metadata.name]
       then .live[$e.object.metadata.name] = false | .n -= 1
       else . end | .peak = ([.peak, .n] | max)) | .peak' "$TMP/pods.ndjson"
}

# rs_json NS NAME [KIND]: the object as JSON.
rs_json() { kubectl -n "$1" get "${3:-rs}" "$2" -o json; }

# live_pods NS SELECTOR: names of pods without deletionTimestamp.
live_pods() {
  kubectl -n "$1" get pods -l "$2" -o json |
    jq -r '.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name'
}

# set_pod_status NS POD PHASE READY(True|False) [LAST-TRANSITION]
set_pod_status() {
  _ltt=${5:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
  kubectl -n "$1" patch pod "$2" --subresource=status --type=merge -p \
    "{\"status\":{\"phase\":\"$3\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"$4\",\"lastTransitionTime\":\"$_ltt\"}]}}" >/dev/null
}

# make_rs NS NAME REPLICAS [LABEL] [EXTRA-SPEC-JSON]: a ReplicaSet whose pods
# carry app=LABEL (default NAME).
make_rs() {
  _extra=${5:-'{}'}
  jq -n --arg name "$2" --argjson n "$3" --arg app "${4:-$2}" --argjson extra "$_extra" '{
    apiVersion: "apps/v1", kind: "ReplicaSet", metadata: {name: $name},
    spec: ({replicas: $n, selector: {matchLabels: {app: $app}},
      template: {metadata: {labels: {app: $app}},
        spec: {containers: [{name: "c", image: "registry.k8s.io/pause:3.10"}]}}} + $extra)
  }' | kubectl -n "$1" apply -f - >/dev/null
}

# rs_status_is NS NAME JQ-EXPR: the ReplicaSet's .status satisfies EXPR;
# rc_status_is the same for a ReplicationController.
rs_status_is() {
  rs_json "$1" "$2" | jq -e ".status | $3" >/dev/null
}
rc_status_is() { rs_json "$1" "$2" rc | jq -e ".status | $3" >/dev/null; }

# status_watch NS NAME [KIND]: every version of the object from now on, as
# a watch sends them (managed fields included), in $TMP/NS.KIND.watch, until
# available_too_soon reads them.
STATUS_WATCH=
status_watch() {
  kubectl -n "$1" get "${3:-rs}" "$2" -w -o json --show-managed-fields \
    >"$TMP/$1.${3:-rs}.watch" 2>/dev/null &
  STATUS_WATCH=$!
}

# available_too_soon NS NAME KIND MIN-READY: the versions status_watch saw
# whose status counts more pods available than had been Ready for
# MIN-READY seconds when the status was written. The times are the
# apiserver's (the status write's managedFields time, in seconds) and the
# pods' (Ready's lastTransitionTime), not the test's clock: a slow machine
# writes later, never too soon. Prints "time available" of each, or nothing.
available_too_soon() {
  local ready rv
  # the recorder has the version current now, then stops
  rv=$(rs_json "$1" "$2" "$3" | jq -r .metadata.resourceVersion)
  wait_for 10 grep -q "\"resourceVersion\": \"$rv\"" "$TMP/$1.$3.watch" ||
    echo "available_too_soon: the watch did not reach resourceVersion $rv" >&2
  kill "$STATUS_WATCH" 2>/dev/null; wait "$STATUS_WATCH" 2>/dev/null
  ready=$(kubectl -n "$1" get pods -o json | jq -c --arg uid "$(rs_json "$1" "$2" "$3" | jq -r .metadata.uid)" '
    [.items[] | select(any(.metadata.ownerReferences[]?; .uid == $uid)) |
      .status.conditions[]? | select(.type == "Ready" and .status == "True") |
      .lastTransitionTime | fromdateiso8601]')
  jq -r --argjson min "$4" --argjson ready "$ready" '
    ([.metadata.managedFields[]? | select(.subresource == "status") | .time | fromdateiso8601] | max) as $t |
    select($t != null) | (.status.availableReplicas // 0) as $a |
    select($a > ([$ready[] | select(. + $min <= $t)] | length)) | "\($t | todate) \($a)"' \
    "$TMP/$1.$3.watch"
}

# count_live NS SELECTOR
count_live() { live_pods "$1" "$2" | wc -l; }
# count_is NS SELECTOR N: exactly N live pods now.
count_is() { [ "$(count_live "$1" "$2")" -eq "$3" ]; }
# wait_count NS SELECTOR N SECONDS: until exactly N live pods.
wait_count() { wait_for "$4" count_is "$1" "$2" "$3"; }

# quota_pods NS N: a pod quota of N, with the status a quota controller
# would give it (none runs here).
quota_pods() {
  if kubectl -n "$1" get quota q >/dev/null 2>&1; then
    kubectl -n "$1" patch quota q --type=merge -p "{\"spec\":{\"hard\":{\"pods\":\"$2\"}}}" >/dev/null
    kubectl -n "$1" patch quota q --subresource=status --type=merge \
      -p "{\"status\":{\"hard\":{\"pods\":\"$2\"}}}" >/dev/null
  else
    kubectl -n "$1" create quota q --hard=pods="$2" >/dev/null
    kubectl -n "$1" patch quota q --subresource=status --type=merge \
      -p "{\"status\":{\"hard\":{\"pods\":\"$2\"},\"used\":{\"pods\":\"0\"}}}" >/dev/null
  fi
}

# check_scale_cycle KIND NS: KIND (rs or rc) web of 3 pods in NS, made by
# the caller, scaled to 10, to 2, one pod deleted and replaced, then to 0;
# asserts pod counts and statuses on the way and the creates at the end.
check_scale_cycle() {
  _k=$1 _ns=$2
  assertTrue "3 pods" "wait_count $_ns app=web 3 30"
  kubectl -n "$_ns" scale "$_k" web --replicas 10 >/dev/null
  assertTrue "10 pods" "wait_count $_ns app=web 10 30"
  assertTrue "status 10" "wait_for 20 ${_k}_status_is $_ns web '.replicas == 10'"
  kubectl -n "$_ns" scale "$_k" web --replicas 2 >/dev/null
  assertTrue "2 pods" "wait_count $_ns app=web 2 30"
  _victim=$(live_pods "$_ns" app=web | head -1)
  kubectl -n "$_ns" delete pod "$_victim" --wait=false >/dev/null
  assertTrue "replaced" "wait_for 30 sh -c 'test \$(kubectl -n $_ns get pods -l app=web -o name | grep -cv $_victim) -eq 2'"
  assertTrue "2 pods after replacement" "wait_count $_ns app=web 2 30"
  kubectl -n "$_ns" scale "$_k" web --replicas 0 >/dev/null
  assertTrue "0 pods" "wait_count $_ns app=web 0 30"
  assertTrue "status 0" "wait_for 20 ${_k}_status_is $_ns web '.replicas == 0'"
  sleep 2
  assertEquals "creates: 3 + 7 + 1 replacement" 11 "$(pod_adds "$_ns")"
}

# check_quota_failure KIND NS: KIND (rs or rc) web of 4 pods in NS under a
# quota of 2 (the caller made both, quota first): 2 pods, a FailedCreate
# Warning about it from its controller, a ReplicaFailure condition; then
# the quota raised to 10: 4 pods and the condition gone.
check_quota_failure() {
  _k=$1 _ns=$2
  if [ "$_k" = rc ]; then
    _c=replication-controller _o=ReplicationController
  else
    _c=replicaset-controller _o=ReplicaSet
  fi
  assertTrue "2 pods within quota" "wait_count $_ns app=web 2 30"
  assertTrue "FailedCreate event from $_c" \
    "wait_for 20 sh -c \"kubectl -n $_ns get events -o json | jq -e '[.items[] | select(.reason==\\\"FailedCreate\\\" and .type==\\\"Warning\\\" and .source.component==\\\"$_c\\\" and .involvedObject.kind==\\\"$_o\\\")] | length > 0'\""
  assertTrue "ReplicaFailure condition" "wait_for 20 ${_k}_status_is $_ns web '[.conditions[]? | select(.type==\"ReplicaFailure\" and .reason==\"FailedCreate\" and .status==\"True\")] | length == 1'"
  quota_pods "$_ns" 10
  assertTrue "recovered to 4" "wait_count $_ns app=web 4 60"
  assertTrue "condition cleared" "wait_for 30 ${_k}_status_is $_ns web '([.conditions[]? | select(.type==\"ReplicaFailure\")] | length == 0) and .replicas == 4'"
}

# rs-metrics: MURL is where the one metrics_start started listens.
MURL=
# metrics_start [FLAGS...]: rs-metrics on a free port; sets MURL.
metrics_start() {
  : >"$TMP/metrics.log"
  rs_bg rs-metrics --listen 127.0.0.1:0 -v 3 "$@" 2>"$TMP/metrics.log"
  wait_for 10 grep -q 'listening on' "$TMP/metrics.log" || return 1
  MURL=$(sed -n 's|.*listening on \(http://[0-9.]*:[0-9]*\)/$|\1|p' "$TMP/metrics.log" | tail -1)
  [ -n "$MURL" ]
}

code() { curl -s -o /dev/null -w '%{http_code}' "$MURL$1"; }
is_code() { [ "$(code "$1")" = "$2" ]; }
body() { curl -s "$MURL$1"; }
scrape() { curl -s -f "$MURL/metrics" >"$1"; }

# value FILE SERIES: the value of one series, exactly as written.
value() { mawk -v s="$2" '$1 == s { print $2; f = 1 } END { if (!f) print "none" }' "$1"; }
# total FILE PREFIX: the sum of the series starting with PREFIX.
total() { mawk -v p="$2" 'index($0, p) == 1 { t += $NF } END { print t + 0 }' "$1"; }

# kubeconfig_write FILE SERVER CLUSTER-YAML USER-YAML: a kubeconfig of one
# cluster, user and context; the YAML stanzas indented under "cluster:"
# (after its server) and "user:".
kubeconfig_write() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $2
$3
contexts:
- name: test
  context: {cluster: test, user: u}
users:
- name: u
  user:
$4
current-context: test
EOF
}

# sa_kubeconfig FILE NS SA: the test cluster's server and CA (embedded, so
# that the file stands alone, in a container too) and a token of the
# ServiceAccount NS/SA, nothing else; mode 0600.
sa_kubeconfig() {
  local server token
  server=$(cluster_server) || return 1
  token=$(kubectl -n "$2" create token "$3" --duration 2h) || return 1
  [ -n "$token" ] || return 1
  kubeconfig_write "$1" "$server" \
    "    certificate-authority-data: $(base64 -w0 "$RS_TEST_CLUSTER/ca.crt")" \
    "    token: $token" && chmod 0600 "$1"
}
