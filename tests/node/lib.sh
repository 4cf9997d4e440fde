# lib.sh of the node suites (tests/node/*.sh): tests/shell/lib.sh, and the
# test node that `tests/run-all.sh node` starts (tests/env/node): its
# directory is $RS_TEST_NODE, its settings in $RS_TEST_NODE/env. Without a
# node, $RS_NODE_SKIP says why, and every test skips with that message.
. "$(dirname "$0")/../shell/lib.sh"
. "$top/tests/env/certs.sh"
NODE_NAME= CTR= STATIC_PODS=
[ -n "${RS_TEST_NODE:-}" ] && [ -f "$RS_TEST_NODE/env" ] && . "$RS_TEST_NODE/env"

IMAGE_TAR=${RS_IMAGE_TAR:-$top/build/image/rs-controller.tar}

have_node() { [ -n "$NODE_NAME" ] && [ -n "${KUBECONFIG:-}" ]; }

# need_node: skip the test (skip_test, which run-all counts and CI fails)
# when there is no node.
need_node() {
  if ! have_node; then
    skip_test "${RS_NODE_SKIP:-no test node (run: tests/run-all.sh node)}"
    return 1
  fi
  return 0
}

# node_ns NAME: a fresh namespace whose "default" service account exists
# (pods are refused until the serviceaccount controller has made it).
node_ns() {
  _ns=$(new_ns "$1") || return 1
  wait_for 30 kubectl -n "$_ns" get serviceaccount default || return 1
  echo "$_ns"
}


# running_uids NS SELECTOR: uid of each pod of SELECTOR that is Running and
# not being deleted, one a line.
running_uids() {
  kubectl -n "$1" get pods -l "$2" -o json |
    jq -r '.items[] | select(.metadata.deletionTimestamp == null and .status.phase == "Running") | .metadata.uid'
}

# ready_uids NS SELECTOR: the same for pods whose Ready condition is True.
ready_uids() {
  kubectl -n "$1" get pods -l "$2" -o json |
    jq -r '.items[] | select(.metadata.deletionTimestamp == null) |
      select(any(.status.conditions[]?; .type == "Ready" and .status == "True")) | .metadata.uid'
}

# one_new_running NS SELECTOR OLDUID: exactly one pod Running, not OLDUID.
one_new_running() {
  _u=$(running_uids "$1" "$2")
  [ "$(echo "$_u" | grep -c .)" -eq 1 ] && [ "$_u" != "$3" ]
}

# node_tasks: the number of containers (pods' and sandboxes') running on the
# node's containerd.
node_tasks() { $CTR tasks ls -q 2>/dev/null | grep -c .; }

# pod_ready NAME: the pod (namespace rs-controller) is Ready.
pod_ready() {
  [ "$(kubectl -n rs-controller get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# created NS: how many distinct pods of NS the suite's recorder (rs-watch
# pods >$TMP/pods.ndjson, as admin) saw created.
created() {
  jq -r --arg ns "$1" 'select(.type == "ADDED" and .object.metadata.namespace == $ns) |
    .object.metadata.uid' "$TMP/pods.ndjson" 2>/dev/null | sort -u | grep -c .
}

# converged NS NAME N: N live pods, status.replicas N, as observed.
converged() {
  count_is "$1" "app=$2" "$3" &&
    rs_status_is "$1" "$2" ".replicas == $3 and .observedGeneration == $(rs_json "$1" "$2" | jq .metadata.generation)"
}

# need_image: skip without a node or the image, saying how to make it.
need_image() {
  need_node || return 1
  [ -f "$IMAGE_TAR" ] && return 0
  skip_test "no $IMAGE_TAR (make image)"
  return 1
}

# import_image: the image into the node's containerd, timed.
import_image() {
  local t0
  t0=$(now_ms)
  $CTR images import "$IMAGE_TAR" >"$TMP/import.log" 2>&1 || { fail "ctr import"; cat "$TMP/import.log" >&2; }
  echo "figure: image imported into containerd in $(( $(now_ms) - t0 )) ms" >&2
}

# node_overlay OVERLAY: deploy/OVERLAY with the test's patch, in
# $TMP/overlay: no kube-proxy here, so every DaemonSet's in-cluster
# address is the API server's own.
node_overlay() {
  mkdir -p "$TMP/overlay"
  cat >"$TMP/overlay/kustomization.yaml" <<K
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to "$TMP/overlay" "$top/deploy/$1")
patches:
- target: {kind: DaemonSet}
  patch: |-
    - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: KUBERNETES_SERVICE_HOST, value: "127.0.0.1"}}
    - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: KUBERNETES_SERVICE_PORT, value: "$APISERVER_PORT"}}
K
}
