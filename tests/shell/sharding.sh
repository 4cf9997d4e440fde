#!/bin/bash
# run-all: slow
# Sharding (doc/sharding.md, issue 32) against the real test apiserver.
# rs-lease --shards alone, with a prog that records the shard file it was
# started with: B buckets split disjointly and fairly between copies; kill
# -9 of a copy moves its buckets to the others no sooner than the lease
# duration and soon after; a copy that joins gets its share, the others
# giving theirs up; a copy with no bucket keeps no prog but stays; TERM
# releases at once; a stale member Lease is deleted; --list; the flags.
# Then the controller itself: SHARD_INSTANCES (3) copies of rs-queue +
# rs-pipeline, each with its own state directory, over SHARD_NS (60)
# namespaces of SHARD_RS_PER_NS (5) ReplicaSets: exact counts and no pod
# created twice (a separate recorder watches the pods), across a kill -9,
# a copy joining during a scale-up, and a copy cut off from the API server
# (no write sent after its fence's deadline). Short timings throughout:
# lease 4 s, renew deadline 3 s, retry 1 s.
. "$(dirname "$0")/lib.sh"

SHARD_INSTANCES=${SHARD_INSTANCES:-3}
SHARD_NS=${SHARD_NS:-60}
SHARD_RS_PER_NS=${SHARD_RS_PER_NS:-5}
# lib.sh: SHARD_B (32), SHARD_GROUP, SHARD_TIMING, LEASE_DUR, RENEW, the
# instances (start_instance) and the shard files (held, split_ok).

# sprog.sh DIR: appends the shard file it was started with to DIR.starts,
# its pid to DIR.pid, then sleeps.
printf '#!/bin/sh\ncat "$RS_SHARD_FILE" >>"$1.starts"\necho $$ >"$1.pid.tmp" && mv "$1.pid.tmp" "$1.pid"\nexec sleep 600\n' >"$TMP/sprog.sh"

# shard_bg ID NS B [FLAGS...]: rs-lease --shards B as ID in the background
# over sprog.sh; files $TMP/ID.{json,fence,log,starts,pid}; pid in LEASE_PID.
shard_bg() {
  _id=$1 _ns=$2 _b=$3; shift 3
  # shellcheck disable=SC2086
  rs-lease -v 1 --lease-namespace "$_ns" --identity "$_id" --shards "$_b" \
    --shard-file "$TMP/$_id.json" --fence "$TMP/$_id.fence" $SHARD_TIMING "$@" \
    "$SHARD_GROUP" sh "$TMP/sprog.sh" "$TMP/$_id" 2>"$TMP/$_id.log" &
  LEASE_PID=$!
  LEASE_PIDS="$LEASE_PIDS $LEASE_PID"
}

# lease_holders NS: "BUCKET HOLDER" a bucket Lease of the group.
lease_holders() {
  kubectl -n "$1" get leases -l "rs-controller.io/shard-group=$SHARD_GROUP" -o json |
    jq -r '.items[] | select(.metadata.name | test("-b-")) |
      "\(.metadata.name | sub(".*-b-"; "") | tonumber) \(.spec.holderIdentity // "")"'
}
leases_held_by() { lease_holders "$1" | awk -v h="$2" '$2 == h { n++ } END { print n + 0 }'; }
# fence_nonzero ID: the slots of ID's fence that are not 0, one line.
fence_nonzero() {
  od -An -v -j 64 -td8 -w8 "$TMP/$1.fence" | awk '$1 != 0 { printf "%s%d", s, NR - 1; s = " " }'
}
all_have() {  # all_have N ID...: each shard file holds N buckets
  _n=$1; shift
  for _i in "$@"; do nheld_is "$_i" "$_n" || return 1; done
}
starts() { grep -c '"generation"' "$TMP/$1.starts" 2>/dev/null || echo 0; }

tearDown() {
  stop_leases
  rm -f "$TMP"/*.starts "$TMP"/*.json "$TMP"/*.fence
  stop_instances
  rs_cleanup
  # what a later suite's controller would otherwise list
  [ -n "$RUN" ] && kubectl delete rs,pods -A -l "run=$RUN" --wait=false >/dev/null 2>&1
  RUN=
}

oneTimeTearDown() {
  stop_instances
  rs_cleanup
  if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$TMP" ]; then cp -r "$TMP" "$RS_KEEP_LOGS"; fi
  rm -rf "$RS_STATE_DIR"
}

test_usage() {
  need_cluster || return
  rs-lease --shards 0 g true >/dev/null 2>&1; assertEquals "0 buckets" 100 $?
  rs-lease --shards 257 g true >/dev/null 2>&1; assertEquals "257 buckets" 100 $?
  rs-lease --fence /tmp/x g true >/dev/null 2>&1; assertEquals "--fence without --shards" 100 $?
  rs-lease --shard-file /tmp/x g true >/dev/null 2>&1; assertEquals "--shard-file without --shards" 100 $?
  rs-lease --shards 4 "$(printf 'g%.0s' $(seq 1 64))" true >/dev/null 2>&1
  assertEquals "a group name over 63 bytes" 100 $?
  rs-lease --shards 4 --fence /tmp/x --leader-elect-lease-duration 4s \
    --leader-elect-renew-deadline 3800ms --leader-elect-retry-period 1s g true >/dev/null 2>&1
  assertEquals "a fence with no margin" 100 $?
  rs-lease --shards 4 --leader-elect-lease-duration 3s \
    --leader-elect-renew-deadline 3s g true >/dev/null 2>&1
  assertEquals "the leader election's own check" 100 $?
  rs-lease --list g true >/dev/null 2>&1; assertEquals "--list runs no prog" 100 $?
  out=$(rs-lease --help); assertEquals "--help exits 0" 0 $?
  assertContains "help names --shards" "$out" "--shards B"
}

# Three copies: the buckets split disjointly, 11/11/10 of 32 at most, the
# Leases agree with the shard files, each fence has exactly its buckets.
test_split_and_files() {
  need_cluster || return
  ns=$(new_ns shard)
  for id in a b c; do shard_bg $id "$ns" 12; done
  assertTrue "the buckets split 4/4/4" "wait_for 30 all_have 4 a b c"
  assertTrue "disjoint, all 12" "split_ok 12 a b c"
  sleep 2
  for id in a b c; do
    assertEquals "$id's Leases" 4 "$(leases_held_by "$ns" $id)"
    assertEquals "$id's fence has its buckets" "$(held $id)" "$(fence_nonzero $id)"
    assertTrue "$id's prog runs" "alive $(cat "$TMP/$id.pid")"
    assertEquals "$id's shard file is 0600" 600 "$(stat -c %a "$TMP/$id.json")"
    assertEquals "$id's fence is 0600" 600 "$(stat -c %a "$TMP/$id.fence")"
    assertEquals "$id's fence: a header and 12 slots" 160 "$(stat -c %s "$TMP/$id.fence")"
  done
  # The selector in the file is the held set's, as libcommon/shard makes it.
  sel=$(jq -r .selector "$TMP/a.json")
  assertContains "a's selector" "$sel" "shardRange(object.metadata.namespace, '0x"
  assertEquals "3 members" 3 "$(kubectl -n "$ns" get leases -l rs-controller.io/shard-group=$SHARD_GROUP \
    -o name | grep -c -- "-m-")"
  out=$(rs-lease --lease-namespace "$ns" --list "$SHARD_GROUP")
  assertEquals "--list: 12 buckets" 12 "$(echo "$out" | grep -c '^bucket ')"
  assertEquals "--list: 3 live members" 3 "$(echo "$out" | grep -c '^member .* live ')"
  assertEquals "--list: a holds 4" 4 "$(echo "$out" | grep -c '^bucket [0-9]* a live ')"
}

# kill -9 of a copy: its prog dies with it (the guard), the others take its
# buckets once its Leases expired, not before, and restart their prog.
test_kill9_moves_buckets() {
  need_cluster || return
  ns=$(new_ns shard)
  for id in a b c; do shard_bg $id "$ns" 12; eval "p_$id=\$LEASE_PID"; done
  assertTrue "the buckets split 4/4/4" "wait_for 30 all_have 4 a b c"
  sleep 2
  sb=$(starts b)
  aprog=$(cat "$TMP/a.pid")
  t0=$(now_ms)
  kill9 "$p_a"
  assertTrue "a's prog dies with it" "wait_for 5 dead $aprog"
  assertTrue "b and c take a's buckets" "wait_for 30 all_have 6 b c"
  dt=$(( $(now_ms) - t0 ))
  echo "buckets moved $dt ms after kill -9"
  assertTrue "disjoint, all 12" "split_ok 12 b c"
  # a renewed at most a retry period (plus a fifth) before the kill.
  assertTrue "not before the lease duration less a round ($dt ms)" "[ $dt -ge $(( LEASE_DUR * 1000 - 1200 )) ]"
  assertTrue "within the lease duration and a few rounds ($dt ms)" "[ $dt -lt $(( LEASE_DUR * 1000 + 5000 )) ]"
  assertTrue "b's prog restarted with its new set" "[ $(starts b) -gt $sb ]"
  assertEquals "b's fence has its buckets" "$(held b)" "$(fence_nonzero b)"
}

# A fourth copy joins: ceil(12/4) = 3 each; the others give up their
# surplus (after stopping prog) and the newcomer takes it.
test_join_rebalances() {
  need_cluster || return
  ns=$(new_ns shard)
  for id in a b c; do shard_bg $id "$ns" 12; done
  assertTrue "the buckets split 4/4/4" "wait_for 30 all_have 4 a b c"
  shard_bg d "$ns" 12
  assertTrue "3 each" "wait_for 30 all_have 3 a b c d"
  assertTrue "disjoint, all 12" "split_ok 12 a b c d"
  for id in a b c; do
    assertContains "$id gave one up" "$(cat "$TMP/$id.log")" "released bucket"
  done
  sleep 3
  for id in a b c d; do
    assertEquals "$id's Leases" 3 "$(leases_held_by "$ns" $id)"
    assertEquals "$id's fence has its buckets" "$(held $id)" "$(fence_nonzero $id)"
  done
}

# More copies than buckets: the one left with none runs no prog but stays,
# and takes a bucket when a holder goes (TERM: released at once).
test_no_bucket_no_prog() {
  need_cluster || return
  ns=$(new_ns shard)
  shard_bg a "$ns" 2; pa=$LEASE_PID
  assertTrue "a holds both" "wait_for 20 all_have 2 a"
  shard_bg b "$ns" 2
  assertTrue "1 each" "wait_for 20 all_have 1 a b"
  shard_bg c "$ns" 2; pc=$LEASE_PID
  sleep 6
  assertTrue "c is alive" "alive $pc"
  assertFalse "c runs no prog" "test -e $TMP/c.pid"
  assertTrue "c's member counts: a and b still hold 1 each" "all_have 1 a b"
  aprog=$(cat "$TMP/a.pid")
  t0=$(now_ms)
  kill -TERM "$pa"
  wait "$pa"; rc=$?
  assertEquals "TERM: exit 0" 0 "$rc"
  assertTrue "a's prog stopped" "dead $aprog"
  assertContains "a released its bucket" "$(cat "$TMP/a.log")" "released lease $ns/$SHARD_GROUP-b-"
  assertTrue "c takes it" "wait_for 15 test -s $TMP/c.pid"
  dt=$(( $(now_ms) - t0 ))
  assertTrue "released: taken before the lease would expire ($dt ms)" "[ $dt -lt $(( LEASE_DUR * 1000 )) ]"
  assertTrue "1 each" "all_have 1 b c"
}

# A member Lease nobody renews is deleted after ten of its durations.
test_stale_member_deleted() {
  need_cluster || return
  ns=$(new_ns shard)
  kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: $SHARD_GROUP-m-00000000deadbeef
  labels: {rs-controller.io/shard-group: $SHARD_GROUP}
spec: {holderIdentity: ghost, leaseDurationSeconds: 1}
YAML
  shard_bg a "$ns" 4
  assertTrue "a holds all 4 (the ghost expired)" "wait_for 20 all_have 4 a"
  assertTrue "the ghost's Lease is deleted" \
    "wait_for 30 sh -c '! kubectl -n $ns get lease $SHARD_GROUP-m-00000000deadbeef'"
  assertContains "a says so" "$(cat "$TMP/a.log")" "deleting the stale member lease"
  assertTrue "a's own member Lease stays" \
    "kubectl -n $ns get leases -l rs-controller.io/shard-group=$SHARD_GROUP -o name | grep -q -- -m-"
}

# --- the controller, sharded ------------------------------------------------

RUN=
FAULTPROXY=${FAULTPROXY:-$RS_BIN/../test/faultproxy}
[ -x "$FAULTPROXY" ] || FAULTPROXY=$top/build/test/faultproxy
INSTANCE_APPLY_FLAGS=${SHARD_APPLY_FLAGS:-$INSTANCE_APPLY_FLAGS}

# make_load N R: N namespaces of R ReplicaSets with 2 replicas each, their
# pods labelled run=$RUN; the namespaces in NSES.
make_load() {
  RUN=r$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
  # The number first: FNV-1a mixes a name's first bytes into the high
  # bits the buckets go by, its last ones hardly (ns-1 .. ns-9 would all
  # fall into one bucket).
  NSES=$(seq -w 1 "$1" | sed "s/$/-$RUN/")
  for n in $NSES; do
    printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n' "$n"
  done | kubectl apply -f - >/dev/null || return 1
  for n in $NSES; do
    for j in $(seq 1 "$2"); do
      printf 'apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs-%s, namespace: %s, labels: {run: %s}}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: rs-%s}}\n  template:\n    metadata: {labels: {app: rs-%s, run: %s}}\n    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}\n---\n' \
        "$j" "$n" "$RUN" "$j" "$j" "$RUN"
    done
  done | kubectl apply -f - >/dev/null
}

# scale_all N: every ReplicaSet of the load to N replicas.
scale_all() {
  _pids=
  for n in $NSES; do
    kubectl -n "$n" scale rs --all --replicas "$1" >/dev/null &
    _pids="$_pids $!"
  done
  # shellcheck disable=SC2086
  wait $_pids
}

# exact N: every ReplicaSet of the load has exactly N live pods, and no
# pod of another RS-less group exists.
exact() {
  kubectl get pods -A -l "run=$RUN" -o json | jq -e --argjson n "$1" --argjson total "$2" '
    [.items[] | select(.metadata.deletionTimestamp == null)] |
    (length == $total) and
    (group_by(.metadata.namespace + "/" + .metadata.labels.app) |
      (length * $n == $total) and all(length == $n))' >/dev/null
}

# created: distinct pods of the load the recorder saw added; deleted: the
# deletions it saw.
created() {
  jq -r --arg run "$RUN" 'select(.type == "ADDED" and .object.metadata.labels.run == $run) |
    .object.metadata.uid' "$TMP/pods.ndjson" | sort -u | wc -l
}
deleted() {
  jq -r --arg run "$RUN" 'select(.type == "DELETED" and .object.metadata.labels.run == $run) |
    .object.metadata.uid' "$TMP/pods.ndjson" | sort -u | wc -l
}
# creators NS...: per namespace, how many instances logged a pod created
# in it (rs-apply -v 4 "created pod NS/NAME").
multi_creator_ns() {
  for i in $ALL_INSTANCES; do
    sed -n 's/.*rs-apply\] .*: created pod \([^/]*\)\/.*/\1/p' "$TMP/$i/pipeline.log" |
      sort -u | sed "s/$/ $i/"
  done | awk '{ n[$1]++ } END { for (k in n) if (n[k] > 1) print k }'
}

start_recorder() {
  rs_bg rs-watch --backoff-initial 100ms --backoff-max 500ms pods >"$TMP/pods.ndjson" 2>"$TMP/podwatch.log"
}

# Three instances over the load: every ReplicaSet exact, each pod created
# once, by one instance for each namespace, each instance owning a part.
test_controller_sharded() {
  need_cluster || return
  LNS=$(new_ns shard)
  start_recorder
  ALL_INSTANCES=
  for i in $(seq 1 "$SHARD_INSTANCES"); do
    start_instance "i$i" || { fail "instance i$i"; return; }
    ALL_INSTANCES="$ALL_INSTANCES i$i"
  done
  total=$(( SHARD_NS * SHARD_RS_PER_NS * 2 ))
  # the split first: a load made while the first instance still held
  # every bucket has namespaces begun by one instance and finished by
  # the one their bucket moved to (as it should), which the last check
  # here would count against the split
  assertTrue "the buckets split fairly before the load" \
    "wait_for 30 fair_split $ALL_INSTANCES"
  make_load "$SHARD_NS" "$SHARD_RS_PER_NS" || { fail "the load"; return; }
  assertTrue "every ReplicaSet has 2 pods" "wait_for $(( 60 + total / 10 )) exact 2 $total"
  sleep 3
  assertTrue "still exact" "exact 2 $total"
  assertEquals "each pod created once" "$total" "$(created)"
  assertEquals "none deleted" 0 "$(deleted)"
  assertTrue "the buckets split between the instances" "split_ok $SHARD_B $ALL_INSTANCES"
  for i in $ALL_INSTANCES; do
    assertContains "$i created pods" "$(cat "$TMP/$i/pipeline.log")" "created pod "
  done
  assertEquals "no namespace with pods created by two instances" "" "$(multi_creator_ns)"
  for i in $ALL_INSTANCES; do
    assertContains "$i's watch is filtered by the server" "$(cat "$TMP/$i/pipeline.log")" \
      "${SHARD_WATCH_SAYS:-the server filters by the shard selector}"
  done
}

# The same against an apiserver without the ShardedListAndWatch gate: the
# watches get everything and rs-watch drops what is not its own; the
# results are the same.
test_controller_gate_off() {
  need_cluster || return
  RS_CLUSTER_SHARDING=0 "$top/tests/env/cluster" restart-apiserver "$RS_TEST_CLUSTER" >/dev/null 2>&1
  assertTrue "apiserver back" "wait_for 60 $top/tests/env/cluster status $RS_TEST_CLUSTER"
  SHARD_WATCH_SAYS="the server does not filter by the shard selector" test_controller_sharded
  stop_instances
  "$top/tests/env/cluster" restart-apiserver "$RS_TEST_CLUSTER" >/dev/null 2>&1
  assertTrue "apiserver back with the gate" "wait_for 60 $top/tests/env/cluster status $RS_TEST_CLUSTER"
}

# start_all N: recorder, N instances, the load at 2 replicas converged.
start_all() {
  LNS=$(new_ns shard)
  start_recorder
  ALL_INSTANCES=
  for i in $(seq 1 "$1"); do
    start_instance "i$i" || return 1
    ALL_INSTANCES="$ALL_INSTANCES i$i"
  done
  make_load "$SHARD_NS" "$SHARD_RS_PER_NS" || return 1
  NRS=$(( SHARD_NS * SHARD_RS_PER_NS ))
  wait_for $(( 60 + NRS / 5 )) exact 2 $(( NRS * 2 ))
}
# kill -9 of an instance in the middle of a scale-up (rs-apply slowed to
# make it last): its buckets move to the others, which finish the work:
# exact counts, no pod created twice, none deleted.
test_controller_kill9() {
  need_cluster || return
  INSTANCE_APPLY_FLAGS="-v 4 --kube-api-qps 10 --kube-api-burst 10"
  start_all 3 || { fail "the instances and the load did not come up"; pipeline_logs; return; }
  scale_all 4
  sleep 2
  assertContains "i1 is creating" "$(cat "$TMP/i1/pipeline.log")" "too few replicas"
  t0=$(now_ms)
  kill_instance i1
  assertTrue "i2 and i3 own every bucket" "wait_for 30 split_ok $SHARD_B i2 i3"
  echo "buckets of the killed instance moved in $(( $(now_ms) - t0 )) ms"
  assertTrue "every ReplicaSet has 4 pods" "wait_for $(( 90 + NRS / 2 )) exact 4 $(( NRS * 4 ))"
  sleep 3
  assertTrue "still exact" "exact 4 $(( NRS * 4 ))"
  assertEquals "each pod created once" "$(( NRS * 4 ))" "$(created)"
  assertEquals "none deleted" 0 "$(deleted)"
  assertNotNull "namespaces i1 began and another finished" "$(multi_creator_ns)"
}

# A fourth instance joins while a scale-up is in flight: 8 buckets each,
# the others giving theirs up after stopping their pipeline; no pod
# created twice.
test_controller_join() {
  need_cluster || return
  INSTANCE_APPLY_FLAGS="-v 4 --kube-api-qps 10 --kube-api-burst 10"
  start_all 3 || { fail "the instances and the load did not come up"; pipeline_logs; return; }
  scale_all 4
  start_instance i4
  ALL_INSTANCES="$ALL_INSTANCES i4"
  assertTrue "four instances own every bucket" "wait_for 30 split_ok $SHARD_B i1 i2 i3 i4"
  assertTrue "8 each" "wait_for 10 all_have 8 i1 i2 i3 i4"
  assertTrue "every ReplicaSet has 4 pods" "wait_for $(( 90 + NRS / 2 )) exact 4 $(( NRS * 4 ))"
  sleep 3
  assertTrue "still exact" "exact 4 $(( NRS * 4 ))"
  assertEquals "each pod created once" "$(( NRS * 4 ))" "$(created)"
  assertEquals "none deleted" 0 "$(deleted)"
  assertContains "i4 created pods" "$(cat "$TMP/i4/pipeline.log")" "created pod "
}

# start_proxy: a faultproxy in front of the apiserver, $TMP/proxy.kubeconfig
# pointing at it (the server cert names 127.0.0.1 whatever the port).
start_proxy() {
  _port=$(sed -n 's/^APISERVER_PORT=//p' "$RS_TEST_CLUSTER/env")
  rm -f "$TMP/proxy.port"
  "$FAULTPROXY" --control "$TMP/proxy.ctl" --port-file "$TMP/proxy.port" 0 "$_port" \
    2>"$TMP/proxy.log" &
  PROXY_PID=$!
  RS_PIDS="$RS_PIDS $PROXY_PID"
  wait_for 10 test -s "$TMP/proxy.port" || return 1
  sed "s#https://127.0.0.1:$_port#https://127.0.0.1:$(cat "$TMP/proxy.port")#" \
    "$KUBECONFIG" >"$TMP/proxy.kubeconfig"
  chmod 0600 "$TMP/proxy.kubeconfig"
}

# log_ms LINE: the wall-clock time of a log line (I1126 22:44:22.409359:
# month, day, time; this year), ms.
log_ms() {
  set -- $1
  _md=${1#?} _t=$2
  echo $(( $(date -u -d "$(date -u +%Y)-${_md%??}-${_md#??} ${_t%.*}" +%s) * 1000 + 10#$(echo "${_t#*.}" | cut -c1-3) ))
}

# start_cut_off QPS: i1 and i2, and i3 whose rs-lease and rs-watch go
# through the faultproxy while its rs-apply (at QPS) goes straight; the
# load converged at 2, then scaled to 5 and i3 creating.
start_cut_off() {
  start_proxy || { echo "faultproxy did not start" >&2; return 1; }
  LNS=$(new_ns shard)
  start_recorder
  INSTANCE_APPLY_FLAGS="-v 4 --kube-api-qps 50 --kube-api-burst 50"
  start_instance i1 && start_instance i2 || return 1
  # -v 5: each write the fence lets through is logged as it leaves
  INSTANCE_APPLY_FLAGS="-v 5 --kube-api-qps $1 --kube-api-burst $1 --kubeconfig $KUBECONFIG"
  start_instance i3 "$TMP/proxy.kubeconfig" || return 1
  ALL_INSTANCES="i1 i2 i3"
  wait_for 30 split_ok $SHARD_B i1 i2 i3 || { echo "no split" >&2; return 1; }
  make_load "$SHARD_NS" "$SHARD_RS_PER_NS" || return 1
  NRS=$(( SHARD_NS * SHARD_RS_PER_NS ))
  wait_for $(( 60 + NRS )) exact 2 $(( NRS * 2 )) || { echo "2 pods each: no" >&2; return 1; }
  scale_all 5
  # i3's slow rs-apply may still be writing the statuses of the first round
  wait_for 180 grep -q 'need 5, creating 3' "$TMP/i3/pipeline.log" || { echo "i3 not creating" >&2; return 1; }
}

# i3_since BYTE: i3's log from that byte on.
i3_since() {
  tail -c +"$1" "$TMP/i3/pipeline.log"
}

# i3_lost_since BYTE: i3's rs-lease has lost a bucket at its renew
# deadline since then.
i3_lost_since() {
  i3_since "$1" | grep -q 'lost bucket.*renew deadline'
}

# i3_sent BEFORE|AFTER DEADLINE-MS: i3's writes the fence let through
# before it, or over 300 ms after it (a check is logged as it is made:
# the slack is for the logging, not for the fence). Sent, not answered:
# on a loaded machine an answer may come a second after its request.
i3_sent() {
  grep -E 'rs-apply\] fence: (POST|PUT|PATCH|DELETE) ' "$TMP/i3/pipeline.log" |
    while read -r l; do
      _t=$(log_ms "$l")
      case $1 in
      BEFORE) [ "$_t" -le "$2" ] && echo "$l" ;;
      AFTER) [ "$_t" -gt $(( $2 + 300 )) ] && echo "$l" ;;
      esac
    done
}

# end_cut_off: i3 and the proxy gone (nothing it held back ever reaches
# the server), then the counts.
end_cut_off() {
  kill_instance i3
  kill "$PROXY_PID"
  sleep 3
  assertTrue "still exact" "exact 5 $(( NRS * 5 ))"
  assertEquals "each pod created once" "$(( NRS * 5 ))" "$(created)"
  assertEquals "none deleted" 0 "$(deleted)"
}

# An instance cut off from the API server but for its rs-apply: its
# rs-lease and rs-watch go through a proxy that drops every packet, its
# rs-apply goes straight, with a backlog of creates (a scale-up, rs-apply
# slowed). Its renewals fail; at the renew deadline rs-lease stops its
# pipeline and stays; no pod is created by it after the deadline; the
# others take its buckets no sooner than the lease duration after the
# last renewal and finish: exact counts, no pod created twice.
test_controller_partition() {
  need_cluster || return
  start_cut_off 5 || { fail "the instances and the load did not come up"; pipeline_logs; return; }
  # only what i3 logs after the drop: on a loaded machine it may have
  # missed a renewal, and lost a bucket, while the load was coming up
  from=$(( $(stat -c %s "$TMP/i3/pipeline.log") + 1 ))
  echo drop >"$TMP/proxy.ctl"
  t0=$(now_ms)
  assertTrue "i3 loses its buckets" "wait_for 15 i3_lost_since $from"
  # errors carry no time: the line rs-lease logs right after it does
  lost=$(i3_since $from | awk '/lost bucket.*renew deadline/ { f = 1 } f && /^I.* rs-lease\]/ { print; exit }')
  deadline=$(log_ms "$lost")
  echo "i3's renew deadline passed $(( deadline - t0 )) ms after the drop"
  assertTrue "i2 and i1 own every bucket" "wait_for 30 split_ok $SHARD_B i1 i2"
  taken=$(now_ms)
  assertTrue "taken no sooner than the lease duration after the deadline's renewal ($(( taken - deadline )) ms)" \
    "[ $(( taken - deadline )) -ge $(( (LEASE_DUR - RENEW) * 1000 - 300 )) ]"
  assertTrue "i3's rs-lease stays" "alive $(cat "$TMP/i3/lease.pid")"
  assertNotNull "i3 was writing before its deadline" "$(i3_sent BEFORE "$deadline")"
  assertEquals "no write sent by i3 after its deadline" "" "$(i3_sent AFTER "$deadline")"
  assertTrue "every ReplicaSet has 5 pods" "wait_for $(( 90 + NRS / 2 )) exact 5 $(( NRS * 5 ))"
  end_cut_off
}

# fence_deadline_ms ID: the latest slot of ID's fence as wall-clock ms.
fence_deadline_ms() {
  python3 - "$TMP/$1/state/fence" <<'PY'
import struct, sys, time
d = open(sys.argv[1], 'rb').read()
slots = [struct.unpack_from('=q', d, o)[0] for o in range(64, len(d), 8)]
mono, wall = time.clock_gettime_ns(time.CLOCK_MONOTONIC), time.time_ns()
print((wall + max(slots) - mono) // 1000000)
PY
}

# fence_ahead ID MS: ID's fence passes at least MS from now.
fence_ahead() {
  [ $(( $(fence_deadline_ms "$1") - $(now_ms) )) -ge "$2" ]
}

# The same with rs-lease frozen (SIGSTOP) as well, so that nothing stops
# the pipeline: only the fence does. rs-apply, with its backlog and a
# straight line to the server, must send nothing once the slots have
# passed: each refusal is logged, no pod is created by it after the
# deadline read from its fence file, and no pod twice. Without the fence
# it would go on creating beside the instances that took its buckets.
test_controller_frozen_lease() {
  need_cluster || return
  start_cut_off 3 || { fail "the instances and the load did not come up"; pipeline_logs; return; }
  lp=$(cat "$TMP/i3/lease.pid")
  # frozen right after a renewal: on a loaded machine a late one may have
  # let the fence pass already, and then nothing is left to refuse
  assertTrue "i3's fence a second ahead" "wait_for 20 fence_ahead i3 1000"
  kill -STOP "$lp"
  echo drop >"$TMP/proxy.ctl"
  deadline=$(fence_deadline_ms i3)
  echo "i3's fence passes $(( deadline - $(now_ms) )) ms after rs-lease was frozen"
  assertTrue "i1 and i2 own every bucket" "wait_for 30 split_ok $SHARD_B i1 i2"
  assertTrue "every ReplicaSet has 5 pods" "wait_for $(( 90 + NRS / 2 )) exact 5 $(( NRS * 5 ))"
  assertContains "i3's rs-apply refused writes by the fence" "$(cat "$TMP/i3/pipeline.log")" "(fence): nothing more"
  assertNotNull "i3 was writing before its fence passed" "$(i3_sent BEFORE "$deadline")"
  assertEquals "no write sent by i3 after its fence passed" "" "$(i3_sent AFTER "$deadline")"
  end_cut_off
}

. "$SHUNIT2"
