#!/bin/bash
# Taking over from kube-controller-manager: the guard that reports another
# active ReplicaSet controller (rs-sync(1), Take-over guard) and the steps
# of doc/operator-guide.md ("Replacing the upstream controllers"), run as
# written against the test cluster with the kube-controller-manager the
# test environment built.
. "$(dirname "$0")/lib.sh"

KR=${KR:-$top/build/test/kube-request}
WARNING='another ReplicaSet controller is active'
KCM_PID=

tearDown() {
  stop_kcm
  stop_controller
}

# made_by NS NAME RS MANAGER: a pod of ReplicaSet RS (its controllerRef,
# its labels) created the way another controller creates one: a client
# whose fieldManager is MANAGER.
made_by() {
  _uid=$(kubectl -n "$1" get rs "$3" -o jsonpath='{.metadata.uid}')
  _body=$(jq -cn --arg name "$2" --arg rs "$3" --arg uid "$_uid" '{
    apiVersion: "v1", kind: "Pod",
    metadata: {name: $name, labels: {app: $rs}, ownerReferences: [{
      apiVersion: "apps/v1", kind: "ReplicaSet", name: $rs, uid: $uid,
      controller: true, blockOwnerDeletion: true}]},
    spec: {containers: [{name: "c", image: "registry.k8s.io/pause:3.10"}]}}')
  "$KR" POST "/api/v1/namespaces/$1/pods?fieldManager=$4" "$_body" >/dev/null 2>&1
}

# adopted_or_gone NS POD: POD has owners now, or is gone (adopted, then
# deleted as one too many).
adopted_or_gone() {
  _j=$(kubectl -n "$1" get pod "$2" -o json 2>/dev/null) || return 0
  echo "$_j" | jq -e '.metadata.ownerReferences != null' >/dev/null
}

warnings_logged() { grep -c "$WARNING" "$TMP/sync.log"; }
# takeover_events NS: the AnotherControllerActive Events of NS, as
# "type involvedObject count" lines.
takeover_events() {
  kubectl -n "$1" get events -o json | jq -r '.items[] |
    select(.reason == "AnotherControllerActive") |
    "\(.type) \(.involvedObject.kind)/\(.involvedObject.name) \(.count)"'
}
has_takeover_event() { [ -n "$(takeover_events "$1")" ]; }
warning_metric() {
  scrape "$TMP/m" && value "$TMP/m" rs_sync_takeover_warnings_total
}
warning_metric_is() { [ "$(warning_metric)" = "$1" ]; }

test_warned_once_per_owner() {
  need_cluster || return
  ns=$(new_ns takeover)
  # upstream's pod from before the take-over: in the initial list, no sign
  # of a controller running now
  make_rs "$ns" before 1
  made_by "$ns" before-0 before kube-controller-manager || fail "pod before"
  start_controller
  metrics_start || fail "rs-metrics did not start"
  assertTrue "ready" "wait_for 30 is_code /readyz 200" || pipeline_logs
  make_rs "$ns" web 2
  assertTrue "our 2 pods" "wait_count $ns app=web 2 30"
  # an orphan we adopt (then delete as the third)
  kubectl -n "$ns" run orphan --image=registry.k8s.io/pause:3.10 \
    --labels=app=web --restart=Never >/dev/null
  assertTrue "orphan adopted" "wait_for 30 adopted_or_gone $ns orphan"
  assertTrue "back to 2" "wait_count $ns app=web 2 30"
  sleep 1.5   # a stats period
  assertEquals "our creates, an adoption, a listed pod: no warning" 0 "$(warnings_logged)"
  assertEquals "metric 0" 0 "$(warning_metric)"
  assertEquals "still ready" 200 "$(code /readyz)"
  # another controller at work
  made_by "$ns" foreign-1 web kube-controller-manager || fail "foreign-1"
  assertTrue "error line" "wait_for 20 grep -q '$WARNING: pod $ns/foreign-1 of ReplicaSet $ns/web was created by \"kube-controller-manager\"' '$TMP/sync.log'"
  assertTrue "Warning Event" "wait_for 20 has_takeover_event $ns"
  assertTrue "metric 1" "wait_for 10 warning_metric_is 1"
  assertEquals "not ready" 503 "$(code /readyz)"
  assertContains "$(body /readyz)" "[-]takeover failed: another controller is active"
  # a second pod of the same owner: still one of each
  assertTrue "back to 2" "wait_count $ns app=web 2 30"
  made_by "$ns" foreign-2 web kube-controller-manager || fail "foreign-2"
  # three now: back to two once rs-sync has seen it
  assertTrue "back to 2 again" "wait_count $ns app=web 2 30"
  sleep 1.5
  assertEquals "one error line" 1 "$(warnings_logged)"
  assertEquals "one Event" "Warning ReplicaSet/web 1" "$(takeover_events "$ns")"
  assertContains "the Event names the manager" \
    "$(kubectl -n "$ns" get events --field-selector reason=AnotherControllerActive -o jsonpath='{.items[0].message}')" \
    '"kube-controller-manager"'
  assertEquals "metric still 1" 1 "$(warning_metric)"
}

# kcm [FLAGS...]: kube-controller-manager of the test build on the test
# cluster, as the guide's control plane would run it (no leader election,
# no serving port: one instance, nothing to scrape).
start_kcm() {
  "$K8S_BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG" \
    --leader-elect=false --authentication-skip-lookup \
    --bind-address 127.0.0.1 --secure-port 0 "$@" >>"$TMP/kcm.log" 2>&1 &
  KCM_PID=$!
}

stop_kcm() {
  [ -n "$KCM_PID" ] || return 0
  kill "$KCM_PID" 2>/dev/null
  wait "$KCM_PID" 2>/dev/null
  KCM_PID=
}

# created_by NS MANAGER: the live pods of NS whose owners MANAGER set.
created_by() {
  kubectl -n "$1" get pods -o json --show-managed-fields | jq --arg m "$2" '
    [.items[] | select(.metadata.deletionTimestamp == null) |
     select(any(.metadata.managedFields[]; .manager == $m and
       (.fieldsV1["f:metadata"] | has("f:ownerReferences"))))] | length'
}

# doc/operator-guide.md, "Replacing the upstream controllers": its steps
# in its order, then its way back.
test_operator_guide_takeover() {
  need_cluster || return
  [ -x "$K8S_BIN/kube-controller-manager" ] || { fail "no kube-controller-manager in $K8S_BIN"; return; }
  ns=$(new_ns guide)
  make_rs "$ns" web 2
  # 1. kube-controller-manager without its ReplicaSet and
  #    ReplicationController controllers
  start_kcm --controllers='*,-replicaset-controller,-replicationcontroller-controller'
  # 2. it runs (its service-account controller made the namespace's
  #    account), and leaves ReplicaSets alone
  assertTrue "kcm at work" "wait_for 60 kubectl -n $ns get serviceaccount default"
  for c in replicaset-controller replicationcontroller-controller; do
    assertTrue "kcm: $c disabled" "grep -q 'controller is disabled\" controller=\"$c\"' '$TMP/kcm.log'"
  done
  sleep 2
  assertEquals "no controller: no pod" 0 "$(count_live "$ns" app=web)"
  # 3. ours
  start_controller
  metrics_start || fail "rs-metrics did not start"
  assertTrue "ready" "wait_for 30 is_code /readyz 200" || pipeline_logs
  assertTrue "2 pods" "wait_count $ns app=web 2 30"
  kubectl -n "$ns" scale rs web --replicas 3 >/dev/null
  assertTrue "3 pods" "wait_count $ns app=web 3 30"
  assertTrue "status 3" "wait_for 20 rs_status_is $ns web '.replicas == 3'"
  sleep 2
  # 4. exact, and no other controller seen
  assertEquals "3 creates, none extra" 3 "$(pod_adds "$ns")"
  assertEquals "all ours" 3 "$(created_by "$ns" rs-apply)"
  assertEquals "no warning" 0 "$(warnings_logged)"
  assertEquals "ready: no take-over failure" 200 "$(code /readyz)"
  assertEquals "no AnotherControllerActive" "" "$(takeover_events "$ns")"
  # back: ours stopped, then kcm restarted with its defaults
  stop_controller
  stop_kcm
  start_kcm
  kubectl -n "$ns" scale rs web --replicas 4 >/dev/null
  assertTrue "kcm makes the 4th" "wait_count $ns app=web 4 60"
  sleep 2
  assertEquals "still exact" 4 "$(count_live "$ns" app=web)"
  assertEquals "3 ours, 1 kcm's" "3 1" \
    "$(created_by "$ns" rs-apply) $(created_by "$ns" kube-controller-manager)"
  stop_kcm
}

. "$SHUNIT2"
