#!/bin/bash
# Taking over from kube-controller-manager: the guard that reports another
# active ReplicaSet controller (rs-sync(1), Take-over guard).
. "$(dirname "$0")/lib.sh"

KR=${KR:-$top/build/test/kube-request}
WARNING='another ReplicaSet controller is active'
tearDown() {
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
  need_cluster || return 0
  ns=$(new_ns takeover)
  # upstream's pod from before the take-over: in the initial list, no sign
  # of a controller running now
  make_rs "$ns" before 1
  made_by "$ns" before-0 before kube-controller-manager || fail "pod before"
  start_controller
  metrics_start || fail "rs-metrics did not start"
  assertTrue "ready" "wait_for 30 is_code /readyz 200"
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

. "$SHUNIT2"
