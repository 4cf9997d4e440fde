# shard.sh: sharding by namespace (doc/sharding.md, issue 32) against real
# API servers: rs-watch --shard-selector with the ShardedListAndWatch gate
# on (the shared test cluster: tests/env/cluster's default) and off (a
# cluster of this suite's own, RS_CLUSTER_SHARDING=0), and rs-apply's fence
# file; rs-metrics' shard figures of two instances. What is in the shard is computed here, in Python, apart from
# libcommon/shard.c: FNV-1a 64 of the namespace, bucket i of B covering
# [floor(i * 2^64 / B), floor((i+1) * 2^64 / B)).
. "$(dirname "$0")/lib.sh"
# run-all.sh counts "Ran N tests." lines: no colour codes in them
SHUNIT_COLOR=${SHUNIT_COLOR:-none}

CLUSTER=$top/tests/env/cluster
FENCE_TOOL=${FENCE_TOOL:-$top/build/test/fence-tool}
EXP_TOOL=${EXP_TOOL:-$top/build/test/exp-tool}
OUT=$TMP/out
# B and the buckets held: neighbours (1, 2) to merge, the last one for the
# top bound, about half the hash space
B=8
HELD="1 2 5 7"
NS_N=20
OFF=

# shardpy bucket B NS...     "NS BUCKET" a line
# shardpy selector B I...    the selector of buckets I... of B
shardpy() {
  python3 - "$@" <<'PY'
import sys

def fnv(s):
    h = 0xcbf29ce484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001b3) % (1 << 64)
    return h

def start(i, b):
    return (i << 64) // b

def bound(i, b):
    return "0x10000000000000000" if i == b else "0x%016x" % start(i, b)

cmd, b = sys.argv[1], int(sys.argv[2])
if cmd == "bucket":
    for ns in sys.argv[3:]:
        h = fnv(ns)
        print(ns, max(i for i in range(b) if start(i, b) <= h))
else:
    held = sorted(set(int(x) for x in sys.argv[3:]))
    terms, i = [], 0
    while i < b:
        if i not in held:
            i += 1
            continue
        j = i + 1
        while j in held:
            j += 1
        terms.append("shardRange(object.metadata.namespace, '%s', '%s')"
                     % (bound(i, b), bound(j, b)))
        i = j
    print(" || ".join(terms))
PY
}

SEL=$(shardpy selector $B $HELD)

# in_shard NS: its bucket is held.
in_shard() {
  _b=$(shardpy bucket $B "$1" | cut -d' ' -f2)
  case " $HELD " in *" $_b "*) return 0 ;; esac
  return 1
}

synced_n() { [ "$(grep -c '"type":"SYNCED"' "$1" 2>/dev/null)" -ge "$2" ]; }

pod() { kubectl -n "$1" run "$2" --image=example.invalid/none --restart=Never >/dev/null; }

rs() {
  kubectl create -f - >/dev/null <<EOF
{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"$2","namespace":"$1"},
 "spec":{"replicas":0,"selector":{"matchLabels":{"app":"$2"}},
  "template":{"metadata":{"labels":{"app":"$2"}},
   "spec":{"containers":[{"name":"c","image":"example.invalid/none"}]}}}}
EOF
}

# objects PREFIX: NS_N namespaces, a pod and a ReplicaSet in each; their
# names in $TMP/PREFIX.ns, and the "resource ns/name" lines expected of
# rs-watch (those in the shard) in $TMP/PREFIX.want, the others in
# $TMP/PREFIX.out.
objects() {
  : >"$TMP/$1.ns"; : >"$TMP/$1.want"; : >"$TMP/$1.out"
  for i in $(seq 1 $NS_N); do
    ns=$(new_ns "$1$i") || return 1
    echo "$ns" >>"$TMP/$1.ns"
    pod "$ns" p || return 1
    rs "$ns" r || return 1
    if in_shard "$ns"; then f=want; else f=out; fi
    printf 'pods %s/p\nreplicasets %s/r\n' "$ns" "$ns" >>"$TMP/$1.$f"
  done
  sort -o "$TMP/$1.want" "$TMP/$1.want"
}

# printed FILE NSFILE: the "resource ns/name" of the objects FILE printed
# ADDED in the namespaces of NSFILE, sorted.
printed() {
  jq -r 'select(.type == "ADDED") | "\(.resource) \(.object.metadata.namespace)/\(.object.metadata.name)"' "$1" |
    grep -F -f <(sed 's|$|/|' "$2") | sort
}

# all_in_shard FILE: every object FILE printed, of any namespace, is in
# the shard.
all_in_shard() {
  for ns in $(jq -r 'select(.object) | .object.metadata.namespace // ""' "$1" | sort -u); do
    in_shard "$ns" || { echo "printed out of the shard: $ns"; return 1; }
  done
}

# A sanity check of the split: some in, some out, or the test says nothing.
check_split() {
  assertTrue "some objects in the shard" "[ -s $TMP/$1.want ]"
  assertTrue "some objects out of the shard" "[ -s $TMP/$1.out ]"
}

# watch_check PREFIX FILE: FILE printed exactly the objects in the shard.
watch_check() {
  assertEquals "exactly the objects in the shard" "$(cat "$TMP/$1.want")" \
    "$(printed "$2" "$TMP/$1.ns")"
  assertEquals "nothing out of the shard, of any namespace" "" "$(all_in_shard "$2")"
}

# off_cluster: the cluster without the gate, started on first use, with
# an audit log (tests/env/cluster --audit) that counts the fence tests'
# requests.
off_cluster() {
  if [ -z "$OFF" ]; then
    OFF=$TMP/off
    for _try in 1 2 3; do
      RS_CLUSTER_SHARDING=0 "$CLUSTER" up "$OFF" --owner $$ --audit >"$OFF.log" 2>&1 && break
      "$CLUSTER" down "$OFF" >/dev/null 2>&1
      [ $_try -eq 3 ] && { fail "unable to start a cluster without the gate: $(tail -3 "$OFF.log")"; OFF=; return 1; }
      sleep 1
    done
  fi
  KUBECONFIG=$OFF/kubeconfig
}

oneTimeTearDown() {
  stop_instances
  rs_cleanup
  [ -n "$OFF" ] && "$CLUSTER" down "$OFF" >/dev/null 2>&1
  return 0
}

tearDown() {
  stop_instances
  rs_cleanup
  [ -n "${SHARED_KUBECONFIG:-}" ] && KUBECONFIG=$SHARED_KUBECONFIG
  return 0
}
SHARED_KUBECONFIG=${KUBECONFIG:-}

# watch_both PREFIX: the objects, then rs-watch over them by a streaming
# list ($OUT.s) and by pages ($OUT.p): each prints exactly the shard's.
watch_both() {
  objects "$1" || { fail "unable to make the objects"; return 1; }
  check_split "$1"
  rs_bg rs-watch -v 1 --shard-selector "$SEL" pods replicasets >"$OUT.s" 2>"$OUT.s.log"
  rs_bg rs-watch -v 1 --list pages --shard-selector "$SEL" pods replicasets >"$OUT.p" 2>"$OUT.p.log"
  assertTrue "SYNCED (stream)" "wait_for 30 synced_n $OUT.s 2"
  assertTrue "SYNCED (pages)" "wait_for 30 synced_n $OUT.p 2"
  watch_check "$1" "$OUT.s"
  watch_check "$1" "$OUT.p"
  assertTrue "a streaming list" "grep -q 'listed [0-9]* pods (.*) in 1 stream' $OUT.s.log"
}

# watch_events PREFIX: a pod made out of the shard, then one in it: the
# second printed means the first was filtered (events come in order).
watch_events() {
  in=$(sed 's|.* ||; s|/.*||' "$TMP/$1.want" | head -1)
  out=$(sed 's|.* ||; s|/.*||' "$TMP/$1.out" | head -1)
  pod "$out" later-out
  pod "$in" later-in
  assertTrue "a watched pod in the shard" "wait_for 20 grep -q '\"name\":\"later-in\"' $OUT.s"
  assertTrue "a watched pod in the shard (pages)" "wait_for 20 grep -q '\"name\":\"later-in\"' $OUT.p"
  assertEquals "no watched pod out of the shard" 0 "$(cat "$OUT.s" "$OUT.p" | grep -c '"name":"later-out"')"
}

# The gate on: the server filters, by a streaming list (the default) and
# by pages; nothing is dropped here, and it is said once.
test_watch_server_filters() {
  need_cluster || return
  grep -q 'feature-gates=.*ShardedListAndWatch=true' "$RS_TEST_CLUSTER/apiserver.log" ||
    { fail "the test cluster runs without ShardedListAndWatch"; return; }
  watch_both on || return
  for m in s p; do
    assertEquals "said once: the server filters ($m)" 1 \
      "$(grep -c 'the server filters by the shard selector' "$OUT.$m.log")"
    assertEquals "nothing said of the client ($m)" 0 "$(grep -c 'does not filter' "$OUT.$m.log")"
    assertEquals "nothing came to drop ($m)" 2 \
      "$(grep -c 'listed [0-9]* [a-z]* (0 out of the shard dropped)' "$OUT.$m.log")"
  done
  watch_events on
}

# The gate off: the server sends everything and ignores the selector;
# the same lines, the client drops the rest, and says so once.
test_watch_client_filters() {
  need_cluster || return
  off_cluster || return
  grep -q 'ShardedListAndWatch' "$OFF/apiserver.log" &&
    { fail "the cluster without the gate has it"; return; }
  watch_both off || return
  # this cluster has pods and ReplicaSets in these namespaces only
  nout=$(grep -c '^pods ' "$TMP/off.out")
  for m in s p; do
    assertEquals "said once: the client filters ($m)" 1 \
      "$(grep -c 'the server does not filter by the shard selector' "$OUT.$m.log")"
    assertEquals "nothing said of the server ($m)" 0 "$(grep -c 'the server filters' "$OUT.$m.log")"
    assertEquals "dropped the pods out of the shard ($m)" 1 \
      "$(grep -c "listed [0-9]* pods ($nout out of the shard dropped)" "$OUT.$m.log")"
  done
  watch_events off
}

# The selector of every bucket, as rs-lease writes it for an instance
# holding all B.
WHOLE=$(shardpy selector $B $(seq 0 $((B - 1))))

# gets LOG: the path of each list and watch rs-watch -v 4 sent, a line.
gets() { sed -n 's/.* rs-watch\] GET \([^ ]*\).*/\1/p' "$1"; }

# A selector of every namespace filters nothing, so rs-watch sends none
# (a server with the gate would check each object against it for
# nothing): no list or watch carries shardSelector, every namespace's
# objects come, listed and watched, the check here passes them all, and
# rs-watch says so once instead of asking who filters. The same rs-watch
# with half the buckets ($SEL) sends it with every request.
test_watch_whole_selector_sends_none() {
  need_cluster || return
  assertEquals "one range, to the top" "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')" "$WHOLE"
  objects wh || { fail "unable to make the objects"; return; }
  check_split wh
  rs_bg rs-watch -v 4 --shard-selector "$WHOLE" pods replicasets >"$OUT.s" 2>"$OUT.s.log"
  rs_bg rs-watch -v 4 --list pages --shard-selector "$WHOLE" pods replicasets >"$OUT.p" 2>"$OUT.p.log"
  rs_bg rs-watch -v 4 --list pages --shard-selector "$SEL" pods replicasets >"$OUT.h" 2>"$OUT.h.log"
  for m in s p h; do
    assertTrue "SYNCED ($m)" "wait_for 30 synced_n $OUT.$m 2"
  done
  for m in s p; do
    assertEquals "every namespace's objects listed ($m)" "$(sort "$TMP/wh.want" "$TMP/wh.out")" \
      "$(printed "$OUT.$m" "$TMP/wh.ns")"
  done
  in=$(sed 's|.* ||; s|/.*||' "$TMP/wh.want" | head -1)
  out=$(sed 's|.* ||; s|/.*||' "$TMP/wh.out" | head -1)
  pod "$out" later-out
  pod "$in" later-in
  for m in s p; do
    assertTrue "a pod out of half the buckets watched ($m)" \
      "wait_for 20 grep -q '\"name\":\"later-out\"' $OUT.$m"
    assertEquals "said once: nothing to filter ($m)" 1 \
      "$(grep -c 'the shard selector covers every namespace, so there is nothing to filter: listing and watching without shardSelector' "$OUT.$m.log")"
    assertEquals "the server not asked, nothing said of who filters ($m)" "" \
      "$(grep -e 'filters by the shard selector' -e 'does not filter' -e 'whether the server filters' "$OUT.$m.log")"
    assertEquals "nothing dropped ($m)" 2 \
      "$(grep -c 'listed [0-9]* [a-z]* (0 out of the shard dropped)' "$OUT.$m.log")"
    assertEquals "no request with shardSelector ($m)" "" "$(gets "$OUT.$m.log" | grep shardSelector)"
  done
  assertEquals "two streaming lists, their watches after" 2 "$(gets "$OUT.s.log" | grep -c 'sendInitialEvents=true')"
  assertTrue "lists in pages" "[ $(gets "$OUT.p.log" | grep -vc 'watch=1') -ge 2 ]"
  assertTrue "then watches" "[ $(gets "$OUT.p.log" | grep -c 'watch=1') -ge 2 ]"
  # half the buckets: every list and watch, and the question, carries it
  assertTrue "half: lists and watches" "[ $(gets "$OUT.h.log" | grep -c 'watch=1') -ge 2 ] && [ $(gets "$OUT.h.log" | grep -vc 'watch=1') -ge 2 ]"
  assertEquals "half: every request with shardSelector" "" "$(gets "$OUT.h.log" | grep -v '&shardSelector=')"
  assertEquals "half: the server filters" 1 "$(grep -c 'the server filters by the shard selector' "$OUT.h.log")"
  # events come in order: the second printed, the first was filtered
  assertTrue "half: a pod in the shard watched" "wait_for 20 grep -q '\"name\":\"later-in\"' $OUT.h"
  assertEquals "half: no pod out of the shard" 0 "$(grep -c '"name":"later-out"' "$OUT.h")"
}

# A relist after 410 on the server that sends everything: the difference
# is printed for the shard only; objects out of it, deleted or not, were
# never printed and are never DELETED.
test_relist_prints_nothing_out_of_the_shard() {
  need_cluster || return
  off_cluster || return
  NS_N=10 objects rl || { fail "unable to make the objects"; return; }
  check_split rl
  in=$(sed 's|.* ||; s|/.*||' "$TMP/rl.want" | head -1)
  out=$(sed 's|.* ||; s|/.*||' "$TMP/rl.out" | head -1)
  rs_bg rs-watch -v 2 --backoff-max 2s --shard-selector "$SEL" pods >"$OUT" 2>"$OUT.log"
  w=$!
  assertTrue "SYNCED" "wait_for 30 synced_n $OUT 1"
  # the watch stopped while the server forgets its history: 410 after
  kill -STOP "$w"
  RS_CLUSTER_SHARDING=0 "$CLUSTER" restart-apiserver "$OFF"
  kubectl -n "$in" delete pod p --wait=false >/dev/null
  kubectl -n "$out" delete pod p --wait=false >/dev/null
  pod "$out" added-out
  pod "$in" added-in
  RS_CLUSTER_SHARDING=0 "$CLUSTER" restart-apiserver "$OFF"
  "$CLUSTER" compact "$OFF" >/dev/null
  lines=$(wc -l <"$OUT")
  kill -CONT "$w"
  assertTrue "relisted after 410" "wait_for 60 grep -q 'relisting after 410' $OUT.log"
  assertTrue "the relist's BOOKMARK" "wait_for 30 grep -q '\"BOOKMARK\"' $OUT"
  tail -n +"$((lines + 1))" "$OUT" | sed '/"BOOKMARK"/q' >"$OUT.after"
  assertEquals "the relist's difference: the shard's only" \
    "ADDED $in/added-in
DELETED $in/p" \
    "$(jq -r 'select(.object) | "\(.type) \(.object.metadata.namespace)/\(.object.metadata.name)"' "$OUT.after" | sort)"
  assertEquals "nothing out of the shard, ever" "" "$(all_in_shard "$OUT")"
  assertEquals "no DELETED but the one" 1 "$(grep -c '"type":"DELETED"' "$OUT")"
}

test_selector_refused_before_any_request() {
  rs-watch --shard-selector "shardRange(object.metadata.namespace, '0x0', '0x8000000000000000')" pods \
    >/dev/null 2>"$TMP/err"
  assertEquals "usage" 100 $?
  assertTrue "why: $(cat "$TMP/err")" "grep -q 'invalid --shard-selector: hexStart must be a 0x-prefixed 16-digit' $TMP/err"
}

# ---- rs-apply's fence ----

mk_rs() {  # NS NAME: a ReplicaSet of 3 replicas; its JSON in $TMP/NS.NAME.json
  kubectl create -f - >/dev/null <<EOF || return 1
{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"$2","namespace":"$1"},
 "spec":{"replicas":3,"selector":{"matchLabels":{"app":"$2"}},
  "template":{"metadata":{"labels":{"app":"$2"}},
   "spec":{"containers":[{"name":"c","image":"example.invalid/none"}]}}}}
EOF
  kubectl get rs -n "$1" "$2" -o json >"$TMP/$1.$2.json"
}

# intents NS NAME [N]: create N (2), delete pod p1, a status, the end, as
# rs-sync writes them (doc/intents.md).
intents() {
  owner=$(jq -c '{apiVersion:"apps/v1",kind:"ReplicaSet",namespace:.metadata.namespace,
    name:.metadata.name,uid:.metadata.uid,resourceVersion:.metadata.resourceVersion}' "$TMP/$1.$2.json")
  j() { jq -nc --arg op "$1" --arg key "$NS/$NAME" --argjson owner "$owner" --argjson x "$2" \
    '{op:$op,key:$key,owner:$owner} + $x'; }
  NS=$1 NAME=$2
  j create "$(jq -c --argjson n "${3:-2}" '{count:$n,template:.spec.template}' "$TMP/$1.$2.json")"
  j delete '{"pods":[{"name":"p1","uid":"u"}]}'
  j status "$(jq -c '{object:(del(.metadata.managedFields) | .status = {"replicas":7}),
    old_status:(.status // {})}' "$TMP/$1.$2.json")"
  j end '{}'
}

# fenced_run NS SLOT_MS OTHERS_MS: the intents of NS/web through rs-apply
# with a fence file whose slot of NS's bucket is now + SLOT_MS, the
# others' now + OTHERS_MS.
fenced_run() {
  b=$(shardpy bucket $B "$1" | cut -d' ' -f2)
  "$FENCE_TOOL" "$TMP/fence" $B create &&
    "$FENCE_TOOL" "$TMP/fence" $B all "$3" &&
    "$FENCE_TOOL" "$TMP/fence" $B set "$b" "$2" || { fail "fence-tool"; return 1; }
  "$EXP_TOOL" "$RS_STATE_DIR/expectations" expect-creations "$1/web" 2 >/dev/null
  intents "$1" web | rs-apply -v 4 --no-queue --expectations "$RS_STATE_DIR/expectations" \
    --fence "$TMP/fence" --shards $B >/dev/null 2>"$TMP/apply.log"
}

# sent NS: the writes of rs-apply to NS that reached the server, from its
# audit log, "verb resource[/subresource]" a line, sorted. A read made
# after rs-apply exited marks the end: once it is logged, so is every
# request of rs-apply (the log is written in the order requests end).
sent() {
  kubectl get namespace "$1" -o name >/dev/null
  wait_for 20 logged "$1" || { echo "the marker never reached the audit log"; return; }
  jq -r --arg ns "$1" 'select(.stage == "ResponseComplete" and (.userAgent | startswith("rs-apply"))
      and .objectRef.namespace == $ns and (.verb | test("^(create|update|patch|delete)$")))
    | "\(.verb) \(.objectRef.resource)\(if .objectRef.subresource then "/" + .objectRef.subresource else "" end)"' \
    "$OFF/audit.log" | sort
}

logged() {
  jq -c --arg ns "$1" 'select(.stage == "ResponseComplete" and .verb == "get"
    and .objectRef.resource == "namespaces" and .objectRef.name == $ns)' "$OFF/audit.log" | grep -q .
}

# fence_ns POD...: a namespace on the audited cluster with the ReplicaSet
# web and these pods; sets ns, and rv, the ReplicaSet's resourceVersion.
fence_ns() {
  off_cluster || return 1
  ns=$(new_ns fence) && mk_rs "$ns" web || { fail "setup"; return 1; }
  for p in "$@"; do pod "$ns" "$p" || { fail "setup"; return 1; }; done
  rv=$(rs_rv "$ns")
}

rs_rv() { kubectl get rs -n "$1" web -o jsonpath='{.metadata.resourceVersion}'; }

# writes NS: what the server shows of the writes to NS: pods created (not
# p1), p1 there or gone, the ReplicaSet's status.replicas (0 until
# written), events.
writes() {
  printf '%s %s %s %s\n' \
    "$(kubectl get pods -n "$1" -o json | jq '[.items[] | select(.metadata.name != "p1")] | length')" \
    "$(kubectl get pod -n "$1" p1 -o name 2>/dev/null | wc -l)" \
    "$(kubectl get rs -n "$1" web -o jsonpath='{.status.replicas}')" \
    "$(kubectl get events -n "$1" -o json | jq '.items | length')"
}

test_fence_passed_sends_no_write() {
  need_cluster || return
  fence_ns p1 || return
  # the namespace's bucket passed a second ago, every other live
  fenced_run "$ns" -1000 60000
  assertEquals "exit status" 0 $?
  assertEquals "no pod created, p1 not deleted, status as it was (0), no event" "0 1 0 0" \
    "$(writes "$ns")"
  assertEquals "the ReplicaSet untouched" "$rv" "$(rs_rv "$ns")"
  assertEquals "its creation expectation lowered" 0 \
    "$("$EXP_TOOL" "$RS_STATE_DIR/expectations" get "$ns/web" | jq .add)"
  assertTrue "the key retried" "grep -q '$ns/web: sync failed, retry' $TMP/apply.log"
  assertTrue "the rest of the round not sent" \
    "grep -q \"$ns/web: bucket [0-9]*'s Lease is not held (fence): nothing more is sent this round\" $TMP/apply.log"
  assertEquals "no write reached the server" "" "$(sent "$ns")"
}

test_fence_live_sends_the_writes() {
  need_cluster || return
  fence_ns p1 || return
  # the namespace's bucket live for a minute, every other passed
  fenced_run "$ns" 60000 -1000
  assertEquals "exit status" 0 $?
  assertTrue "written: 2 pods, p1 gone, status 7, events: $(writes "$ns")" \
    "[ \"\$(writes $ns | cut -d' ' -f1-3)\" = '2 0 7' ] && [ \$(writes $ns | cut -d' ' -f4) -ge 3 ]"
  assertTrue "synced" "grep -q '$ns/web: synced' $TMP/apply.log"
  assertEquals "nothing fenced" 0 "$(grep -c 'not sent' "$TMP/apply.log")"
  assertEquals "the writes reached the server" "create pods
create pods
delete pods
update replicasets/status" "$(sent "$ns" | grep -v ' events$')"
}

# The slot passes in the middle of a burst: 40 creates in slow-start
# batches at 5 requests a second, the slot 2.5 s ahead. What left before
# it is written; what waited in the client's rate limit then is not, nor
# is the rest of the round (the delete, the status); the expectation is
# lowered for every pod not created.
test_fence_passing_stops_the_burst() {
  need_cluster || return
  fence_ns p1 || return
  b=$(shardpy bucket $B "$ns" | cut -d' ' -f2)
  "$FENCE_TOOL" "$TMP/fence" $B create && "$FENCE_TOOL" "$TMP/fence" $B set "$b" 2500 ||
    { fail "fence-tool"; return; }
  "$EXP_TOOL" "$RS_STATE_DIR/expectations" expect-creations "$ns/web" 40 >/dev/null
  intents "$ns" web 40 | rs-apply -v 4 --no-queue --expectations "$RS_STATE_DIR/expectations" \
    --kube-api-qps 5 --kube-api-burst 1 --fence "$TMP/fence" --shards $B >/dev/null 2>"$TMP/apply.log"
  assertEquals "exit status" 0 $?
  set -- $(writes "$ns")
  created=$1 p1=$2
  assertTrue "some pods created before the slot passed: $created" "[ $created -ge 3 ]"
  assertTrue "not all: $created" "[ $created -lt 40 ]"
  assertEquals "the expectation lowered for the pods not created" "$created" \
    "$("$EXP_TOOL" "$RS_STATE_DIR/expectations" get "$ns/web" | jq .add)"
  assertEquals "p1 not deleted" 1 "$p1"
  assertEquals "the ReplicaSet untouched" "$rv" "$(rs_rv "$ns")"
  assertTrue "creates refused as they left" "grep -q 'POST .*: 0 not sent: the Lease of bucket $b ' $TMP/apply.log"
  assertEquals "only those creates reached the server" "$created" \
    "$(sent "$ns" | grep -c '^create pods$')"
  assertEquals "no other write but events" "" "$(sent "$ns" | grep -v -e '^create pods$' -e ' events$')"
  assertTrue "the key retried" "grep -q '$ns/web: sync failed.*retry' $TMP/apply.log"
}

# The slot passes while a burst waits in the client's rate limit: ten
# deletes sent at once at 2 requests a second, the slot 2 s ahead. Those
# that leave before it reach the server; the rest are refused as they
# leave (they were queued while the slot was live), their deletions let
# go in the expectations, and the status is not sent.
test_fence_read_as_writes_leave() {
  need_cluster || return
  fence_ns d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 || return
  pods=$(for i in $(seq 1 10); do printf ' %s/d%s' "$ns" $i; done)
  # shellcheck disable=SC2086  # one argument a pod
  "$EXP_TOOL" "$RS_STATE_DIR/expectations" expect-deletions "$ns/web" $pods >/dev/null
  b=$(shardpy bucket $B "$ns" | cut -d' ' -f2)
  "$FENCE_TOOL" "$TMP/fence" $B create && "$FENCE_TOOL" "$TMP/fence" $B set "$b" 2000 ||
    { fail "fence-tool"; return; }
  owner=$(jq -c '{apiVersion:"apps/v1",kind:"ReplicaSet",namespace:.metadata.namespace,
    name:.metadata.name,uid:.metadata.uid,resourceVersion:.metadata.resourceVersion}' "$TMP/$ns.web.json")
  { jq -nc --arg k "$ns/web" --argjson o "$owner" --arg p "$pods" \
      '{op:"delete",key:$k,owner:$o,pods:[$p | split(" ")[] | select(. != "") | {name:(split("/")[1]),uid:"u"}]}'
    jq -nc --arg k "$ns/web" --argjson o "$owner" --slurpfile rs "$TMP/$ns.web.json" \
      '{op:"status",key:$k,owner:$o,object:($rs[0] | del(.metadata.managedFields) | .status = {"replicas":7}),old_status:{}}'
    jq -nc --arg k "$ns/web" '{op:"end",key:$k}'; } |
    rs-apply -v 4 --no-queue --expectations "$RS_STATE_DIR/expectations" \
      --kube-api-qps 2 --kube-api-burst 1 --fence "$TMP/fence" --shards $B >/dev/null 2>"$TMP/apply.log"
  assertEquals "exit status" 0 $?
  left=$(kubectl get pods -n "$ns" -o json |
    jq -r '[.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name] | sort | join(" ")')
  n=$(echo "$left" | wc -w)
  assertTrue "some deleted before the slot passed: $n left" "[ $n -le 8 ]"
  assertTrue "not all, though queued while it was live: $n left" "[ $n -ge 1 ]"
  assertEquals "refused as they left" "$n" "$(grep -c 'DELETE .*: 0 not sent: the Lease of bucket' "$TMP/apply.log")"
  assertEquals "only the others reached the server" "$((10 - n))" \
    "$(sent "$ns" | grep -c '^delete pods$')"
  assertEquals "no other write but events" "" "$(sent "$ns" | grep -v -e '^delete pods$' -e ' events$')"
  assertEquals "their deletions let go: the rest awaits the watch" \
    "$(for p in $pods; do case " $left " in *" ${p#*/} "*) ;; *) echo "$p" ;; esac; done | sort | tr '\n' ' ')" \
    "$("$EXP_TOOL" "$RS_STATE_DIR/expectations" get "$ns/web" | jq -r '.deleting | sort | join(" ")') "
  assertEquals "the ReplicaSet untouched" "$rv" "$(rs_rv "$ns")"
}

test_fence_file_checked_at_start() {
  rs-apply --no-queue --fence "$TMP/nofence" --shards 4 </dev/null 2>"$TMP/err"
  assertEquals "no file yet: temporary" 111 $?
  "$FENCE_TOOL" "$TMP/fence4" 4 create
  rs-apply --no-queue --fence "$TMP/fence4" --shards 8 </dev/null 2>"$TMP/err"
  assertEquals "another B: usage" 100 $?
  assertTrue "why" "grep -q 'not a fence file of 8 buckets' $TMP/err"
  rs-apply --no-queue --fence "$TMP/fence4" </dev/null 2>"$TMP/err"
  assertEquals "--fence without --shards" 100 $?
}

# --- a change of B (rs-lease --shards, doc/sharding.md "Changing B") -------
# Bucket i of one B covers other namespaces than bucket i of another under
# the same Lease name, so two copies of different B in one group must never
# both act. Short timings: lease 4 s, renew deadline 3 s, retry 1 s.
BLEASE=4
BTIMING="--leader-elect-lease-duration ${BLEASE}s --leader-elect-renew-deadline 3s --leader-elect-retry-period 1s --kill-after 1s"
# spans.sh ID: appends "start MS HELD" when started and "end MS" when
# stopped to ID.spans: when prog ran, to compare two copies.
printf '%s\n' '#!/bin/sh' \
  'echo "start $(date +%s%3N) $(jq -c .held "$RS_SHARD_FILE")" >>"$1.spans"' \
  'trap '"'"'echo "end $(date +%s%3N)" >>"$1.spans"; exit 0'"'"' TERM' \
  'sleep 600 & wait' >"$TMP/spans.sh"

# lease_b ID NS B: rs-lease --shards B as ID over spans.sh, in the
# background; its pid in LEASE_PID, its files $TMP/b.ID.{log,json,spans}.
lease_b() {
  # shellcheck disable=SC2086
  rs_bg rs-lease -v 1 --lease-namespace "$2" --identity "$1" --shards "$3" \
    --shard-file "$TMP/b.$1.json" --fence "$TMP/b.$1.fence" $BTIMING \
    grp sh "$TMP/spans.sh" "$TMP/b.$1" 2>"$TMP/b.$1.log"
  LEASE_PID=$!
}
bheld() { jq -r '.held | length' "$TMP/b.$1.json" 2>/dev/null || echo 0; }
bheld_is() { [ "$(bheld "$1")" = "$2" ]; }
# bucket_leases NS: "NAME B HOLDER" for each bucket Lease of the group.
bucket_leases() {
  kubectl -n "$1" get leases -l rs-controller.io/shard-group=grp -o json |
    jq -r '.items[] | select(.metadata.name | test("-b-")) |
      "\(.metadata.name) \(.metadata.labels["rs-controller.io/shard-buckets"] // "-") \(.spec.holderIdentity // "-")"' | sort
}
# overlap A B: the spans of prog under A and under B that overlap, one a
# line (a span not ended yet lasts until now).
overlap() {
  now=$(now_ms)
  awk -v now="$now" -v a="$TMP/b.$1.spans" -v b="$TMP/b.$2.spans" '
    function spans(f, s, e, n,   l, w, k) {
      n = 0
      while ((getline l < f) > 0) {
        split(l, w, " ")
        if (w[1] == "start") { n++; s[n] = w[2]; e[n] = now }
        else if (n > 0) e[n] = w[2]
      }
      return n
    }
    BEGIN {
      na = spans(a, sa, ea); nb = spans(b, sb, eb)
      for (i = 1; i <= na; i++) for (j = 1; j <= nb; j++)
        if (sa[i] < eb[j] && sb[j] < ea[i])
          print sa[i] "-" ea[i] " and " sb[j] "-" eb[j]
    }'
}
rm_spans() { rm -f "$TMP"/b.*.spans "$TMP"/b.*.json "$TMP"/b.*.fence; }

# The operator changes B from 2 to 4: the copy of 4 takes nothing while
# the copy of 2 holds its buckets (not even buckets 2 and 3, whose names no
# Lease has yet), then, the old copy killed, deletes its Leases once
# expired and takes its own.
test_new_b_waits_for_the_old_leases() {
  need_cluster || return
  rm_spans
  ns=$(new_ns shardb)
  lease_b old "$ns" 2; old=$LEASE_PID
  assertTrue "the copy of 2 holds its 2 buckets" "wait_for 20 bheld_is old 2"
  lease_b new "$ns" 4
  assertTrue "the copy of 4 sees the other B" \
    "wait_for 20 grep -q 'of 2 buckets (not 4) is held by old: taking no bucket' $TMP/b.new.log"
  # several of its rounds (1 to 1.2 s) while the old copy renews
  sleep 5
  assertEquals "the copy of 4 has taken nothing" 0 "$(bheld new)"
  assertFalse "its prog never ran" "[ -s $TMP/b.new.spans ]"
  assertEquals "the Leases are the old copy's" "grp-b-000 2 old
grp-b-001 2 old" "$(bucket_leases "$ns")"
  t0=$(now_ms)
  kill9 "$old"
  assertTrue "the copy of 4 takes its 4 buckets" "wait_for 30 bheld_is new 4"
  dt=$(( $(now_ms) - t0 ))
  echo "the copy of 4 started prog $dt ms after the kill -9"
  # the old Leases expire a lease duration after their last renewal (a
  # round before the kill at most), by the new copy's clock
  assertTrue "not before the old Leases expired ($dt ms)" "[ $dt -ge $(( BLEASE * 1000 - 1200 )) ]"
  assertEquals "only the new B's Leases are left" "grp-b-000 4 new
grp-b-001 4 new
grp-b-002 4 new
grp-b-003 4 new" "$(bucket_leases "$ns")"
  assertTrue "it said it deleted the old ones" \
    "grep -q 'deleting the lease $ns/grp-b-001 of 2 buckets, not 4' $TMP/b.new.log"
  assertTrue "and the old member Lease, expired too" \
    "wait_for 10 sh -c '! kubectl -n $ns get leases -l rs-controller.io/shard-buckets=2 -o name | grep -q .'"
  assertEquals "the two progs never ran at once" "" "$(overlap old new)"
}

# The race itself: another copy takes a bucket of another B just after
# this one took its own, so that neither's LIST could see the other's
# take. Here the other copy is the test, which creates a held Lease of 8
# buckets as soon as the copy of 4 says it acquired (its next LIST is a
# retry period, 3 s, later). The copy of 4 gives its buckets up before its
# prog ever runs; once the other Lease is gone it takes them again.
test_take_confirmed_by_the_next_list() {
  need_cluster || return
  rm_spans
  ns=$(new_ns shardb)
  BTIMING="--leader-elect-lease-duration 10s --leader-elect-renew-deadline 8s --leader-elect-retry-period 3s --kill-after 1s" \
    lease_b four "$ns" 4
  wait_for 20 grep -q 'acquired bucket' "$TMP/b.four.log" || { fail "the copy of 4 took nothing"; return; }
  kubectl -n "$ns" create -f - >/dev/null <<YAML || { fail "the other B's Lease"; return; }
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: grp-b-007
  labels: {rs-controller.io/shard-group: grp, rs-controller.io/shard-buckets: "8"}
spec: {holderIdentity: other, leaseDurationSeconds: 30}
YAML
  assertTrue "the copy of 4 gives its buckets up" \
    "wait_for 20 grep -q 'giving up bucket .*: a lease of another number of buckets is held' $TMP/b.four.log"
  assertTrue "and releases them" "wait_for 20 eval '[ \"\$(bucket_leases $ns | grep -c \" 4 four\$\")\" -eq 0 ]'"
  assertFalse "its prog never ran" "[ -s $TMP/b.four.spans ]"
  assertEquals "its shard file held nothing" 0 "$(bheld four)"
  kubectl -n "$ns" delete lease grp-b-007 >/dev/null
  assertTrue "the other Lease gone, it takes its 4" "wait_for 30 bheld_is four 4"
  assertTrue "and its prog runs" "wait_for 10 test -s $TMP/b.four.spans"
}

# Two copies of different B started together in an empty group: whichever
# takes first, one B ends up holding everything and the progs never run at
# the same time.
test_two_b_at_once_never_both_act() {
  need_cluster || return
  rm_spans
  ns=$(new_ns shardb)
  lease_b four "$ns" 4; lease_b two "$ns" 2
  one_b_holds() {
    { bheld_is four 4 && bheld_is two 0; } || { bheld_is four 0 && bheld_is two 2; }
  }
  assertTrue "one B holds all its buckets, the other none" "wait_for 40 one_b_holds"
  sleep 4
  assertTrue "and stays so" one_b_holds
  assertEquals "the two progs never ran at once" "" "$(overlap four two)"
  assertTrue "a prog ran" "[ -s $TMP/b.four.spans ] || [ -s $TMP/b.two.spans ]"
}

# --- rs-metrics, per instance -----------------------------------------------

# rs_keys_in I...: the ReplicaSets of the cluster whose namespace falls in
# one of the buckets I... of $B: the keys an instance holding them has.
rs_keys_in() {
  kubectl get rs -A -o jsonpath='{range .items[*]}{.metadata.namespace}{"\n"}{end}' >"$TMP/rs.ns"
  # shellcheck disable=SC2046
  shardpy bucket $B $(cat "$TMP/rs.ns") | awk -v held=" $* " \
    'index(held, " " $2 " ") { n++ } END { print n + 0 }'
}
# figure URL SERIES: one series of that rs-metrics' /metrics ("none").
figure() { MURL=$1 scrape "$TMP/scrape"; value "$TMP/scrape" "$2"; }
figure_is() { [ "$(figure "$1" "$2")" = "$3" ]; }
# bucket_series URL: the buckets of its rs_shard_bucket_held series, one line.
bucket_series() {
  MURL=$1 scrape "$TMP/scrape"
  sed -n 's/^rs_shard_bucket_held{bucket="\([0-9]*\)"} 1$/\1/p' "$TMP/scrape" | sort -n | tr '\n' ' ' | sed 's/ $//'
}

# Two instances, each with its rs-metrics: the buckets held (the count and
# which) and the rebalances, as the shard files say; the keys the first
# gained when it held all 8, those it dropped when the second joined (the
# ReplicaSets of the cluster in the buckets it gave up), and those the
# second gained; rs_shard_keys, the keys held now. The expected figures
# come from the cluster's ReplicaSets and the Python hash, not from the
# controller.
test_metrics_of_two_instances() {
  need_cluster || return
  local all g0 g1 d1 g2 h1 h2
  SHARD_B=$B LNS=$(new_ns shard)
  objects mk || { fail "unable to make the objects"; return; }
  start_instance m1
  assertTrue "m1 holds all $B buckets" "wait_for 30 nheld_is m1 $B"
  metrics_start --state-dir "$TMP/m1/state" --stages "" || { fail "rs-metrics of m1"; return; }
  u1=$MURL
  all=$(rs_keys_in $(seq 0 $((B - 1))))
  assertTrue "m1 synced: rs_shard_keys $all" "wait_for 60 figure_is $u1 rs_shard_keys $all"
  # every bucket: the whole range, which rs-watch does not send
  assertEquals "m1's watch sends no selector" 1 \
    "$(grep -c 'rs-watch\] the shard selector covers every namespace' "$TMP/m1/pipeline.log")"
  assertEquals "rs_shard_buckets" "$B" "$(figure "$u1" rs_shard_buckets)"
  assertEquals "m1's rs_shard_buckets_held" "$B" "$(figure "$u1" rs_shard_buckets_held)"
  assertEquals "m1's buckets, one series each" "$(seq 0 $((B - 1)) | tr '\n' ' ' | sed 's/ $//')" "$(bucket_series "$u1")"
  # rs-lease writes its shard file with the empty set it starts with,
  # then with the take the next LIST confirmed: that change counts one
  g0=$(jq .generation "$TMP/m1/state/shards.json")
  assertEquals "m1's rebalances: its shard file's generations less one" $((g0 - 1)) "$(figure "$u1" rs_shard_rebalances_total)"
  assertEquals "m1 gained every key at its start" "$all" "$(figure "$u1" rs_shard_keys_gained_total)"
  assertEquals "m1 dropped none" 0 "$(figure "$u1" rs_shard_keys_dropped_total)"

  start_instance m2
  assertTrue "4 buckets each" "wait_for 60 fair_split m1 m2"
  h1=$(held m1) h2=$(held m2)
  metrics_start --state-dir "$TMP/m2/state" --stages "" || { fail "rs-metrics of m2"; return; }
  u2=$MURL
  d1=$(rs_keys_in $h2) g2=$d1
  echo "m1 holds $h1, m2 $h2; $all keys, $d1 of them in m2's buckets"
  assertTrue "m1 synced again: rs_shard_keys $((all - d1))" "wait_for 60 figure_is $u1 rs_shard_keys $((all - d1))"
  assertTrue "m2 synced: rs_shard_keys $g2" "wait_for 60 figure_is $u2 rs_shard_keys $g2"
  # the pipeline restarted with half the buckets: its selector is sent
  for i in m1 m2; do
    assertTrue "$i's watch filtered by the server" \
      "wait_for 20 grep -q 'the server filters by the shard selector' $TMP/$i/pipeline.log"
  done
  assertEquals "m1's watch sent no selector only while it held all" 1 \
    "$(grep -c 'the shard selector covers every namespace' "$TMP/m1/pipeline.log")"
  assertEquals "m1's buckets" "$h1" "$(bucket_series "$u1")"
  assertEquals "m2's buckets" "$h2" "$(bucket_series "$u2")"
  assertEquals "m1's rs_shard_buckets_held" 4 "$(figure "$u1" rs_shard_buckets_held)"
  assertEquals "m2's rs_shard_buckets_held" 4 "$(figure "$u2" rs_shard_buckets_held)"
  g1=$(jq .generation "$TMP/m1/state/shards.json")
  assertTrue "m1 rebalanced ($g1 generations)" "[ $g1 -ge 2 ]"
  assertEquals "m1's rebalances: its shard file's generations less one" $((g1 - 1)) "$(figure "$u1" rs_shard_rebalances_total)"
  assertEquals "m1 dropped the keys of m2's buckets" "$d1" "$(figure "$u1" rs_shard_keys_dropped_total)"
  assertEquals "m1 gained nothing more" "$all" "$(figure "$u1" rs_shard_keys_gained_total)"
  assertEquals "m2 gained the keys of its buckets" "$g2" "$(figure "$u2" rs_shard_keys_gained_total)"
  assertEquals "m2 dropped none" 0 "$(figure "$u2" rs_shard_keys_dropped_total)"
  assertTrue "some keys moved, or the test says nothing" "[ $d1 -gt 0 ] && [ $d1 -lt $all ]"
}

. "$SHUNIT2"
