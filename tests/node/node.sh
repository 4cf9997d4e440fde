#!/bin/bash
# node.sh: the test node alone (tests/env/node), before anything of ours
# runs on it: the node is Ready as kubeadm would leave a control-plane node,
# a hostNetwork DaemonSet pod of the local pause image runs, and when its pod
# object is deleted the DaemonSet controller makes another that the kubelet
# runs, while the old pod's containers go.
. "$(dirname "$0")/lib.sh"

oneTimeSetUp() {
  have_node || return 0
  NS=$(node_ns node) || fail "no namespace"
}

oneTimeTearDown() {
  [ -n "${NS:-}" ] && kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  rs_cleanup
  rm -rf "$RS_STATE_DIR"
}

test_node_ready_control_plane() {
  need_node || return 0
  local n
  n=$(kubectl get node "$NODE_NAME" -o json) || { fail "no node $NODE_NAME"; return; }
  assertEquals "Ready" True "$(echo "$n" | jq -r '.status.conditions[] | select(.type == "Ready") | .status')"
  assertEquals "control-plane label" "" \
    "$(echo "$n" | jq -r '.metadata.labels["node-role.kubernetes.io/control-plane"]')"
  assertEquals "control-plane taint" NoSchedule \
    "$(echo "$n" | jq -r '.spec.taints[]? | select(.key == "node-role.kubernetes.io/control-plane") | .effect')"
  # node-lifecycle lifted the not-ready taint the node was registered with
  assertEquals "no not-ready taint" "" \
    "$(echo "$n" | jq -r '.spec.taints[]? | select(.key == "node.kubernetes.io/not-ready") | .key')"
  assertEquals "kubelet on loopback" 10250 "$(echo "$n" | jq -r '.status.daemonEndpoints.kubeletEndpoint.Port')"
}

pause_ds() {
  kubectl -n "$NS" apply -f - >/dev/null <<DS
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: pause}
spec:
  selector: {matchLabels: {app: pause}}
  template:
    metadata: {labels: {app: pause}}
    spec:
      hostNetwork: true
      nodeSelector: {node-role.kubernetes.io/control-plane: ""}
      tolerations:
      - {key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}
      terminationGracePeriodSeconds: 2
      containers:
      - name: pause
        image: $PAUSE_IMAGE
        imagePullPolicy: Never
DS
}

# The pod runs, is replaced when deleted (three times), and goes with its
# DaemonSet: each step seen on the node's containerd too.
test_daemonset_pod_runs_and_comes_back() {
  need_node || return 0
  local t0 uid old i before
  before=$(node_tasks)
  t0=$(now_ms)
  pause_ds || { fail "apply"; return; }
  wait_for 60 one_new_running "$NS" app=pause none || { fail "pause pod not Running"; kubectl -n "$NS" describe pods >&2; return; }
  echo "figure: pause pod Running $(( $(now_ms) - t0 )) ms after apply" >&2
  # sandbox and container
  assertEquals "containers on the node" $((before + 2)) "$(node_tasks)"
  uid=$(running_uids "$NS" app=pause)
  for i in 1 2 3; do
    old=$uid
    t0=$(now_ms)
    kubectl -n "$NS" delete pod -l app=pause --wait=false >/dev/null
    wait_for 60 one_new_running "$NS" app=pause "$old" || { fail "not recreated ($i)"; return; }
    uid=$(running_uids "$NS" app=pause)
    echo "figure: deleted pod replaced and Running in $(( $(now_ms) - t0 )) ms ($i)" >&2
  done
  assertNotEquals "a new pod" "$old" "$uid"
  wait_for 60 eval '[ "$(node_tasks)" -eq $((before + 2)) ]' ||
    assertEquals "the deleted pods' containers gone" $((before + 2)) "$(node_tasks)"
  kubectl -n "$NS" delete daemonset pause >/dev/null
  wait_for 60 eval '[ -z "$(kubectl -n "$NS" get pods -o name)" ]' || fail "pods left after the DaemonSet's deletion"
  wait_for 60 eval '[ "$(node_tasks)" -eq "$before" ]' ||
    assertEquals "containers after the DaemonSet's deletion" "$before" "$(node_tasks)"
}

. "$SHUNIT2"
