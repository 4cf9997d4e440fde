#!/bin/bash
# deploy.sh: deploy/'s kustomize tree. Every overlay builds (kubectl
# kustomize) and the API server takes what it builds (apply -k
# --dry-run=server; the static pod by create --dry-run=server). The shapes
# the take-over's safety rests on: the control-plane and sharded overlays
# run DaemonSets on the control-plane nodes and no Deployment, ReplicaSet or
# ReplicationController (a pod rs-controller would create for itself); the
# sharded one runs several instances a node, apart (ports, selectors), each
# named by its pod, with one B, and only it grants shard mode's Lease verbs;
# the
# one Deployment in deploy/ is the canary's, which says it is safe only
# beside upstream's controllers and watches one namespace. Every pod is
# non-root 65532 on a read-only root filesystem with leader election (or
# shard mode), its
# only writable place a memory emptyDir at /run/rs-controller, its probes
# on the port rs-metrics listens on.
. "$(dirname "$0")/lib.sh"

OVERLAYS="base control-plane static-pod canary sharded"

oneTimeTearDown() {
  # the dry runs create nothing; the namespace the static pod's dry run
  # needed is the only object made for real (rbac.sh makes it too)
  rm -rf "$RS_STATE_DIR"
}

# built OVERLAY: kubectl kustomize's output as one JSON object per line.
built() {
  kubectl kustomize "$top/deploy/$1" | kubectl create --dry-run=client -o json -f - |
    jq -c 'if .kind == "List" then .items[] else . end'
}

test_overlays_build() {
  need_cluster || return   # kubectl maps the kinds by discovery
  local o n
  for o in $OVERLAYS; do
    n=$(built "$o" | wc -l)
    assertTrue "kubectl kustomize deploy/$o: $n objects" "[ $n -ge 6 ]"
  done
}

test_server_dry_run() {
  need_cluster || return
  local o out
  # the namespace first, for real: a namespaced object's dry run needs it
  kubectl apply -f "$top/deploy/base/namespace.yaml" >/dev/null
  for o in $OVERLAYS; do
    out=$(kubectl apply -k "$top/deploy/$o" --dry-run=server 2>&1)
    assertEquals "apply -k deploy/$o --dry-run=server: $out" 0 $?
  done
  assertContains "the DaemonSet" "$(kubectl apply -k "$top/deploy/control-plane" --dry-run=server 2>&1)" \
    "daemonset.apps/rs-controller"
  out=$(kubectl apply -k "$top/deploy/sharded" --dry-run=server 2>&1)
  for i in 0 1 2; do
    assertContains "the sharded DaemonSet $i" "$out" "daemonset.apps/rs-controller-shard-$i"
  done
  out=$(kubectl create --dry-run=server -f "$top/deploy/static-pod/rs-controller.yaml" 2>&1)
  assertEquals "the static pod, create --dry-run=server: $out" 0 $?
}

# daemonsets_alone OVERLAY N: OVERLAY runs N DaemonSets and no other
# workload, each on the control-plane nodes with the host's network; the
# DaemonSets, one a line, in $TMP/ds.
daemonsets_alone() {
  local objs kinds ds
  objs=$(built "$1")
  kinds=$(echo "$objs" | jq -r .kind | sort | tr '\n' ' ')
  assertEquals "no workload of rs-controller's kinds in $1" "" \
    "$(echo "$objs" | jq -r 'select(.kind == "Deployment" or .kind == "ReplicaSet" or .kind == "ReplicationController" or .kind == "StatefulSet") | .kind')"
  echo "$objs" | jq -c 'select(.kind == "DaemonSet")' >"$TMP/ds"
  assertEquals "$2 DaemonSets in $1 ($kinds)" "$2" "$(grep -c . "$TMP/ds")"
  while read -r ds; do
    assertEquals "on control-plane nodes" '""' \
      "$(echo "$ds" | jq -c '.spec.template.spec.nodeSelector["node-role.kubernetes.io/control-plane"]')"
    assertEquals "tolerates the control-plane taint, not-ready, unreachable" \
      "node-role.kubernetes.io/control-plane node.kubernetes.io/not-ready node.kubernetes.io/unreachable" \
      "$(echo "$ds" | jq -r '[.spec.template.spec.tolerations[].key] | sort | join(" ")')"
    assertEquals "hostNetwork" true "$(echo "$ds" | jq .spec.template.spec.hostNetwork)"
    assertEquals "dnsPolicy" ClusterFirstWithHostNet "$(echo "$ds" | jq -r .spec.template.spec.dnsPolicy)"
  done <"$TMP/ds"
}

test_control_plane_never_depends_on_itself() {
  need_cluster || return
  local o
  daemonsets_alone control-plane 1
  # every Deployment in every overlay: the canary, and it says so
  for o in $OVERLAYS; do
    built "$o" | jq -c 'select(.kind == "Deployment")'
  done | sort -u >"$TMP/deployments"
  assertEquals "one Deployment in deploy/" 1 "$(wc -l <"$TMP/deployments")"
  assertEquals "it is the canary" rs-controller-canary "$(jq -r .metadata.name "$TMP/deployments")"
  assertContains "it warns" "$(jq -r '.metadata.annotations["rs-controller/warning"]' "$TMP/deployments")" \
    "only beside kube-controller-manager's ReplicaSet controller"
  assertContains "it watches one namespace" \
    "$(jq -c '.spec.template.spec.containers[0].env' "$TMP/deployments")" '"value":"--namespace rs-canary"'
  assertContains "the manifest says so loudly" "$(head -1 "$top/deploy/canary/deployment.yaml")" \
    "ONLY BESIDE UPSTREAM'S CONTROLLERS. ONE NAMESPACE."
}

# The sharded overlay: three DaemonSets (three instances a node), none of
# which selects another's pods, each rs-metrics on a port of its own; every
# instance in shard mode with the same B, named by its pod; the Lease
# verbs of shard mode granted here only.
test_sharded_instances_apart() {
  need_cluster || return
  local objs o
  daemonsets_alone sharded 3
  assertEquals "selectors: one instance each" "0 1 2" \
    "$(jq -r '.spec.selector.matchLabels["rs-controller.io/instance"]' "$TMP/ds" | sort | tr '\n' ' ' | sed 's/ $//')"
  assertEquals "each template matches its selector only" 3 \
    "$(jq -r '.spec.template.metadata.labels as $l | .spec.selector.matchLabels | to_entries | all(.value == $l[.key])' "$TMP/ds" | grep -c true)"
  assertEquals "ports 10270 to 10272" "10270 10271 10272" \
    "$(jq -r '.spec.template.spec.containers[0].env[] | select(.name == "RS_METRICS_PORT") | .value' "$TMP/ds" | sort | tr '\n' ' ' | sed 's/ $//')"
  assertEquals "one B, in every instance" "32 32 32" \
    "$(jq -r '.spec.template.spec.containers[0].args | .[index("--shards") + 1]' "$TMP/ds" | tr '\n' ' ' | sed 's/ $//')"
  assertEquals "the identity is the pod's name" "metadata.name metadata.name metadata.name" \
    "$(jq -r '.spec.template.spec.containers[0].env as $e | ($e[] | select(.name == "RS_LEASE_FLAGS") | .value | capture("--identity \\$\\((?<v>[A-Z_]+)\\)").v) as $v |
      $e[] | select(.name == $v) | .valueFrom.fieldRef.fieldPath' "$TMP/ds" | tr '\n' ' ' | sed 's/ $//')"
  objs=$(built sharded)
  assertEquals "list and delete on Leases, in the sharded overlay" "delete list" \
    "$(echo "$objs" | jq -r 'select(.kind == "Role") | .rules[] | select(.resources | index("leases")) | .verbs[]' |
      grep -x -e list -e delete | sort | tr '\n' ' ' | sed 's/ $//')"
  for o in base control-plane static-pod canary; do
    assertEquals "no list or delete on Leases in $o" "" \
      "$(built "$o" | jq -r 'select(.kind == "Role" or .kind == "ClusterRole") | .rules[] | select(.resources | index("leases")) | .verbs[]' |
        grep -x -e list -e delete -e '\*')"
  done
}

# pods: the pod specs of every overlay and the static pod, one per line,
# with the port rs-metrics listens on.
pods() {
  local o
  for o in control-plane canary sharded; do
    built "$o" | jq -c 'select(.spec.template.spec.containers != null) | .spec.template.spec + {name: .metadata.name}'
  done
  kubectl create --dry-run=client -o json -f "$top/deploy/static-pod/rs-controller.yaml" |
    jq -c '.spec + {name: .metadata.name}'
}

test_pods_are_locked_down() {
  need_cluster || return
  local p name c env_listen port probe
  pods >"$TMP/pods"
  assertEquals "six pod templates" 6 "$(wc -l <"$TMP/pods")"
  while read -r p; do
    name=$(echo "$p" | jq -r .name)
    c=$(echo "$p" | jq -c '.containers[0]')
    assertEquals "$name: uid" 65532 "$(echo "$p" | jq .securityContext.runAsUser)"
    assertEquals "$name: non-root" true "$(echo "$p" | jq .securityContext.runAsNonRoot)"
    assertEquals "$name: read-only root" true "$(echo "$c" | jq .securityContext.readOnlyRootFilesystem)"
    assertEquals "$name: no privilege escalation" false "$(echo "$c" | jq .securityContext.allowPrivilegeEscalation)"
    assertEquals "$name: capabilities" '["ALL"]' "$(echo "$c" | jq -c .securityContext.capabilities.drop)"
    assertEquals "$name: --leader-elect or --shards" true \
      "$(echo "$c" | jq '.args | index("--leader-elect") != null or index("--shards") != null')"
    assertEquals "$name: the one writable mount" "/run/rs-controller" \
      "$(echo "$c" | jq -r '[.volumeMounts[] | select(.readOnly != true) | .mountPath] | join(" ")')"
    assertEquals "$name: a memory emptyDir" Memory \
      "$(echo "$p" | jq -r '.volumes[] | select(.name == "run") | .emptyDir.medium')"
    assertEquals "$name: the image" localhost/rs-controller:latest "$(echo "$c" | jq -r .image)"
    # the probes name the port rs-metrics is told to listen on
    env_listen=$(echo "$c" | jq -r '.env[] | select(.name == "RS_METRICS_FLAGS") | .value')
    port=$(echo "$c" | jq -r '.env[] | select(.name == "RS_METRICS_PORT") | .value')
    env_listen=${env_listen/\$(RS_METRICS_PORT)/$port}
    probe=$(echo "$c" | jq -r '.livenessProbe.httpGet.port as $p | if ($p | type) == "number" then $p else (.ports[] | select(.name == $p) | .containerPort) end')
    assertContains "$name: liveness on rs-metrics' port ($env_listen)" "$env_listen " ":$probe "
  done <"$TMP/pods"
}

test_metrics_ports_apart() {
  # the DaemonSet's and the static pod's rs-metrics on one node's network
  need_cluster || return
  local ds sp
  ds=$(pods | jq -r 'select(.name == "rs-controller" and .hostNetwork == true and (.serviceAccountName // "") != "") | .containers[0].livenessProbe.httpGet.port')
  sp=$(pods | jq -r 'select((.serviceAccountName // "") == "") | .containers[0].livenessProbe.httpGet.port')
  assertEquals "the DaemonSet's port" 10260 "$ds"
  assertEquals "the static pod's port" 10261 "$sp"
  assertEquals "no two pods on the host's network ask one port" "" \
    "$(pods | jq -r 'select(.hostNetwork == true) | .containers[0].livenessProbe.httpGet.port' | sort | uniq -d)"
  assertEquals "the probes ask 127.0.0.1 (host network)" "127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1" \
    "$(pods | jq -r 'select(.hostNetwork == true) | .containers[0].livenessProbe.httpGet.host' | tr '\n' ' ' | sed 's/ $//')"
}

. "$SHUNIT2"
