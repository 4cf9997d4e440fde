#!/bin/bash
# run-all: slow
# Faults: the controller converges to exactly the desired pods, creates no
# pod twice and loses no key while the apiserver restarts, while etcd is
# compacted under the watches (410 Gone), while the apiserver is
# unreachable (a proxy between the controller and the apiserver refuses or
# drops connections), while it answers 429 and 5xx, and while stages are
# SIGKILLed at random. The pipeline runs as it runs under s6: one unit,
# started again whenever it exited (a plain pipeline; FAULT_PIPELINE=service
# runs service/rs-pipeline), and rs-queue started again when killed. Pod creates are counted by a recorder
# (rs-watch pods) that reads the apiserver directly, not through the proxy.
#
# Sizes: short by default (make test-slow); tests/soak/run sets the long ones:
#   FAULT_PODS (200) FAULT_RESTARTS (2) FAULT_OUTAGE (10 s)
#   FAULT_CHURN_ROUNDS (4) CRASH_SECONDS (40) FAULT_APPLY_FLAGS
# doc/reliability.md describes every test and its figures.
# Figures (time to converge after each fault, faults seen) are printed in
# the log as "figure: ..." and appended to $RS_FIGURES when set.
. "$(dirname "$0")/lib.sh"

FAULT_PODS=${FAULT_PODS:-200}
FAULT_RESTARTS=${FAULT_RESTARTS:-2}
FAULT_OUTAGE=${FAULT_OUTAGE:-10}
FAULT_CHURN_ROUNDS=${FAULT_CHURN_ROUNDS:-4}
CRASH_SECONDS=${CRASH_SECONDS:-40}
# rs-apply at its default rate (20 writes a second), so that a scale-up
# lasts long enough for the faults to land in the middle of it.
APPLY_FLAGS=${FAULT_APPLY_FLAGS:---kube-api-qps 20 --kube-api-burst 30}
WATCH_FLAGS=
CONVERGE=${FAULT_CONVERGE_TIMEOUT:-$(( 120 + FAULT_PODS / 4 ))}
FAULTPROXY=${FAULTPROXY:-$RS_BIN/../test/faultproxy}
[ -x "$FAULTPROXY" ] || FAULTPROXY=$top/build/test/faultproxy

figure() {  # figure TEXT: a measured figure, for the log and $RS_FIGURES
  echo "figure: $SUITE: $*"
  [ -n "${RS_FIGURES:-}" ] && echo "$SUITE: $*" >>"$RS_FIGURES"
  return 0
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- the controller under test --------------------------------------------

# start_proxy, proxy, apiserver_port
. "$top/tests/env/proxy.sh"

# queue_loop DIR: rs-queue serve (with QUEUE_FLAGS), started again
# whenever it exits.
queue_loop() {
  while [ ! -e "$1/stop" ]; do
    rs-queue serve --socket "$1/state/queue.sock" ${QUEUE_FLAGS:-} 2>>"$1/queue.log" &
    echo $! >"$1/queue.pid"
    wait $!
    echo "$(now) rs-queue exited" >>"$1/restarts"
    sleep 0.3
  done
}

# pipeline_loop DIR KUBECONFIG: rs-watch | rs-sync | rs-apply as one unit,
# started again whenever it exited, as s6 does with the pipeline service.
# A stage's death ends the others by EOF or EPIPE. FAULT_PIPELINE=service
# runs service/rs-pipeline instead (which also stops the other stages).
pipeline_loop() {
  _pd=$1
  while [ ! -e "$_pd/stop" ]; do
    echo "$(now) pipeline start" >>"$_pd/restarts"
    if [ "${FAULT_PIPELINE:-}" = service ]; then
      KUBECONFIG=$2 RS_STATE_DIR=$_pd/state RS_STOP_GRACE=10 \
      RS_WATCH_FLAGS="-v 1 $WATCH_FLAGS" RS_SYNC_FLAGS="-v 2" RS_APPLY_FLAGS="-v 2 $APPLY_FLAGS" \
        "$top/service/rs-pipeline" 2>>"$_pd/pipeline.log" &
    else
      KUBECONFIG=$2 RS_STATE_DIR=$_pd/state bash -c \
        "rs-watch -v 1 --batch 20ms $WATCH_FLAGS replicasets pods 2>>'$_pd/pipeline.log' |
         rs-sync -v 2 2>>'$_pd/pipeline.log' |
         rs-apply -v 2 $APPLY_FLAGS 2>>'$_pd/pipeline.log'" &
    fi
    echo $! >"$_pd/pipeline.pid"
    wait $!
    echo "$(now) pipeline exit" >>"$_pd/restarts"
    sleep 0.5
  done
}

# start_ctl DIR CLUSTER [KUBECONFIG]: proxy, rs-queue, the pipeline through
# the proxy (as KUBECONFIG's user, default the cluster's admin), and the pod
# recorder reading CLUSTER directly as admin (DIR/pods.ndjson).
start_ctl() {
  _d=$1
  mkdir -p "$_d/state" && chmod 0700 "$_d/state"
  rm -f "$_d/stop" "$_d/pids"
  start_proxy "$_d" "$2" "${3:-$2/kubeconfig}" || { echo "faultproxy did not start" >&2; return 1; }
  # the recorder backs off little: it must not miss a pod between a fault
  # and its relist
  KUBECONFIG=$2/kubeconfig rs-watch --backoff-initial 100ms --backoff-max 500ms pods \
    >"$_d/pods.ndjson" 2>"$_d/podwatch.log" &
  echo $! >>"$_d/pids"
  queue_loop "$_d" &
  echo $! >>"$_d/pids"
  wait_for 10 test -S "$_d/state/queue.sock" || { echo "rs-queue did not start" >&2; return 1; }
  pipeline_loop "$_d" "$_d/proxy.kubeconfig" &
  echo $! >>"$_d/pids"
}

# stop_ctl DIR: everything start_ctl started, stages included.
stop_ctl() {
  _d=$1
  [ -f "$_d/pids" ] || return 0
  touch "$_d/stop"
  _st=$(stage_pids "$_d")
  for _p in $(cat "$_d/pids") $_st $(cat "$_d/pipeline.pid" "$_d/queue.pid" 2>/dev/null); do
    kill -TERM "$_p" 2>/dev/null
  done
  for _ in $(seq 1 50); do
    _alive=
    for _p in $_st $(cat "$_d/pipeline.pid" "$_d/queue.pid" 2>/dev/null); do
      kill -0 "$_p" 2>/dev/null && _alive=1
    done
    [ -z "$_alive" ] && break
    sleep 0.2
  done
  for _p in $_st $(cat "$_d/pipeline.pid" "$_d/queue.pid" 2>/dev/null); do
    kill -KILL "$_p" 2>/dev/null
  done
  for _p in $(cat "$_d/pids"); do wait "$_p" 2>/dev/null; done
  rm -f "$_d/pids"
}

# stage_pids DIR: the running stages of DIR's pipeline.
stage_pids() {
  [ -f "$1/pipeline.pid" ] || return 0
  pgrep -P "$(cat "$1/pipeline.pid")" 2>/dev/null
}

# stage_pid DIR NAME: one stage's pid (rs-watch, rs-sync, rs-apply).
stage_pid() {
  for _p in $(stage_pids "$1"); do
    [ "$(cat "/proc/$_p/comm" 2>/dev/null)" = "$2" ] && { echo "$_p"; return 0; }
  done
  return 1
}

# --- checks -----------------------------------------------------------------

C=$TMP/ctl   # the controller on the shared test cluster

# adds DIR NS [APP]: pods of NS (with label app=APP) the recorder saw ADDED.
adds() {
  jq -c --arg ns "$2" --arg app "${3:-}" 'select(.type=="ADDED" and
      .object.metadata.namespace==$ns and
      ($app == "" or .object.metadata.labels.app == $app))' "$1/pods.ndjson" 2>/dev/null | wc -l
}

# deletes DIR NS: DELETED events of NS the recorder saw.
deletes() {
  jq -c --arg ns "$2" 'select(.type=="DELETED" and .object.metadata.namespace==$ns)' \
    "$1/pods.ndjson" 2>/dev/null | wc -l
}

# settled NS NAME N: exactly N live pods and the status says so.
settled() {
  count_is "$1" "app=$2" "$3" &&
  rs_status_is "$1" "$2" ".replicas == $3 and (.fullyLabeledReplicas // 0) == $3"
}

# observed NS NAME: status.observedGeneration caught up with the spec.
observed() {
  rs_json "$1" "$2" | jq -e '.status.observedGeneration == .metadata.generation' >/dev/null
}

# drain NS NAME...: remove the test's ReplicaSets and pods without the
# controller (no garbage collector runs here), so later tests list less.
drain() {
  _ns=$1; shift
  for _n in "$@"; do kubectl -n "$_ns" delete rs "$_n" --wait=false >/dev/null 2>&1; done
  kubectl -n "$_ns" delete pods --all --wait=false >/dev/null 2>&1
}

restarts_of() { grep -c "$2" "$1/restarts" 2>/dev/null || true; }

oneTimeSetUp() {
  need_cluster || return
  # -v 3: each RETRY logged with the key's failures in a row
  QUEUE_FLAGS="-v 3" start_ctl "$C" "$RS_TEST_CLUSTER" || return 1
}

oneTimeTearDown() {
  stop_ctl "$C"
  [ -n "${OWN_CLUSTER:-}" ] && own_down
  if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$TMP" ]; then cp -r "$TMP" "$RS_KEEP_LOGS"; fi
  rm -rf "$RS_STATE_DIR"
}

# The shared cluster's apiserver back after a test that stopped it.
apiserver_up() { tests/env/cluster status "$RS_TEST_CLUSTER"; }

cd "$top" || exit 1

# --- kube-apiserver restarted during a scale-up ---------------------------

test_apiserver_restarts_during_scale_up() {
  need_cluster || return
  ns=$(new_ns restart)
  n=$FAULT_PODS
  make_rs "$ns" web "$n"
  for i in $(seq 1 "$FAULT_RESTARTS"); do
    # restart at i/(R+2) of the way, so every restart lands mid-scale-up
    # with room to spare: on a loaded machine the polls between reaching
    # the point and the restart take seconds, and the scale-up goes on
    at=$(( n * i / (FAULT_RESTARTS + 2) ))
    wait_for 120 sh -c "[ \$(kubectl -n $ns get pods -o name | wc -l) -ge $at ]" ||
      { fail "restart $i: the scale-up did not reach $at/$n pods in 120 s ($(count_live "$ns" app=web) pods)"
        drain "$ns" web; return; }
    live=$(count_live "$ns" app=web)
    t0=$(now)
    tests/env/cluster restart-apiserver "$RS_TEST_CLUSTER" >/dev/null 2>&1 ||
      { fail "the apiserver did not come back"; return; }
    figure "apiserver restart $i at $live/$n pods took $(since "$t0") s"
    [ "$live" -lt "$n" ] || fail "restart $i came after the scale-up ($live/$n pods)"
  done
  t_up=$(now)
  assertTrue "converged to $n pods" "wait_for $CONVERGE settled $ns web $n"
  figure "converged $(since "$t_up") s after the last of $FAULT_RESTARTS apiserver restarts ($n pods)"
  sleep 2
  assertEquals "pods created" "$n" "$(adds "$C" "$ns")"
  assertEquals "pods deleted (a surplus)" 0 "$(deletes "$C" "$ns")"
  assertEquals "live pods" "$n" "$(count_live "$ns" app=web)"
  assertTrue "observedGeneration" "observed $ns web"
  drain "$ns" web
}

# --- the apiserver unreachable (connections refused) during a scale-up -----

test_apiserver_unreachable_during_scale_up() {
  need_cluster || return
  ns=$(new_ns outage)
  n=$FAULT_PODS
  make_rs "$ns" web "$n"
  wait_for 120 sh -c "[ \$(kubectl -n $ns get pods -o name | wc -l) -ge $(( n / 3 )) ]"
  live=$(count_live "$ns" app=web)
  proxy down "$C"
  sleep "$FAULT_OUTAGE"
  during=$(count_live "$ns" app=web)
  proxy up "$C"
  t_up=$(now)
  figure "outage of $FAULT_OUTAGE s (refused) from $live/$n pods; $((during - live)) created while it lasted"
  [ "$live" -lt "$n" ] || fail "the outage came after the scale-up ($live/$n pods)"
  # the proxy's own connections were reset: nothing went around it
  assertTrue "no pod created while unreachable (at most those in flight)" "[ $((during - live)) -le 30 ]"
  assertTrue "converged to $n pods" "wait_for $CONVERGE settled $ns web $n"
  figure "converged $(since "$t_up") s after a $FAULT_OUTAGE s outage ($n pods)"
  sleep 2
  assertEquals "pods created" "$n" "$(adds "$C" "$ns")"
  assertEquals "pods deleted (a surplus)" 0 "$(deletes "$C" "$ns")"
  assertTrue "observedGeneration" "observed $ns web"

  # packets dropped (connections hang, nothing answers) during a scale-down
  m=$(( n / 2 ))
  kubectl -n "$ns" scale rs web --replicas "$m" >/dev/null
  wait_for 60 sh -c "[ \$(kubectl -n $ns get pods -o name | wc -l) -le $(( n - n / 6 )) ]"
  left=$(count_live "$ns" app=web)
  proxy drop "$C"
  sleep "$(( (FAULT_OUTAGE + 1) / 2 ))"
  proxy up "$C"
  t_up=$(now)
  figure "packets dropped for $(( (FAULT_OUTAGE + 1) / 2 )) s during a scale-down from $left pods"
  assertTrue "converged to $m pods" "wait_for $CONVERGE settled $ns web $m"
  figure "converged $(since "$t_up") s after the drop ($n -> $m pods)"
  sleep 2
  assertEquals "no pod created by the scale-down" "$n" "$(adds "$C" "$ns")"
  assertEquals "pods deleted" "$(( n - m ))" "$(deletes "$C" "$ns")"
  drain "$ns" web
}

# --- connections reset under rs-apply's creates: none sent twice ----------

# libcurl sends a request again when the reused connection it went on dies
# before an answer; for a POST the apiserver may already have carried out,
# that is a pod created twice. Every create rs-apply attempts is logged at
# -v 4: the pods may not outnumber the attempts.
test_no_create_sent_twice_on_reset() {
  need_cluster || return
  d=$TMP/dup
  mkdir -p "$d"
  start_proxy "$d" "$RS_TEST_CLUSTER" "$KUBECONFIG" || { fail "faultproxy did not start"; return; }
  extra=0 failed=0 pods=0 tries=0
  for trial in 1 2 3 4; do
    ns=$(new_ns dup)
    jq -cn --arg ns "$ns" '{apiVersion: "apps/v1", kind: "ReplicaSet", namespace: $ns,
        name: "web", uid: "00000000-0000-4000-8000-00000000d0b1", resourceVersion: "1"} as $o |
      ({op: "create", key: "\($ns)/web", owner: $o, count: 150,
        template: {metadata: {labels: {app: "web"}},
          spec: {containers: [{name: "c", image: "registry.k8s.io/pause:3.10"}]}}},
       {op: "end", key: "\($ns)/web", owner: $o})' >"$d/intents"
    ( for _ in $(seq 1 16); do sleep 0.3; proxy cut "$d"; done ) &
    cutter=$!
    rs-apply --kubeconfig "$d/proxy.kubeconfig" --no-queue -v 4 --kube-api-qps 40 \
      --kube-api-burst 40 <"$d/intents" 2>"$d/apply-$trial.log"
    wait $cutter
    a=$(grep -cE "POST /api/v1/namespaces/$ns/pods(\?[^ :]*)?:" "$d/apply-$trial.log")
    n=$(kubectl -n "$ns" get pods -o name | wc -l)
    f=$(grep -c 'unable to create a pod' "$d/apply-$trial.log")
    tries=$((tries + a)) pods=$((pods + n)) failed=$((failed + f))
    [ "$n" -gt "$a" ] && extra=$((extra + n - a))
    kubectl -n "$ns" delete pods --all --wait=false >/dev/null 2>&1
  done
  for p in $(cat "$d/pids"); do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  figure "4 x 150 creates with connections reset every 0.3 s: $tries attempts, $failed failed, $pods pods"
  assertTrue "connections were reset under the creates ($failed creates failed)" "[ $failed -gt 0 ] || grep -q 'resets=[1-9]' '$d/proxy.log'"
  assertEquals "pods created beyond the creates attempted" 0 "$extra"
}

# --- a watch cut once established is started again at once ---------------

# pod_comes_soon DIR NS POD WHEN FIGURE: a pod made now reaches the
# rs-watch whose output is DIR/out within 10 s, well inside its 30-60 s
# backoff step; FIGURE (a printf format) gets the seconds it took.
pod_comes_soon() {
  _t=$(now)
  kubectl -n "$2" run "$3" --image=example.invalid/none --restart=Never >/dev/null
  assertTrue "the pod made $4 comes in seconds, not after the 30 s step" \
    "wait_for 10 grep -q $3 $1/out" &&
    figure "$(printf "$5" "$(since "$_t")") (backoff step 30-60 s)"
}

# rs-watch behind a proxy, with a backoff step of 30-60 s: a stream that
# was established and is then cut (the proxy resets it, as an apiserver
# restart does) is watched again at once, as client-go's StreamWatcher
# takes the cut for the stream's end; a pod created after the cut comes
# within seconds. Refused connections still back off, until the server
# says it is ready again.
test_cut_watch_resumes_at_once() {
  need_cluster || return
  d=$TMP/cutwatch
  mkdir -p "$d"
  start_proxy "$d" "$RS_TEST_CLUSTER" "$KUBECONFIG" || { fail "faultproxy did not start"; return; }
  ns=$(new_ns cutwatch)
  KUBECONFIG=$d/proxy.kubeconfig rs-watch -v 2 --backoff-initial 30s --backoff-max 60s \
    -n "$ns" pods >"$d/out" 2>"$d/log" &
  w=$!
  assertTrue "SYNCED" "wait_for 20 grep -q SYNCED $d/out"
  sleep 2     # not a "very short watch": established for over a second
  proxy cut "$d"
  pod_comes_soon "$d" "$ns" after-cut "after the cut" "a cut watch: the next event %s s after the cut"
  assertTrue "the cut was seen: $(grep -v '^I' "$d/log" | tail -2)" \
    "grep -q 'watch of pods cut after' $d/log"
  assertFalse "no backoff step for the cut" "grep -q 'retrying in' $d/log"
  # the protection stands: a refused watch is not sent again before its
  # backoff step ends, unless the server says it is ready (GET /readyz
  # every 0.25 s, which refusals leave unanswered)
  proxy down "$d"
  assertTrue "a refused watch backs off 30 s or more" \
    "wait_for 10 grep -Eq 'unable to watch pods: .*retrying in ([3-9][0-9]|1[0-9][0-9])\.' $d/log"
  sleep 3
  assertEquals "one refused watch in 3 s, not one per readiness probe" 1 \
    "$(grep -c 'unable to watch pods' "$d/log")"
  proxy up "$d"
  pod_comes_soon "$d" "$ns" after-up "once the server is back" \
    "a refused watch: the next event %s s after the server came back"
  assertTrue "the readiness probe ended the step: $(grep -v '^I' "$d/log" | tail -2)" \
    "grep -q 'the API server is ready again: watch of pods at once' $d/log"
  kill "$w" 2>/dev/null
  wait "$w" 2>/dev/null
  for p in $(cat "$d/pids"); do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
}

# --- keys refused by a server that is away are queued when it is back ------

# rs-apply behind the proxy, rs-watch not; rs-queue parks a RETRY for 300 s
# (--base-delay 300s). With the proxy down the ReplicaSet's creates are
# refused (ECONNREFUSED): RETRY, and rs-apply parks the key until the server
# says it is ready (GET /readyz every 0.25 s). The proxy up: the pods come
# within seconds, where the retry is due 300 s after the failure and
# nothing else about the ReplicaSet changes to queue it.
test_refused_key_queued_when_server_ready() {
  need_cluster || return
  own_up "$TMP/refused" || return
  WATCH_FLAGS="--kubeconfig $OWN_CLUSTER/kubeconfig" QUEUE_FLAGS="-v 3 --base-delay 300s" \
    start_ctl "$OWN" "$OWN_CLUSTER" || { fail "unable to start the controller"; own_down; return; }
  ns=refused
  ok create namespace $ns >/dev/null
  assertTrue "the controller is up" "wait_for 30 grep -q 'SYNCED' $OWN/pods.ndjson"
  proxy down "$OWN"
  KUBECONFIG=$OWN_CLUSTER/kubeconfig make_rs $ns web 3
  assertTrue "the creates were refused" \
    "wait_for 30 grep -q '$ns/web: unable to create a pod' $OWN/pipeline.log"
  assertTrue "the key was parked until the server is ready" \
    "wait_for 10 grep -q '$ns/web: the API server refuses connections' $OWN/pipeline.log"
  assertTrue "rs-queue holds its retry" "wait_for 10 one_waits $OWN"
  sleep 2
  assertEquals "no pod while the server is away" 0 "$(adds "$OWN" "$ns")"
  proxy up "$OWN"
  t_up=$(now)
  assertTrue "3 pods within 20 s of the server's return (the retry is due in 300 s)" \
    "wait_for 20 own_settled $ns web 3" &&
    figure "a key refused by a server that was away: settled $(since "$t_up") s after its return (retry due in 300 s)"
  assertTrue "rs-apply said it queued the parked keys" \
    "grep -Eq 'the API server is ready again: [1-9][0-9]* of [0-9]+ keys' $OWN/pipeline.log"
  sleep 1
  assertEquals "pods created" 3 "$(adds "$OWN" "$ns")"
  own_down
}

# --- a 410 relists at once ----------------------------------------------------

# rs-watch behind a proxy, on a cluster without watch cache (watches served
# by etcd), with a backoff step of 30-60 s. etcd is compacted past its
# resume point and its watch cut: it watches again at once and gets 410,
# which relists at once (client-go would wait one step first): the relist's
# BOOKMARK comes within seconds.
test_410_relists_at_once() {
  need_cluster || return
  own_up "$TMP/gone410" RS_TEST_APISERVER_FLAGS=--watch-cache=false || return
  d=$OWN
  start_proxy "$d" "$OWN_CLUSTER" "$OWN_CLUSTER/kubeconfig" || { fail "faultproxy did not start"; own_down; return; }
  ok create namespace g >/dev/null
  KUBECONFIG=$d/proxy.kubeconfig rs-watch -v 2 --backoff-initial 30s --backoff-max 60s \
    -n g pods >"$d/out" 2>"$d/log" &
  w=$!
  assertTrue "SYNCED" "wait_for 20 grep -q SYNCED $d/out"
  # writes elsewhere, then a compaction past rs-watch's resume point
  ok create namespace elsewhere >/dev/null
  ok -n elsewhere create configmap c --from-literal=a=b >/dev/null
  tests/env/cluster compact "$OWN_CLUSTER" >/dev/null 2>&1
  sleep 1.5   # established for over a second: not a "very short watch"
  proxy cut "$d"
  t_cut=$(now)
  assertTrue "the relist's BOOKMARK within 10 s of the cut, no backoff step" \
    "wait_for 10 grep -q '\"relist\":true' $d/out" &&
    figure "410 after a cut: the relist's BOOKMARK $(since "$t_cut") s after the cut (backoff step 30-60 s)"
  assertTrue "the watch got 410: $(grep -v '^I' "$d/log" | tail -2)" "grep -q 'relisting after 410' $d/log"
  assertFalse "no backoff step" "grep -q 'retrying in\|after a backoff' $d/log"
  kill "$w" 2>/dev/null
  wait "$w" 2>/dev/null
  own_down
}

# --- etcd compacted under the watches, connections cut: 410 Gone ----------

# own_up DIR [VAR=VALUE...]: a cluster of this test's own (etcd, apiserver),
# started with the given environment (tests/env/cluster reads
# RS_TEST_MAX_INFLIGHT, RS_TEST_MAX_MUTATING_INFLIGHT, RS_TEST_APISERVER_FLAGS);
# taken down by own_down, or by the suite's end.
own_up() {
  OWN_CLUSTER=$1; shift
  cluster_of_our_own "$OWN_CLUSTER" "$@" || return 1
  OWN=$OWN_CLUSTER.ctl
  mkdir -p "$OWN"
}

own_down() {
  stop_ctl "$OWN"
  tests/env/cluster down "$OWN_CLUSTER" >/dev/null 2>&1
  OWN= OWN_CLUSTER=
}

ok() { KUBECONFIG=$OWN_CLUSTER/kubeconfig kubectl "$@"; }

# own_settled NS NAME N: as settled, on the own cluster.
own_settled() { KUBECONFIG=$OWN_CLUSTER/kubeconfig settled "$@"; }
own_observed() { KUBECONFIG=$OWN_CLUSTER/kubeconfig observed "$@"; }

test_watch_gone_during_churn() {
  need_cluster || return
  # no watch cache: watches are served by etcd, so a watch that resumes
  # from before a compaction is answered 410 Gone, and so is the next page
  # of a list (small pages) whose continue token predates it
  own_up "$TMP/gone" RS_TEST_APISERVER_FLAGS=--watch-cache=false || return
  WATCH_FLAGS="--list pages --page-size 20" start_ctl "$OWN" "$OWN_CLUSTER" || { fail "unable to start the controller"; return; }
  ns=churn
  ok create namespace $ns >/dev/null
  n=$(( FAULT_PODS / 4 ))
  for r in a b c d; do KUBECONFIG=$OWN_CLUSTER/kubeconfig make_rs "$ns" "$r" 0; done
  created=0 compactions=0
  # every round scales each ReplicaSet to a random size, compacts etcd and
  # cuts the controller's connections, so that every watch resumes from a
  # compacted resourceVersion
  for round in $(seq 1 "$FAULT_CHURN_ROUNDS"); do
    for r in a b c d; do
      want=$(( RANDOM % (n + 1) ))
      eval "prev=\${want_$r:-0}"
      [ "$want" -gt "$prev" ] && eval "inc_$r=\$(( \${inc_$r:-0} + want - prev ))"
      eval "want_$r=$want"
      ok -n "$ns" scale rs "$r" --replicas "$want" >/dev/null
    done
    for _ in 1 2 3; do
      sleep 0.7
      # (a compaction with nothing new since the last one is refused)
      tests/env/cluster compact "$OWN_CLUSTER" >/dev/null 2>&1 && compactions=$((compactions + 1))
    done
    proxy cut "$OWN"
  done
  t_end=$(now)
  for r in a b c d; do
    eval "want=\$want_$r inc=\${inc_$r:-0}"
    assertTrue "$r converged to $want" "wait_for $CONVERGE own_settled $ns $r $want"
    assertTrue "$r observedGeneration" "wait_for 30 own_observed $ns $r"
    c=$(adds "$OWN" "$ns" "$r")
    created=$((created + c))
    assertTrue "$r: $c creates, at most the $inc the scale-ups asked for" "[ $c -le $inc ]"
  done
  figure "converged $(since "$t_end") s after $FAULT_CHURN_ROUNDS rounds of churn, $compactions compactions and cut connections ($created creates)"
  gone=$(grep -c 'relisting after 410' "$OWN/pipeline.log")
  expired=$(grep -c 'continue token of the .* list expired' "$OWN/pipeline.log")
  figure "410 Gone: $gone watches relisted, $expired lists restarted on an expired continue token"
  assertTrue "the watches saw 410 Gone and relisted ($gone)" "[ $gone -gt 0 ]"
  own_down
}

# --- a relist wakes a key parked in a long retry ---------------------------

# log_time FILE REGEX: the time (Unix seconds) of FILE's last info line
# matching REGEX ("I1126 23:05:01.123456 prog] ...", UTC, this year).
log_time() {
  grep -E "$2" "$1" | tail -1 | awk -v y="$(date -u +%Y)" '{
      printf "%s-%s-%s %s\n", y, substr($1, 2, 2), substr($1, 4, 2), $2 }' |
    { read -r _t && date -u -d "$_t" +%s.%N; }
}

# queue_waiting DIR: keys waiting in DIR's rs-queue delay heap; one_waits
# DIR: just one.
queue_waiting() { rs-queue --queue "$1/state/queue.sock" stats | jq -r .waiting; }
one_waits() { [ "$(queue_waiting "$1")" = 1 ]; }

# A ReplicaSet whose creates are forbidden (a quota of 0 pods) fails its
# rounds and is parked by rs-queue for 300 s (--base-delay 300s: the first
# RETRY already waits that long; the issue saw 163.84 s after 17 failures
# in a row at the default 5 ms). The quota goes, which the controller does
# not watch; then the apiserver restarts and etcd is compacted, so that the
# watches resume from a version that is gone: 410, relist. Nothing about
# the ReplicaSet changed, yet the relist queues it, as client-go's Replace
# calls updateRS on every listed ReplicaSet, and it converges while its
# retry still waits. Without that, nothing would sync it before its retry
# is due, 300 s after its failure.
test_relist_wakes_a_parked_key() {
  need_cluster || return
  own_up "$TMP/parked" || return
  QUEUE_FLAGS="-v 3 --base-delay 300s" start_ctl "$OWN" "$OWN_CLUSTER" ||
    { fail "unable to start the controller"; return; }
  ns=parked n=5
  ok create namespace $ns >/dev/null
  KUBECONFIG=$OWN_CLUSTER/kubeconfig quota_pods $ns 0
  KUBECONFIG=$OWN_CLUSTER/kubeconfig make_rs $ns web $n
  assertTrue "the creates were refused" \
    "wait_for 60 grep -q '$ns/web: unable to create a pod' $OWN/pipeline.log"
  assertTrue "the key is parked in rs-queue's delay heap" "wait_for 20 one_waits $OWN"
  t_parked=$(now)
  ok -n $ns delete quota q >/dev/null
  sleep 2
  assertEquals "no pod while parked" 0 "$(adds "$OWN" "$ns")"
  tests/env/cluster restart-apiserver "$OWN_CLUSTER" >/dev/null 2>&1 ||
    { fail "the apiserver did not come back"; own_down; return; }
  tests/env/cluster compact "$OWN_CLUSTER" >/dev/null 2>&1
  assertTrue "converged to $n pods after the relist, well before the retry is due" \
    "wait_for 120 own_settled $ns web $n"
  waiting=$(queue_waiting "$OWN")
  left=$(awk -v a="$t_parked" -v b="$(now)" 'BEGIN { printf "%.0f", 300 - (b - a) }')
  assertEquals "the parked retry still waits (due in about $left s)" 1 "$waiting"
  assertTrue "the replicasets watch relisted after 410" \
    "grep -q 'watch of replicasets .*relisting after 410' $OWN/pipeline.log"
  assertEquals "one pipeline all along (a new one lists everything anew)" 1 \
    "$(restarts_of "$OWN" 'pipeline start')"
  sleep 2
  assertEquals "pods created" "$n" "$(adds "$OWN" "$ns")"
  # from the relist's end (rs-watch's log) to the last create the recorder
  # saw (its "at"); the QPS floor of 5 creates at 20/s is 0.25 s
  t_list=$(log_time "$OWN/pipeline.log" 'rs-watch\] listed [0-9]+ replicasets')
  t_last=$(jq -r --arg ns $ns 'select(.type == "ADDED" and .object.metadata.namespace == $ns) | .at' \
    "$OWN/pods.ndjson" | sort -n | tail -1)
  [ -n "$t_list" ] && [ -n "$t_last" ] &&
    figure "a key parked for 300 s: $n pods created $(awk -v a="$t_list" -v b="$t_last" \
      'BEGIN { printf "%.2f", b - a }') s after the replicasets relist"
  own_down
}

# --- random SIGKILL of random stages while ReplicaSets scale --------------

test_stage_crashes_during_churn() {
  need_cluster || return
  ns=$(new_ns crash)
  max=$(( FAULT_PODS / 8 ))
  [ "$max" -ge 4 ] || max=4
  names="a b c d e"
  for r in $names; do make_rs "$ns" "$r" 0; eval "want_$r=0 inc_$r=0 peak_$r=0"; done
  kills=0 kw=0 ks=0 ka=0 kq=0 victims=
  end=$(( $(date +%s) + CRASH_SECONDS ))
  next_scale=0
  while [ "$(date +%s)" -lt "$end" ]; do
    if [ "$(date +%s)" -ge "$next_scale" ]; then
      r=$(set -- $names; shift $((RANDOM % 5)); echo "$1")
      want=$(( RANDOM % (max + 1) ))
      eval "prev=\$want_$r"
      [ "$want" -gt "$prev" ] && eval "inc_$r=\$(( inc_$r + want - prev ))"
      eval "want_$r=$want"
      eval "[ $want -gt \$peak_$r ] && peak_$r=$want"
      kubectl -n "$ns" scale rs "$r" --replicas "$want" >/dev/null
      next_scale=$(( $(date +%s) + 1 + RANDOM % 2 ))
    fi
    sleep "$(( 2 + RANDOM % 3 ))"
    # every stage in turn, in a random order each round
    [ -n "$victims" ] || victims=$(printf '%s\n' rs-watch rs-sync rs-apply rs-queue | shuf | tr '\n' ' ')
    victim=${victims%% *} victims=${victims#* }
    if [ "$victim" = rs-queue ]; then pid=$(cat "$C/queue.pid" 2>/dev/null)
    else pid=$(stage_pid "$C" "$victim"); fi
    if [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; then
      kills=$((kills + 1))
      echo "$(now) SIGKILL $victim $pid" >>"$C/kills"
      case $victim in rs-watch) kw=$((kw+1)) ;; rs-sync) ks=$((ks+1)) ;; rs-apply) ka=$((ka+1)) ;; *) kq=$((kq+1)) ;; esac
    fi
  done
  t_end=$(now)
  figure "$kills SIGKILLs in $CRASH_SECONDS s (rs-watch $kw, rs-sync $ks, rs-apply $ka, rs-queue $kq), pipeline started $(restarts_of "$C" 'pipeline start') times in all"
  assertTrue "stages were killed" "[ $kills -ge $(( CRASH_SECONDS / 6 )) ]"
  # from each kill to the next start of the pipeline
  lat=$(awk 'FNR == NR { if ($2 == "SIGKILL") k[++n] = $1; next }
      $2 == "pipeline" && $3 == "start" { s[++m] = $1 }
      END { for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) if (s[j] > k[i]) {
              d = s[j] - k[i]; t += d; c++; if (d > mx) mx = d; break }
            if (c) printf "%.1f s mean, %.1f s max", t / c, mx; else printf "none" }' \
      "$C/kills" "$C/restarts")
  figure "pipeline back after a kill: $lat"
  created=0
  for r in $names; do
    eval "want=\$want_$r inc=\$inc_$r peak=\$peak_$r"
    assertTrue "$r converged to $want" "wait_for $CONVERGE settled $ns $r $want"
    assertTrue "$r observedGeneration" "wait_for 30 observed $ns $r"
    c=$(adds "$C" "$ns" "$r")
    created=$((created + c))
    assertTrue "$r: $c creates, at most the $inc the scale-ups asked for" "[ $c -le $inc ]"
  done
  figure "converged $(since "$t_end") s after the last kill ($created creates)"
  drain "$ns" $names
}

# --- 429 and 5xx from an overloaded apiserver (a cluster of our own) ------

# metric_sum REGEX: the sum of the own cluster's apiserver_request_total
# samples whose labels match REGEX.
metric_sum() {
  ok get --raw /metrics 2>/dev/null | grep '^apiserver_request_total{' | grep -E "$1" |
    awk '{ s += $NF } END { printf "%d", s }'
}

test_overload_429_and_5xx() {
  need_cluster || return
  # a tiny in-flight limit: the controller's parallel writes get 429
  own_up "$TMP/over" RS_TEST_MAX_INFLIGHT=2 RS_TEST_MAX_MUTATING_INFLIGHT=1 || return
  tests/env/cluster user "$OWN_CLUSTER" rs-controller || { fail "unable to make a user"; return; }
  APPLY_FLAGS="--kube-api-qps 0 --kube-api-burst 1000 --concurrency 64" \
    start_ctl "$OWN" "$OWN_CLUSTER" "$OWN_CLUSTER/rs-controller.kubeconfig" ||
    { fail "unable to start the controller"; return; }
  ns=over n=$FAULT_PODS
  ok create namespace $ns >/dev/null
  t0=$(now)
  KUBECONFIG=$OWN_CLUSTER/kubeconfig make_rs "$ns" web "$n"
  assertTrue "converged to $n pods under 429s" "wait_for $CONVERGE own_settled $ns web $n"
  figure "$n pods with max-requests-inflight 2, mutating 1: converged in $(since "$t0") s"
  c429=$(metric_sum 'code="429"')
  figure "the apiserver answered 429 $c429 times"
  assertTrue "the apiserver answered 429 ($c429)" "[ $c429 -gt 0 ]"

  # 5xx: etcd frozen (SIGSTOP; this test's own etcd) in the middle of a
  # scale-up: the apiserver times requests out with 5xx
  ok -n "$ns" scale rs web --replicas $(( n * 2 )) >/dev/null
  wait_for 60 sh -c "[ \$(KUBECONFIG=$OWN_CLUSTER/kubeconfig kubectl -n $ns get pods -o name | wc -l) -ge $(( n + n / 4 )) ]"
  live=$(KUBECONFIG=$OWN_CLUSTER/kubeconfig count_live "$ns" app=web)
  etcd=$(cat "$OWN_CLUSTER/etcd.pid")
  kill -STOP "$etcd"
  sleep "$FAULT_OUTAGE"
  kill -CONT "$etcd"
  t_up=$(now)
  figure "etcd frozen for $FAULT_OUTAGE s at $live/$(( n * 2 )) pods"
  assertTrue "converged to $(( n * 2 )) pods after etcd froze" "wait_for $CONVERGE own_settled $ns web $(( n * 2 ))"
  figure "converged $(since "$t_up") s after etcd was frozen for $FAULT_OUTAGE s"
  c5xx=$(metric_sum 'code="5[0-9][0-9]"')
  figure "the apiserver answered 5xx $c5xx times"
  assertTrue "the apiserver answered 5xx ($c5xx)" "[ $c5xx -gt 0 ]"
  sleep 2
  assertEquals "pods created" $(( n * 2 )) "$(adds "$OWN" "$ns")"
  assertEquals "pods deleted (a surplus)" 0 "$(deletes "$OWN" "$ns")"
  own_down
}

# --- a round cut after progress forgets the key's failures ----------------

# retried DIR KEY N: DIR's rs-queue logged KEY's Nth RETRY in a row or a
# later one; retried_first DIR KEY FROM: a first one, from line FROM of
# its log on.
retried() {
  grep -oE "\] $2: failure [0-9]+ in a row" "$1/queue.log" |
    awk -v n="$3" '$4 >= n { f = 1 } END { exit !f }'
}
retried_first() { tail -n +"$3" "$1/queue.log" | grep -qF "] $2: failure 1 in a row"; }

# Rounds refused at once (a quota of 0 pods) pile up the key's failures,
# as upstream's AddRateLimited does. Then the quota admits 2 of the 4: the
# round creates 2 and fails on the third. Pods were created: that round
# was cut, not refused, and rs-apply forgets the key's failures before its
# RETRY (rs-apply(1), Rounds and retries), so the RETRY after it is the
# first in a row again, not the next of the pile. Counts stay exact.
test_progress_forgets_failures() {
  need_cluster || return
  ns=$(new_ns moved)
  quota_pods "$ns" 0
  make_rs "$ns" web 4
  assertTrue "refused rounds pile up failures" "wait_for 30 retried $C $ns/web 4"
  from=$(( $(wc -l <"$C/queue.log") + 1 ))
  quota_pods "$ns" 2
  assertTrue "2 pods within the quota" "wait_count $ns app=web 2 60"
  assertTrue "the round that created them failed after progress" \
    "wait_for 20 grep -q '$ns/web: sync failed after [0-9]* pods created or deleted' $C/pipeline.log"
  assertTrue "its RETRY is the first in a row" "wait_for 10 retried_first $C $ns/web $from" ||
    tail -n +"$from" "$C/queue.log" | grep "$ns/web" | head -5
  quota_pods "$ns" 4
  assertTrue "converged to 4 pods" "wait_for 60 settled $ns web 4"
  sleep 2
  assertEquals "pods created" 4 "$(adds "$C" "$ns")"
  assertEquals "pods deleted" 0 "$(deletes "$C" "$ns")"
  drain "$ns" web
}

# An idle rs-sync (caches synced, no key to serve) learns that the stage
# after it is gone at once, not at its next write, so that the pipeline
# ends and its supervisor starts it again.
test_sync_notices_next_stage_gone() {
  _g=$TMP/gone
  mkdir -p "$_g/state" && chmod 0700 "$_g/state"
  rs-queue serve --socket "$_g/state/queue.sock" 2>"$_g/queue.log" &
  _qpid=$!
  wait_for 10 test -S "$_g/state/queue.sock"
  mkfifo "$_g/events"
  ( rs-sync --queue "$_g/state/queue.sock" --expectations "$_g/state/expectations" \
      <"$_g/events" 2>"$_g/sync.log" | sleep 1
    echo "${PIPESTATUS[0]}" >"$_g/rc" ) &
  exec 7>"$_g/events"
  printf '%s\n' '{"type":"SYNCED","resource":"replicasets"}' '{"type":"SYNCED","resource":"pods"}' >&7
  assertTrue "rs-sync ended" "wait_for 5 test -s $_g/rc"
  assertEquals "exit code" 111 "$(cat "$_g/rc" 2>/dev/null)"
  grep -q "reader of standard output is gone" "$_g/sync.log"
  assertTrue "says why" $?
  exec 7>&-
  kill "$_qpid" 2>/dev/null
  wait "$_qpid" 2>/dev/null
}

. "$SHUNIT2"
