#!/bin/bash
# sharded.sh: deploy/sharded on a real kubelet: the image of `make image`
# imported into the node's containerd, kubectl apply -k of the overlay
# (with this test's patch: no kube-proxy here, so the in-cluster address is
# the API server's own), three instances on the one node (the overlay's
# three DaemonSets, each rs-metrics on its own port of the host's network).
# kube-controller-manager runs without its replicaset and
# replicationcontroller controllers (tests/env/node), so a ReplicaSet here
# converges only if the instance holding its namespace's bucket does it.
#
# Who holds what is read from the Leases (rs-lease --list, as admin); which
# bucket a namespace is in is computed here, in Python, apart from
# libcommon/shard.c. Counts are the pods' creations as a separate watcher
# (rs-watch pods, as admin) saw them, never the controller's word.
. "$(dirname "$0")/lib.sh"

SEL=app.kubernetes.io/component=shard
GROUP=rs-controller-replicaset
B=32

oneTimeSetUp() {
  have_node && [ -f "$IMAGE_TAR" ] || return 0
  . "$RS_TEST_CLUSTER/env"
  import_image
  # incluster.sh's controllers are being stopped: none may act beside the
  # instances (their pods gone, its namespace deleted or still there)
  wait_for 120 eval '[ -z "$(kubectl -n rs-controller get pods -l app.kubernetes.io/name=rs-controller -o name 2>/dev/null)" ]' ||
    fail "rs-controller pods of another suite still there"
  wait_for 120 eval '[ "$(kubectl get namespace rs-controller -o jsonpath={.status.phase} 2>/dev/null)" != Terminating ]' ||
    fail "the namespace rs-controller is still being deleted"
  rs_bg rs-watch pods >"$TMP/pods.ndjson" 2>"$TMP/podwatch.log"
  node_overlay sharded
}

oneTimeTearDown() {
  if [ -n "${NODE_NAME:-}" ] && [ -f "$IMAGE_TAR" ]; then
    kubectl delete -k "$TMP/overlay" --wait=false >/dev/null 2>&1
    kubectl delete namespace -l rs-test=sharded --wait=false >/dev/null 2>&1
  fi
  rs_cleanup
  rm -rf "$RS_STATE_DIR"
}

# shard_pods: the names of the instances' pods, not being deleted.
shard_pods() {
  kubectl -n rs-controller get pods -l "$SEL" -o json |
    jq -r '.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name' | sort
}

# n_ready N: N instances, each Ready.
n_ready() {
  local p n=0
  for p in $(shard_pods); do pod_ready "$p" && n=$((n + 1)); done
  [ "$n" -eq "$1" ] && [ "$(shard_pods | grep -c .)" -eq "$1" ]
}

# holders [GROUP]: "BUCKET HOLDER" for each bucket Lease that is held and
# live, of B buckets, by rs-lease --list.
holders() {
  rs-lease --list --lease-namespace rs-controller "${1:-$GROUP}" 2>/dev/null |
    awk -v b=$B '$1 == "bucket" && $4 == "live" && $6 == b { print $2 + 0, $3 }'
}

# split_among POD...: every bucket of both groups held by one of PODs,
# each POD holding its fair share (ceil(B / N) or one less, as the last
# takers get what is left).
split_among() {
  local g p n share=$(( (B + $# - 1) / $# ))
  for g in $GROUP rs-controller-replicationmanager; do
    holders "$g" >"$TMP/holders" || return 1
    [ "$(cut -d' ' -f1 "$TMP/holders" | sort -u | wc -l)" -eq $B ] || return 1
    [ "$(wc -l <"$TMP/holders")" -eq $B ] || return 1
    for p in "$@"; do
      n=$(awk -v p="$p" '$2 == p' "$TMP/holders" | wc -l)
      [ "$n" -ge $(( B - share * ($# - 1) )) ] && [ "$n" -le "$share" ] || return 1
    done
    [ "$(cut -d' ' -f2 "$TMP/holders" | sort -u | grep -cvxF "$(printf '%s\n' "$@")")" -eq 0 ] || return 1
  done
}

# bucket_of NS: its bucket of B (FNV-1a 64 of the name, bucket i covering
# [floor(i * 2^64 / B), floor((i+1) * 2^64 / B))).
bucket_of() {
  python3 -c '
import sys
h = 0xcbf29ce484222325
for c in sys.argv[1].encode():
    h = ((h ^ c) * 0x100000001b3) % (1 << 64)
print((h * int(sys.argv[2])) >> 64)' "$1" $B
}

# owner NS: the pod holding NS's bucket.
owner() { holders | awk -v b="$(bucket_of "$1")" '$1 == b { print $2 }'; }

NSS=
test_instances_split_the_buckets() {
  need_image || return 0
  local t0 pods p
  t0=$(now_ms)
  kubectl apply -k "$TMP/overlay" >"$TMP/apply.log" 2>&1 || { fail "apply -k"; cat "$TMP/apply.log" >&2; return; }
  wait_for 90 n_ready 3 || { fail "not 3 instances Ready"; kubectl -n rs-controller get pods -o wide >&2; return; }
  pods=$(shard_pods)
  echo "figure: 3 instances Ready $(( $(now_ms) - t0 )) ms after apply -k" >&2
  # shellcheck disable=SC2086
  wait_for 90 split_among $pods || { fail "the buckets not split among $(echo $pods)"; holders | sort -n >&2; return; }
  echo "figure: 2 x $B buckets split among 3 instances $(( $(now_ms) - t0 )) ms after apply -k: $(holders | cut -d' ' -f2 | sort | uniq -c | awk '{ print $1 }' | tr '\n' ' ')" >&2
  for p in $pods; do
    assertEquals "$p: no restarts" 0 "$(kubectl -n rs-controller get pod "$p" -o jsonpath='{.status.containerStatuses[0].restartCount}')"
    # the instance's pipeline runs on the buckets it holds, under its name
    wait_for 30 eval 'kubectl -n rs-controller logs "$p" 2>/dev/null | grep -q "joining shard group rs-controller/$GROUP ($B buckets) as $p"' ||
      fail "$p: no rs-lease joining as its pod name"
    wait_for 30 eval 'kubectl -n rs-controller logs "$p" 2>/dev/null | grep -q "rs-pipeline: owning [0-9]* of $B buckets"' ||
      fail "$p: no pipeline owning buckets"
  done
  assertEquals "each instance's member Lease, in each group" 6 \
    "$(for g in $GROUP rs-controller-replicationmanager; do rs-lease --list --lease-namespace rs-controller $g; done | grep -c '^member .* live ')"
}

# Namespaces until each instance owns one (at most 30), a ReplicaSet in
# each: 0 -> 12 replicas, exact counts, each made by its namespace's owner.
test_scale_up_exact() {
  need_image || return 0
  local ns i t0 o p
  : >"$TMP/owners"
  for i in $(seq 1 30); do
    ns=$(node_ns "sh$i") || { fail "namespace"; return; }
    kubectl label namespace "$ns" rs-test=sharded >/dev/null
    make_rs "$ns" web 0 || { fail "make_rs"; return; }
    NSS="$NSS $ns"
    echo "$ns $(owner "$ns")" >>"$TMP/owners"
    [ "$(cut -d' ' -f2 "$TMP/owners" | sort -u | grep -c .)" -eq 3 ] && [ "$i" -ge 6 ] && break
  done
  assertEquals "namespaces of every instance: $(cat "$TMP/owners")" 3 "$(cut -d' ' -f2 "$TMP/owners" | sort -u | grep -c .)"
  t0=$(now_ms)
  for ns in $NSS; do kubectl -n "$ns" scale rs web --replicas 12 >/dev/null; done
  for ns in $NSS; do
    wait_for 90 converged "$ns" web 12 || fail "$ns: not 12 pods: $(count_live "$ns" app=web)"
  done
  echo "figure: $(echo $NSS | wc -w) ReplicaSets 0 -> 12 converged in $(( $(now_ms) - t0 )) ms" >&2
  sleep 3
  for ns in $NSS; do
    assertEquals "$ns: pods created" 12 "$(created "$ns")"
    assertEquals "$ns: pods live" 12 "$(count_live "$ns" app=web)"
  done
  # each namespace's ReplicaSet synced by the instance that owns it: its
  # log has the namespace, the others' do not
  while read -r ns o; do
    kubectl -n rs-controller logs "$o" 2>/dev/null | grep -q "$ns/web" ||
      fail "$ns/web not in the log of its owner $o"
    for p in $(shard_pods); do
      [ "$p" = "$o" ] && continue
      if kubectl -n rs-controller logs "$p" 2>/dev/null | grep -q "$ns/web"; then
        fail "$ns/web in the log of $p, which does not own it ($o does)"
      fi
    done
  done <"$TMP/owners"
}

# One instance's pod deleted: it releases its buckets as it stops, the
# other two take them, the DaemonSet makes a new pod, which takes its share
# back; meanwhile every ReplicaSet scales 12 -> 20, and every count is
# exact.
test_pod_deleted_moves_buckets() {
  need_image || return 0
  local victim ns t0 pods left
  [ -n "$NSS" ] || { fail "no ReplicaSets from test_scale_up_exact"; return; }
  victim=$(owner "${NSS%% *}"); victim=${victim:-$(shard_pods | head -1)}
  [ -n "$victim" ] || { fail "no instance holds $(echo $NSS | cut -d' ' -f1)'s bucket"; return; }
  holders | awk -v p="$victim" '$2 == p { print $1 }' | sort -n >"$TMP/victim.buckets"
  t0=$(now_ms)
  kubectl -n rs-controller delete pod "$victim" --wait=false >/dev/null
  for ns in $NSS; do kubectl -n "$ns" scale rs web --replicas 20 >/dev/null; done
  # its buckets go to live instances: it holds none, no bucket is left free
  wait_for 60 eval '[ "$(holders | awk -v p="$victim" '"'"'$2 == p'"'"' | wc -l)" -eq 0 ] && [ "$(holders | wc -l)" -eq $B ]' ||
    { fail "$victim's buckets did not move"; holders | sort -n >&2; return; }
  echo "figure: $victim deleted: its $(wc -l <"$TMP/victim.buckets") buckets held by others $(( $(now_ms) - t0 )) ms later" >&2
  wait_for 90 eval 'n_ready 3 && ! shard_pods | grep -qx "$victim"' ||
    { fail "no new third instance Ready"; kubectl -n rs-controller get pods -o wide >&2; return; }
  pods=$(shard_pods)
  # shellcheck disable=SC2086
  wait_for 90 split_among $pods || { fail "not split among $(echo $pods) again"; holders | sort -n >&2; return; }
  echo "figure: split among 3 again $(( $(now_ms) - t0 )) ms after the delete" >&2
  for ns in $NSS; do
    wait_for 90 converged "$ns" web 20 || fail "$ns: not 20 pods: $(count_live "$ns" app=web)"
  done
  sleep 3
  for ns in $NSS; do
    assertEquals "$ns: pods created" 20 "$(created "$ns")"
    assertEquals "$ns: pods live" 20 "$(count_live "$ns" app=web)"
  done
  left=$(kubectl -n rs-controller get pods -l "$SEL" -o name | wc -l)
  assertEquals "three instances, the deleted one gone" 3 "$left"
}

. "$SHUNIT2"
