#!/bin/bash
# incluster.sh: rs-controller run by a real kubelet as users run it: the
# image of `make image` (build/image/rs-controller.tar) imported into the
# node's containerd, deploy/control-plane applied with kubectl apply -k
# (and a patch of this test's: no kube-proxy here, so the in-cluster
# address is the API server's own, 127.0.0.1), the static pod of
# deploy/static-pod beside it. kube-controller-manager runs without its
# replicaset and replicationcontroller controllers (tests/env/node), so
# every ReplicaSet here converges only if the pod the kubelet runs does it,
# with the token the kubelet projects and deploy/'s RBAC.
#
# Counts are the pods' creations as a separate watcher (rs-watch pods, as
# admin) saw them: distinct uids per namespace, never the controller's word.
# The Lease's own times (acquireTime, renewTime, each version recorded by
# a watch) time the hand-overs.
. "$(dirname "$0")/lib.sh"

SEL=app.kubernetes.io/name=rs-controller
LEASE=rs-controller-replicaset

oneTimeSetUp() {
  have_node && [ -f "$IMAGE_TAR" ] || return 0
  . "$RS_TEST_CLUSTER/env"
  case ,$KCM_CONTROLLERS, in
    *,replicaset-controller,*|*,replicationcontroller-controller,*)
      fail "kube-controller-manager runs upstream's ReplicaSet controller: $KCM_CONTROLLERS" ;;
  esac
  import_image
  # the recorder and the Lease's history
  rs_bg rs-watch pods >"$TMP/pods.ndjson" 2>"$TMP/podwatch.log"
  kubectl create namespace rs-controller >/dev/null 2>&1
  rs_bg kubectl -n rs-controller get leases -w --output-watch-events \
    -o jsonpath='{.object.metadata.name}|{.object.spec.holderIdentity}|{.object.spec.acquireTime}|{.object.spec.renewTime}|{.object.spec.leaseDurationSeconds}|{.object.spec.leaseTransitions}{"\n"}' \
    >"$TMP/leases.log" 2>"$TMP/leasewatch.log"
  node_overlay control-plane
}

oneTimeTearDown() {
  if [ -n "${NODE_NAME:-}" ] && [ -f "$IMAGE_TAR" ]; then
    rm -f "$STATIC_PODS/rs-controller.yaml"
    kubectl delete -k "$TMP/overlay" --wait=false >/dev/null 2>&1
    kubectl delete namespace -l rs-test=incluster --wait=false >/dev/null 2>&1
  fi
  rs_cleanup
  rm -rf "$RS_STATE_DIR"
}

# ds_pod: the DaemonSet's pod (not the static pod's mirror), name and uid.
ds_pod() {
  kubectl -n rs-controller get pods -l "$SEL" -o json | jq -r '.items[] |
    select(.metadata.deletionTimestamp == null) |
    select(any(.metadata.ownerReferences[]?; .kind == "DaemonSet")) |
    "\(.metadata.name) \(.metadata.uid)"'
}

# ds_ready_new OLDUID: the DaemonSet's one pod is Ready and is not OLDUID.
ds_ready_new() {
  local p
  p=$(ds_pod)
  [ "$(echo "$p" | grep -c .)" -eq 1 ] && [ "${p#* }" != "$1" ] && pod_ready "${p% *}"
}

# rs_ns PREFIX: a namespace for ReplicaSets, labelled for the teardown.
rs_ns() {
  _n=$(node_ns "$1") || return 1
  kubectl label namespace "$_n" rs-test=incluster >/dev/null || return 1
  echo "$_n"
}

# metrics_leader PORT: true when the rs-metrics on PORT reports the
# ReplicaSet pipeline's rs-sync, which runs only in the holder of $LEASE.
metrics_leader() { curl -s "http://127.0.0.1:$1/metrics" | grep -q '^rs_sync_synced{resource="replicasets"}'; }

# lease_holder: the holderIdentity of the ReplicaSet Lease.
lease_holder() { kubectl -n rs-controller get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }

secs() { date -d "$1" +%s.%N; }   # RFC 3339 -> seconds
ms_between() { echo "$1 $2" | awk '{ printf "%d", ($2 - $1) * 1000 }'; }

test_daemonset_pod_runs_ready_with_its_token() {
  need_image || return 0
  local t0 p name
  t0=$(now_ms)
  kubectl apply -k "$TMP/overlay" >"$TMP/apply.log" 2>&1 || { fail "apply -k"; cat "$TMP/apply.log" >&2; return; }
  wait_for 60 ds_ready_new none || {
    fail "the DaemonSet's pod not Ready"
    kubectl -n rs-controller describe pods >&2; return; }
  p=$(ds_pod); name=${p% *}
  echo "figure: DaemonSet pod $name Ready $(( $(now_ms) - t0 )) ms after apply -k" >&2
  # the kubelet projected the service account's token: the pipeline runs on it
  assertEquals "service account" rs-controller "$(kubectl -n rs-controller get pod "$name" -o jsonpath='{.spec.serviceAccountName}')"
  assertNotNull "projected token volume" "$(kubectl -n rs-controller get pod "$name" -o json |
    jq -r '.spec.volumes[]? | select(.projected.sources[]?.serviceAccountToken) | .name')"
  wait_for 30 eval '[ -n "$(lease_holder)" ]' || fail "nobody holds $LEASE"
  wait_for 30 metrics_leader 10260 || fail "the pod's pipeline publishes no rs-sync samples"
  assertEquals "no restarts" 0 "$(kubectl -n rs-controller get pod "$name" -o jsonpath='{.status.containerStatuses[0].restartCount}')"
  # the probes are there, on loopback, and pass (Ready above; liveness: no
  # restart)
  assertEquals "probes" "127.0.0.1 127.0.0.1" "$(kubectl -n rs-controller get pod "$name" -o json |
    jq -r '.spec.containers[0] | "\(.livenessProbe.httpGet.host) \(.readinessProbe.httpGet.host)"')"
  # kubectl logs (API server -> kubelet -> containerd) shows the pipeline
  kubectl -n rs-controller logs "$name" >"$TMP/ds.log" 2>&1 || fail "kubectl logs"
  for t in rs-lease rs-watch rs-sync rs-apply; do
    grep -q "$t" "$TMP/ds.log" || fail "no $t in kubectl logs"
  done
}

# The pod, as the kubelet runs it, scales a ReplicaSet up with exact counts.
test_scale_up_exact() {
  need_image || return 0
  local ns t0
  ns=$(rs_ns scale) || { fail "namespace"; return; }
  make_rs "$ns" web 0 || { fail "make_rs"; return; }
  t0=$(now_ms)
  kubectl -n "$ns" scale rs web --replicas 40 >/dev/null
  wait_for 60 converged "$ns" web 40 || fail "not 40 pods: $(count_live "$ns" app=web)"
  echo "figure: 0 -> 40 converged in $(( $(now_ms) - t0 )) ms" >&2
  sleep 3
  assertEquals "pods created" 40 "$(created "$ns")"
  assertEquals "pods live" 40 "$(count_live "$ns" app=web)"
  SCALE_NS=$ns
}

# Every rs-controller pod object deleted at once, as the loss of its node
# would: the DaemonSet controller makes another, the kubelet runs it, and
# ReplicaSets converge again, with exact counts.
test_all_pods_deleted_come_back() {
  need_image || return 0
  local p old ns=${SCALE_NS:-} t0 victims
  [ -n "$ns" ] || { fail "no ReplicaSet from test_scale_up_exact"; return; }
  p=$(ds_pod); old=${p#* }
  t0=$(now_ms)
  kubectl -n rs-controller delete pods -l "$SEL" --grace-period 0 --force >/dev/null 2>&1
  wait_for 90 ds_ready_new "$old" || { fail "no new DaemonSet pod Ready"; kubectl -n rs-controller get pods -o wide >&2; return; }
  echo "figure: all rs-controller pods deleted: a new one Ready in $(( $(now_ms) - t0 )) ms" >&2
  # meanwhile nothing created pods in ns
  assertEquals "pods created while none ran" 40 "$(created "$ns")"
  victims=$(kubectl -n "$ns" get pods -l app=web -o name | head -5)
  kubectl -n "$ns" delete $victims --wait=false >/dev/null
  kubectl -n "$ns" scale rs web --replicas 50 >/dev/null
  wait_for 60 converged "$ns" web 50 || fail "not 50 pods: $(count_live "$ns" app=web)"
  sleep 3
  assertEquals "pods created" 55 "$(created "$ns")"
  assertEquals "pods live" 50 "$(count_live "$ns" app=web)"
}

# static_pod: deploy/static-pod's manifest, with a kubeconfig of the user
# rs-controller (a client certificate from the cluster's CA, as kubeadm
# would make it) in place of /etc/kubernetes/rs-controller.conf.
static_pod() {
  local d=$TMP/static
  mkdir -p "$d"
  client_cert "$RS_TEST_CLUSTER" "$d/user" "/CN=rs-controller" || return 1
  kubeconfig_write "$d/rs-controller.conf" "https://127.0.0.1:$APISERVER_PORT" \
    "    certificate-authority-data: $(base64 -w0 "$RS_TEST_CLUSTER/ca.crt")" \
    "    client-certificate-data: $(base64 -w0 "$d/user.crt")
    client-key-data: $(base64 -w0 "$d/user.key")" || return 1
  chown 65532:65532 "$d/rs-controller.conf" && chmod 0600 "$d/rs-controller.conf"
  kubectl apply -k "$top/deploy/static-pod" >/dev/null || return 1
  sed "s|/etc/kubernetes/rs-controller.conf|$d/rs-controller.conf|" \
    "$top/deploy/static-pod/rs-controller.yaml" >"$STATIC_PODS/.rs-controller.yaml" &&
  mv "$STATIC_PODS/.rs-controller.yaml" "$STATIC_PODS/rs-controller.yaml"
}

# mirror_running: the static pod's mirror pod is Running.
mirror_running() {
  [ "$(kubectl -n rs-controller get pod "rs-controller-$NODE_NAME" -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]
}

# leader_port: 10260 (the DaemonSet's pod) or 10261 (the static pod):
# the pod whose container's log says it acquired $LEASE as the identity
# that holds it now. (Not rs-metrics: the stats files are in the pod's
# emptyDir, so a container restarted after a kill serves its dead
# predecessor's rs-sync samples.)
leader_port() {
  local h p
  h=$(lease_holder)
  [ -n "$h" ] || return 1
  p=$(ds_pod)
  kubectl -n rs-controller logs "${p% *}" 2>/dev/null |
    grep -qF "acquired lease rs-controller/$LEASE as $h" && { echo 10260; return 0; }
  kubectl -n rs-controller logs "rs-controller-$NODE_NAME" 2>/dev/null |
    grep -qF "acquired lease rs-controller/$LEASE as $h" && { echo 10261; return 0; }
  return 1
}

# container_of PORT: containerd's id of that pod's container.
container_of() {
  local pod
  if [ "$1" = 10260 ]; then pod=$(ds_pod); pod=${pod% *}; else pod=rs-controller-$NODE_NAME; fi
  kubectl -n rs-controller get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}' | sed 's|^containerd://||'
}

# lease_after N: the Lease's versions recorded after line N of the watch.
lease_after() { tail -n +$(( $1 + 1 )) "$TMP/leases.log" | grep "^$LEASE|"; }

# retry_period: the DaemonSet's --leader-elect-retry-period, in seconds.
retry_period() {
  kubectl -n rs-controller get daemonset rs-controller -o json | jq -r '
    .spec.template.spec.containers[0].env[]? | select(.name == "RS_LEASE_FLAGS") | .value' |
    sed -n 's/.*--leader-elect-retry-period \([0-9]*\)s.*/\1/p'
}

# released_after N: the time of the first release of $LEASE recorded after
# line N (the empty holder's renewTime) and the acquireTime of the holder
# that follows it, when there is one.
released_after() {
  awk -F'|' -v l="$LEASE" -v n="$1" '
    NR <= n || $1 != l { next }
    rel == "" && $2 == "" { rel = $4; next }
    rel != "" && $2 != "" { print rel, $3; exit }
    END { if (rel != "") print rel }' "$TMP/leases.log" | head -1
}

# Two replicas on the one node, the DaemonSet's pod and the static pod: the
# leader killed with SIGKILL (its whole container) is replaced by a new
# holder once the lease duration has passed: from the dead holder's last
# renewal to the next holder's acquireTime (the Lease's own times) at most
# the lease duration plus the 2.2 retry periods in which a candidate may
# not yet have read that renewal (client-go's period and jitter). The new
# holder is the other replica or the killed one restarted by the kubelet,
# whichever's lease timer runs out first; either way one pipeline runs and
# the counts are exact.
test_failover_kill9() {
  need_image || return 0
  local ns port cid n last acq dur holder t_kill retry
  static_pod || { fail "static pod manifest"; return; }
  wait_for 90 mirror_running || { fail "static pod not Running"; kubectl -n rs-controller get pods >&2; return; }
  wait_for 30 leader_port || { fail "no pod's log names the holder"; return; }
  port=$(leader_port)
  ns=$(rs_ns failover) || { fail "namespace"; return; }
  make_rs "$ns" web 10
  wait_for 60 converged "$ns" web 10 || { fail "not 10 pods before the kill"; return; }
  holder=$(lease_holder)
  cid=$(container_of "$port")
  [ -n "$cid" ] || { fail "no container for the leader on $port"; return; }
  n=$(wc -l <"$TMP/leases.log")
  t_kill=$(date +%s.%N)
  $CTR tasks kill -s SIGKILL "$cid" >/dev/null || { fail "kill -9 of $cid"; return; }
  kubectl -n "$ns" scale rs web --replicas 25 >/dev/null
  wait_for 60 eval 'lease_after $n | grep -v "^[^|]*|$holder|" | grep -q "^[^|]*|[^|]"' ||
    { fail "nobody took the Lease from $holder"; return; }
  # the killed holder's last renewal, and the next holder's record
  set -- $(awk -F'|' -v l="$LEASE" -v h="$holder" -v n="$n" '
    $1 != l { next }
    $2 == h { last = $4 }
    NR > n && $2 != h && $2 != "" { print last, $3, $5; exit }' "$TMP/leases.log")
  last=${1:-} acq=${2:-} dur=${3:-15}
  local ms
  [ -n "$last" ] && [ -n "$acq" ] || { fail "no renewal or acquisition recorded"; cat "$TMP/leases.log" >&2; return; }
  ms=$(ms_between "$(secs "$last")" "$(secs "$acq")")
  retry=$(retry_period); retry=${retry:-2}
  echo "figure: kill -9 ($port): last renewal $last, next acquireTime $acq: $ms ms; kill to acquireTime $(ms_between "$t_kill" "$(secs "$acq")") ms (lease duration $dur s, retry period $retry s)" >&2
  assertTrue "hand-over $ms ms within the lease duration $dur s + 2.2 x $retry s" \
    "[ $ms -ge $(( dur * 1000 - 100 )) ] && [ $ms -le $(( dur * 1000 + retry * 2200 )) ]"
  wait_for 30 leader_port || fail "no pod's log names the new holder $(lease_holder)"
  echo "figure: the new holder is the pod of port $(leader_port)" >&2
  wait_for 60 converged "$ns" web 25 || fail "not 25 pods: $(count_live "$ns" app=web)"
  sleep 3
  assertEquals "pods created" 25 "$(created "$ns")"
  assertEquals "pods live" 25 "$(count_live "$ns" app=web)"
  FAILOVER_NS=$ns
}

# A graceful stop of the leader releases the Lease (holderIdentity empty),
# the other takes it in under 2 s (between the two versions' times), and
# the stopped pod's log has no error.
test_graceful_stop_hands_over() {
  need_image || return 0
  local port pod n rel acq ms ns=${FAILOVER_NS:-}
  [ -n "$ns" ] || { fail "no ReplicaSet from test_failover_kill9"; return; }
  # the killed one is back (restarted by the kubelet) as a candidate
  wait_for 60 eval 'curl -sf http://127.0.0.1:10260/healthz && curl -sf http://127.0.0.1:10261/healthz' ||
    { fail "both not healthy"; return; }
  port=$(leader_port) || { fail "no pod's log names the holder"; return; }
  if [ "$port" = 10260 ]; then pod=$(ds_pod); pod=${pod% *}; else pod=rs-controller-$NODE_NAME; fi
  # what the pod logs from now on: its stop
  kubectl -n rs-controller logs -f --tail 0 "$pod" >"$TMP/stopped.log" 2>&1 &
  local logs=$!
  sleep 1
  n=$(wc -l <"$TMP/leases.log")
  if [ "$port" = 10260 ]; then
    kubectl -n rs-controller delete pod "$pod" --wait=false >/dev/null
  else
    rm -f "$STATIC_PODS/rs-controller.yaml"
  fi
  wait_for 60 eval '[ -n "$(released_after $n)" ]' || { fail "the Lease was not released"; kill $logs; return; }
  wait_for 30 eval '[ "$(released_after $n | wc -w)" -eq 2 ]' || { fail "nobody took the released Lease"; kill $logs; return; }
  set -- $(released_after "$n")
  rel=$1 acq=$2
  ms=$(ms_between "$(secs "$rel")" "$(secs "$acq")")
  echo "figure: graceful stop: released $rel, taken $acq: $ms ms" >&2
  # issue 31 asks for under 2 s; the candidate watches the Lease and
  # takes it as the release is written (rs-lease(1), THE ELECTION), where
  # its reads alone (every retry period plus up to 1.2 of it) would see
  # the release 0 to 2.2 retry periods after it
  assertTrue "taken $ms ms after the release, under 2 s (retry period $(retry_period) s)" "[ $ms -lt 2000 ]"
  wait_for 60 eval '! kill -0 $logs 2>/dev/null'
  kill $logs 2>/dev/null; wait $logs 2>/dev/null || true
  if grep -iE 'fatal|error|warning' "$TMP/stopped.log" >&2; then
    fail "the clean stop logged the lines above"
  fi
  grep -q . "$TMP/stopped.log" || fail "no log of the stopped pod"
  echo "the stop's log, $(grep -c . "$TMP/stopped.log") lines:" >&2; sed 's/^/  /' "$TMP/stopped.log" >&2
  kubectl -n "$ns" scale rs web --replicas 30 >/dev/null
  wait_for 60 converged "$ns" web 30 || fail "not 30 pods: $(count_live "$ns" app=web)"
  sleep 3
  assertEquals "pods created" 30 "$(created "$ns")"
}

. "$SHUNIT2"
