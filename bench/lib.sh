# bench/lib.sh: what the benchmarks that run a controller against a test
# cluster share (bench/controller/run, bench/reaction/run), sourced by bash
# from the top of the checkout. The caller sets, before it sources this:
#   prog          its name, for messages
#   BUILD         the build directory (build)
# and, before it calls the functions:
#   work          its work directory
#   concurrency   workers of either controller
#   inflight      requests bulk keeps in flight for setups and watches
# It gets:
#   say, die                    messages on stderr (die exits 111)
#   bench_setup TOOL...         builds what is missing (make -s all) and
#                               sets RSBIN, K8S_BIN, BULK, PROCSTAT, AUDITBIN
#   cluster_up DIR LOG          a fresh cluster with its audit log, tried 4
#                               times; sets cluster, exports KUBECONFIG
#   cluster_down                takes it down (its directory and log stay)
#   start_ours DIR QPS BURST, start_ref DIR QPS BURST, stop_controller
#                               the controller of a side (ctl_pids), on
#                               $ctl_kubeconfig (default: the cluster's)
#   side_agents SIDE            the user agent prefixes of a side's requests
#   metrics FILE, mutations, settle, audit_errors, until_calm
#                               the API server's request counts; settle
#                               waits until 2 s pass without a write;
#                               audit_errors: events the audit log lost
#   converge DIR NS COUNT READY -- BULK-ARGS
#                               an action timed until a watch sees every
#                               ReplicaSet's status final
#   ready_controller DIR        a canary ReplicaSet's status written, then
#                               quiet: the controller is ready to measure
#   bench_cleanup               stops what the caller started (for its
#                               EXIT trap)
#   val FILE KEY                the value of "KEY value" in FILE
#   klog_time LINE              the Unix time of a klog-style log line
#   quiet_cpu                   waits until the controller is idle

say() { echo "$prog: $*" >&2; }
die() { echo "$prog: fatal: $*" >&2; exit 111; }

cluster=   # the cluster up now
ctl_pids=  # the controller's processes
ctl_kubeconfig=  # the controller's way to the server, if not the cluster's
sampler=   # a procstat running

# bench_setup TOOL...: the tools, the bench helpers named (built by make
# into $BUILD/bench/), the Kubernetes binaries.
bench_setup() {
  local t missing=
  [ -x "$BUILD/bin/rs-apply" ] || missing=1
  for t; do [ -x "$BUILD/bench/$t" ] || missing=1; done
  if [ -n "$missing" ]; then
    make -s all >/dev/null || die "unable to build the tools (make all)"
  fi
  for t; do [ -x "$BUILD/bench/$t" ] || die "unable to find $BUILD/bench/$t after make all"; done
  K8S_BIN=$(tests/env/build) || die "unable to build the Kubernetes binaries"
  t=$(cd "$BUILD" && pwd)
  RSBIN=$t/bin BULK=$t/bench/bulk PROCSTAT=$t/bench/procstat AUDITBIN=$t/bench/audit
}

stop_pids() {  # TERM, then KILL after 5 s
  local p alive
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for _ in $(seq 1 50); do
    alive=
    for p; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
}

bench_cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null
  stop_pids $ctl_pids
  [ -n "$cluster" ] && tests/env/cluster down "$cluster" >/dev/null 2>&1
  return 0
}

# cluster_up DIR LOG: free ports are picked at random and may be taken
# meanwhile by another cluster on this machine: try again. The audit log
# is DIR/audit.log (tests/env/cluster up --audit). LOG keeps every try.
cluster_up() {
  local try
  cluster=$1
  : > "$2"
  for try in 1 2 3 4; do
    tests/env/cluster up "$cluster" --owner $$ --audit >>"$2" 2>&1 && break
    [ $try -eq 4 ] && die "unable to start a cluster: $(tail -3 "$2")"
    say "cluster up failed, again"
    sleep 1
  done
  export KUBECONFIG=$cluster/kubeconfig
}

cluster_down() {
  [ -n "$cluster" ] && tests/env/cluster down "$cluster" >/dev/null 2>&1
  cluster=
}

# side_agents SIDE: the prefixes of the User-Agent of a side's requests
# (bench/audit/audit idle --agent): ours are rs-watch's and rs-apply's
# (rs-sync and rs-queue send none), kube-controller-manager's all begin
# with its name and version.
side_agents() {
  case $1 in
    ours) echo rs-watch/,rs-apply/ ;;
    ref) echo kube-controller-manager/ ;;
    phys) echo rs-bench-bulk/ ;;
  esac
}

# --- the API server's request counts ---------------------------------------
# metrics FILE: "VERB RESOURCE[/SUB] N" for pods, replicasets and events,
# summed over codes and groups.
metrics() {
  . "$cluster/env"
  curl -fsS --cacert "$cluster/ca.crt" --cert "$cluster/admin.crt" \
    --key "$cluster/admin.key" "https://127.0.0.1:$APISERVER_PORT/metrics" |
  awk '/^apiserver_request_total\{/ {
      r = $0; sub(/.*[,{]resource="/, "", r); sub(/".*/, "", r)
      if (r != "pods" && r != "replicasets" && r != "events") next
      s = $0; sub(/.*subresource="/, "", s); sub(/".*/, "", s)
      v = $0; sub(/.*verb="/, "", v); sub(/".*/, "", v)
      n[v " " r (s == "" ? "" : "/" s)] += $NF
    }
    END { for (k in n) print k, n[k] }' > "$1"
}

# audit_errors: audit events the API server could not log (its buffer full:
# tests/env/cluster); 0 when the audit log is whole.
audit_errors() {
  . "$cluster/env"
  curl -fsS --cacert "$cluster/ca.crt" --cert "$cluster/admin.crt" \
    --key "$cluster/admin.key" "https://127.0.0.1:$APISERVER_PORT/metrics" |
  awk '/^apiserver_audit_error_total\{/ { a += $NF } END { print a + 0 }'
}

# mutations: POST/PUT/PATCH/DELETE seen so far (for quiescence).
mutations() {
  metrics "$work/m.q"
  awk '$1 ~ /^(POST|PUT|PATCH|DELETE)$/ { s += $3 } END { print s + 0 }' "$work/m.q"
}

# settle: until no write reaches the API server for 2 s (at most 600 s):
# a controller that has finished has nothing more to say. Events may go on
# after the statuses are final (kube-controller-manager's are sent by a
# goroutine of their own, 3,000 of them take 150 s at 20 QPS): their
# requests and CPU belong to the scenario too.
settle() {
  until_calm 1 600 same_value mutations || say "warning: the cluster never went quiet"
}

# until_calm INTERVAL TRIES TEST PROBE...: runs PROBE every INTERVAL
# seconds (at most TRIES times) until TEST PREVIOUS LAST holds twice in a
# row (three values, two pairs); 1 if it never does.
until_calm() {
  local iv=$1 n=$2 test=$3 a b calm=0
  shift 3
  a=$("$@")
  for _ in $(seq 1 "$n"); do
    sleep "$iv"
    b=$("$@")
    if "$test" "$a" "$b"; then
      calm=$((calm + 1)); [ $calm -ge 2 ] && return 0
    else
      calm=0
    fi
    a=$b
  done
  return 1
}
same_value() { [ "$1" = "$2" ]; }

# --- controllers ------------------------------------------------------------
pidexec() { echo "$BASHPID" > "$1"; shift; exec "$@"; }

# start_ours DIR QPS BURST: the pipeline as rs-pipeline runs it (rs-watch
# --protobuf --batch 20ms; RS_BENCH_WATCH_WIRE= for pods in JSON, as builds
# before --protobuf read them; RS_BENCH_WATCH_FLAGS="--batch 0" never
# gathers, as builds before 2026-12-07 ran), with
# RS_BENCH_{WATCH,SYNC,APPLY}_FLAGS added.
start_ours() {  # DIR QPS BURST
  local d=$1 q=$2 b=$3
  mkdir -m 0700 "$d/state"
  export RS_STATE_DIR=$d/state
  "$RSBIN/rs-queue" serve --queue "$d/state/queue.sock" --notify-fd 3 \
    3>"$d/queue.ready" 2>"$d/queue.log" &
  echo $! > "$d/queue.pid"
  for _ in $(seq 1 100); do [ -s "$d/queue.ready" ] && break; sleep 0.05; done
  [ -s "$d/queue.ready" ] || die "rs-queue did not start (log: $d/queue.log)"
  { pidexec "$d/watch.pid" "$RSBIN/rs-watch" ${RS_BENCH_WATCH_WIRE---protobuf} --kubeconfig "${ctl_kubeconfig:-$cluster/kubeconfig}" \
      --kube-api-qps "$q" --kube-api-burst "$b" --batch 20ms ${RS_BENCH_WATCH_FLAGS:-} \
      replicasets pods 2>"$d/watch.log" |
    pidexec "$d/sync.pid" "$RSBIN/rs-sync" ${RS_BENCH_SYNC_FLAGS:-} 2>"$d/sync.log" |
    pidexec "$d/apply.pid" "$RSBIN/rs-apply" --kubeconfig "${ctl_kubeconfig:-$cluster/kubeconfig}" \
      --concurrency "$concurrency" --kube-api-qps "$q" --kube-api-burst "$b" \
      ${RS_BENCH_APPLY_FLAGS:-} >/dev/null 2>"$d/apply.log"; } &
  for _ in $(seq 1 100); do
    [ -s "$d/watch.pid" ] && [ -s "$d/sync.pid" ] && [ -s "$d/apply.pid" ] && break
    sleep 0.05
  done
  ctl_pids="$(cat "$d/queue.pid" "$d/watch.pid" "$d/sync.pid" "$d/apply.pid" | tr '\n' ' ')"
  unset RS_STATE_DIR
}

start_ref() {  # DIR QPS BURST
  local d=$1 q=$2 b=$3
  pidexec "$d/kcm.pid" "$K8S_BIN/kube-controller-manager" \
    --controllers=replicaset --leader-elect=false \
    --kubeconfig "${ctl_kubeconfig:-$cluster/kubeconfig}" --authentication-skip-lookup \
    --bind-address 127.0.0.1 --secure-port 0 \
    --concurrent-replicaset-syncs "$concurrency" \
    --kube-api-qps "$q" --kube-api-burst "$b" ${RS_BENCH_KCM_FLAGS:-} >"$d/kcm.log" 2>&1 &
  for _ in $(seq 1 100); do [ -s "$d/kcm.pid" ] && break; sleep 0.05; done
  ctl_pids=$(cat "$d/kcm.pid")
}

stop_controller() {
  stop_pids $ctl_pids
  ctl_pids=
}

# --- one action, timed to convergence --------------------------------------
# converge DIR NS COUNT READY -- BULK-ARGS...: starts a watch (bulk wait),
# runs the action, waits for the watch to see every status final. Leaves
# DIR/action.out and DIR/wait.out (a directory per scenario).
converge() {
  local d=$1 ns=$2 count=$3 ready=$4 w
  shift 5
  "$BULK" --inflight "$inflight" -n "$ns" wait "$count" "$ready" --timeout 1800 >"$d/wait.out" 2>"$d/wait.err" &
  w=$!
  for _ in $(seq 1 200); do grep -qs watching "$d/wait.out" && break; sleep 0.05; done
  "$BULK" --inflight "$inflight" -n "$ns" "$@" >"$d/action.out" 2>"$d/action.err" ||
    die "bulk $* failed: $(cat "$d/action.err")"
  wait "$w" || die "bulk wait failed: $(cat "$d/wait.err")"
}

# ready_controller DIR: a canary ReplicaSet's status is written (caches
# synced, workers running), then the cluster goes quiet.
ready_controller() {
  mkdir -p "$1/canary"
  converge "$1/canary" canary 1 0 -- rs canary 1 0
  settle
}

val() { awk -v k="$2" '$1 == k { print $2; exit }' "$1"; }

# klog_time LINE: the Unix time of a klog line (I1125 15:07:40.123456 ...),
# UTC as both sides write it; the year is this one's.
klog_time() {
  local s=${1#?}
  date -u -d "$(date -u +%Y)-${s:0:2}-${s:2:2} ${s:5:15}" +%s.%N
}

# quiet_cpu: waits (at most 600 s) until the controller has used under
# 20 ms of CPU in each of two half seconds in a row: a controller may work
# on with nothing to write (a sync of every key after a list), and its CPU
# belongs to the phase.
# ticks [PID...]: their CPU in clock ticks (default: the controller's).
ticks() {
  local p
  for p in ${*:-$ctl_pids}; do cat "/proc/$p/stat" 2>/dev/null; done |
    awk '{ sub(/.*\) /, ""); t += $12 + $13 } END { print t + 0 }'
}
quiet_cpu() {
  until_calm 0.5 1200 under_2_ticks ticks || say "warning: the controller never went idle"
}
under_2_ticks() { [ $(( $2 - $1 )) -lt 2 ]; }
