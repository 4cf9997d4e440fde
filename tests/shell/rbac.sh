#!/bin/bash
# rbac.sh: deploy/'s RBAC is enough. The ServiceAccount of deploy/base
# gets a token (kubectl create token), the controller runs with a
# kubeconfig holding only that token, and the core end-to-end cases pass
# (create, scale up and down, adoption and release, status with readiness,
# quota failure with FailedCreate events; a ReplicationController too),
# with no "Forbidden" in any log. rs-lease takes and releases a Lease with
# the same token. And the role grants no more than that: a few requests
# the controller never makes are refused.
. "$(dirname "$0")/lib.sh"

NS=rs-controller
SA=rs-controller
SA_KC=$RS_STATE_DIR/sa.kubeconfig
RC_PIDS=

oneTimeSetUp() {
  need_cluster || return
  kubectl apply -k "$top/deploy/base" >"$TMP/apply.out" 2>&1 ||
    { cat "$TMP/apply.out" >&2; return 1; }
  sa_kubeconfig "$SA_KC" "$NS" "$SA" || return 1
  KUBECONFIG=$SA_KC start_controller --kube-api-qps 100 --kube-api-burst 200
  start_rc_controller
}

oneTimeTearDown() {
  stop_controller
  for p in $RC_PIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  wait_for 20 ours_gone
  if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$TMP" ]; then cp -r "$TMP" "$RS_KEEP_LOGS"; fi
  rm -rf "$RS_STATE_DIR"
}


# start_rc_controller: the ReplicationController manager with the same
# token, its own state directory and queue; the pipeline run by
# service/rs-pipeline, which stops its stages when it gets TERM.
start_rc_controller() {
  local st=$RS_STATE_DIR/rc
  mkdir -p -m 0700 "$st"
  RS_STATE_DIR=$st rs-queue serve --name replicationmanager 2>"$TMP/rc-queue.log" &
  RC_PIDS="$RC_PIDS $!"
  wait_for 10 test -S "$st/queue.sock" || return 1
  RS_STATE_DIR=$st KUBECONFIG=$SA_KC RS_KIND=ReplicationController \
    RS_SYNC_FLAGS="-v 2" RS_APPLY_FLAGS="-v 2" \
    "$top/service/rs-pipeline" 2>"$TMP/rc-pipeline.log" &
  RC_PIDS="$! $RC_PIDS"
}

# ours_gone: no process left with this suite's RS_STATE_DIR (the stages of
# start_controller stop on their own once the queue is gone).
ours_gone() {
  local p comm
  for p in /proc/[0-9]*; do
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    case $comm in rs-watch|rs-sync|rs-apply|rs-queue|tee) ;; *) continue ;; esac
    tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -q "^RS_STATE_DIR=$RS_STATE_DIR" && return 1
  done
  return 0
}

can_i() { kubectl auth can-i --as "system:serviceaccount:$NS:$SA" "$@" >/dev/null 2>&1; }

test_create_three() {
  need_cluster || return
  ns=$(new_ns rbac-create)
  make_rs "$ns" web 3
  assertTrue "3 pods" "wait_count $ns app=web 3 30"
  assertTrue "status.replicas 3" "wait_for 20 rs_status_is $ns web '.replicas == 3'"
  assertTrue "SuccessfulCreate events" "wait_for 20 sh -c '[ \$(kubectl -n $ns get events -o json | jq \"[.items[] | select(.reason==\\\"SuccessfulCreate\\\") | .count // 1] | add // 0\") -ge 3 ]'"
  sleep 1
  assertEquals "no extra creates" 3 "$(pod_adds "$ns")"
}

test_scale_up_and_down() {
  need_cluster || return
  ns=$(new_ns rbac-scale)
  make_rs "$ns" web 2
  assertTrue "2 pods" "wait_count $ns app=web 2 30"
  kubectl -n "$ns" scale rs web --replicas 6 >/dev/null
  assertTrue "6 pods" "wait_count $ns app=web 6 30"
  kubectl -n "$ns" scale rs web --replicas 1 >/dev/null
  assertTrue "1 pod" "wait_count $ns app=web 1 30"
  assertTrue "status 1" "wait_for 20 rs_status_is $ns web '.replicas == 1'"
  assertTrue "SuccessfulDelete events" "wait_for 20 sh -c 'kubectl -n $ns get events -o json | jq -e \"[.items[] | select(.reason==\\\"SuccessfulDelete\\\")] | length > 0\"'"
}

test_adopt_and_release() {
  need_cluster || return
  ns=$(new_ns rbac-adopt)
  kubectl -n "$ns" run orphan --image=registry.k8s.io/pause:3.10 --labels app=web --restart=Never >/dev/null
  make_rs "$ns" web 2
  uid=$(rs_json "$ns" web | jq -r .metadata.uid)
  assertTrue "orphan adopted" "wait_for 30 sh -c \"kubectl -n $ns get pod orphan -o json | jq -e '.metadata.ownerReferences[0].uid == \\\"$uid\\\"'\""
  assertTrue "2 pods" "wait_count $ns app=web 2 30"
  kubectl -n "$ns" label pod orphan app=gone --overwrite >/dev/null
  assertTrue "released" "wait_for 30 sh -c \"kubectl -n $ns get pod orphan -o json | jq -e '(.metadata.ownerReferences // []) | length == 0'\""
  assertTrue "replacement made" "wait_count $ns app=web 2 30"
}

test_status_with_readiness() {
  need_cluster || return
  ns=$(new_ns rbac-ready)
  make_rs "$ns" web 3 web '{"minReadySeconds": 2}'
  assertTrue "3 pods" "wait_count $ns app=web 3 30"
  for p in $(live_pods "$ns" app=web); do set_pod_status "$ns" "$p" Running True; done
  assertTrue "ready 3" "wait_for 20 rs_status_is $ns web '.readyReplicas == 3'"
  assertTrue "available 3" "wait_for 20 rs_status_is $ns web '.availableReplicas == 3'"
  p=$(live_pods "$ns" app=web | head -1)
  set_pod_status "$ns" "$p" Running False
  assertTrue "ready 2" "wait_for 20 rs_status_is $ns web '.readyReplicas == 2'"
}

test_quota_failure_events() {
  need_cluster || return
  ns=$(new_ns rbac-quota)
  quota_pods "$ns" 2
  make_rs "$ns" web 4
  assertTrue "2 pods within quota" "wait_count $ns app=web 2 30"
  assertTrue "FailedCreate event" "wait_for 20 sh -c \"kubectl -n $ns get events -o json | jq -e '[.items[] | select(.reason==\\\"FailedCreate\\\" and .type==\\\"Warning\\\")] | length > 0'\""
  assertTrue "ReplicaFailure condition" "wait_for 20 rs_status_is $ns web '[.conditions[]? | select(.type==\"ReplicaFailure\")] | length == 1'"
  # The retries repeat the Event, a PATCH of its count (what the Role must
  # allow). Each refusal names its own generated pod, so the correlator
  # counts only from the 11th on, aggregated; the retries' backoff doubles
  # to 10 s by then, longer when the stale-cache guard's retries add to it.
  # A touch of the ReplicaSet is a sync at once, so each poll brings one.
  assertTrue "FailedCreate repeated (Event patched)" "wait_for 60 sh -c 'kubectl -n $ns annotate rs web --overwrite nudge=\$(date +%s%N) >/dev/null; [ \$(kubectl -n $ns get events -o json | jq \"[.items[] | select(.reason==\\\"FailedCreate\\\") | .count // 1] | max // 0\") -ge 2 ]'"
  quota_pods "$ns" 10
  assertTrue "recovered to 4" "wait_count $ns app=web 4 60"
}

test_replication_controller() {
  need_cluster || return
  ns=$(new_ns rbac-rc)
  kubectl -n "$ns" create -f - >/dev/null <<EOF
apiVersion: v1
kind: ReplicationController
metadata: {name: web}
spec:
  replicas: 3
  selector: {app: web}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
EOF
  assertTrue "3 pods" "wait_count $ns app=web 3 30"
  assertTrue "RC status.replicas 3" "wait_for 20 rs_status_is $ns web '.replicas == 3' rc"
}

test_leader_election_lease() {
  need_cluster || return
  command -v rs-lease >/dev/null || { fail "rs-lease not built"; return; }
  out=$(KUBECONFIG=$SA_KC timeout 60 rs-lease --lease-namespace "$NS" rbac-test \
    sh -c 'echo leading' 2>"$TMP/lease.log")
  assertEquals "rs-lease ran prog with the token: $(cat "$TMP/lease.log")" leading "$out"
  assertTrue "the Lease exists" "kubectl -n $NS get lease rbac-test"
}

test_nothing_more_is_granted() {
  need_cluster || return
  can_i list pods --all-namespaces
  assertTrue "sanity: can list pods" $?
  for req in "update pods" "get secrets" "delete replicasets" "update replicasets" \
      "create replicasets" "get pods" "create leases -n default" "delete leases -n $NS"; do
    # shellcheck disable=SC2086
    can_i $req
    assertFalse "not granted: $req" $?
  done
}

# Last: the logs of every stage run with the token. A quota refusal is a
# 403 "forbidden" too (test_quota_failure_events wants those); any other is
# a permission missing.
test_zz_no_forbidden_in_logs() {
  need_cluster || return
  sleep 1
  bad=$(grep -i forbidden "$TMP"/*.log 2>/dev/null | grep -v 'exceeded quota')
  assertNull "Forbidden in the logs: $(echo "$bad" | head -5)" "$bad"
  assertTrue "the quota refusals were logged (the grep can see)" "grep -qi 'forbidden: exceeded quota' '$TMP/apply.log'"
  assertTrue "the controller did work" "grep -q 'synced' '$TMP/apply.log'"
}

. "$SHUNIT2"
