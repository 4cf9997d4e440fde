# apply.sh: rs-apply alone, fed hand-written intents (doc/intents.md),
# against the real test apiserver. Each test has its own namespace and, when
# rs-queue is built, its own rs-queue server so that the DONE / FORGET /
# RETRY / AFTER of the key can be read back from `rs-queue stats`.
. "$(dirname "$0")/lib.sh"
# run-all.sh counts "Ran N tests." lines: no colour codes in them
SHUNIT_COLOR=${SHUNIT_COLOR:-none}

EXP_TOOL=${EXP_TOOL:-$top/build/test/exp-tool}
QSOCK=
QPID=

setUp() {
  QSOCK=
  QPID=
  [ -n "${KUBECONFIG:-}" ] || return 0
  # a tree built without rs-queue would test less, silently: it stops here
  command -v rs-queue >/dev/null 2>&1 || { echo "apply.sh: no rs-queue on PATH (make)" >&2; return 1; }
  QSOCK=$(mktemp -u "$RS_STATE_DIR/q.XXXXXX")  # rs-queue wants a 0700 dir
  rs-queue --queue "$QSOCK" serve 2>>"$TMP/rs-queue.log" &
  QPID=$!
  wait_for 10 rs-queue --queue "$QSOCK" len || { cat "$TMP/rs-queue.log"; ls -la "$TMP"; fail "rs-queue did not start"; }
}

tearDown() {
  if [ -n "$QPID" ]; then
    kill "$QPID" 2>/dev/null
    wait "$QPID" 2>/dev/null
  fi
  QPID=
}

# apply_flags: where this test's rs-apply reports (the queue, or none).
apply_flags() {
  if [ -n "$QSOCK" ]; then
    echo "--queue $QSOCK --expectations $RS_STATE_DIR/expectations"
  else
    echo "--no-queue --expectations $RS_STATE_DIR/expectations"
  fi
}

# apply [FLAGS...] < intents
apply() {
  # shellcheck disable=SC2046  # the paths have no blanks (mktemp)
  rs-apply $(apply_flags) "$@"
}

# q_hold KEY: the key handed out, as rs-sync would have it when it writes
# the intents, so that rs-apply's DONE finds it processing.
q_hold() {
  [ -n "$QSOCK" ] || return 0
  rs-queue --queue "$QSOCK" add "$1" >/dev/null &&
    [ "$(rs-queue --queue "$QSOCK" get)" = "$1" ]
}

# q_stat FIELD: a number from rs-queue stats.
q_stat() {
  rs-queue --queue "$QSOCK" stats | jq -r ".$1"
}

q_stat_is() { [ "$(q_stat "$1")" = "$2" ]; }

# mk_rs NS NAME [REPLICAS]: a ReplicaSet (no controller runs: it just sits);
# its JSON goes to $TMP/NS.NAME.json.
mk_rs() {
  kubectl create -f - >/dev/null <<EOF || return 1
{"apiVersion":"apps/v1","kind":"ReplicaSet",
 "metadata":{"name":"$2","namespace":"$1"},
 "spec":{"replicas":${3:-3},"selector":{"matchLabels":{"app":"$2"}},
  "template":{"metadata":{"labels":{"app":"$2"},"annotations":{"note":"t"}},
   "spec":{"containers":[{"name":"c","image":"nginx"}]}}}}
EOF
  kubectl get rs -n "$1" "$2" -o json >"$TMP/$1.$2.json"
}

rs_json() { cat "$TMP/$1.$2.json"; }

owner_of() {
  jq -c '{apiVersion:"apps/v1",kind:"ReplicaSet",namespace:.metadata.namespace,
    name:.metadata.name,uid:.metadata.uid,
    resourceVersion:.metadata.resourceVersion}' "$TMP/$1.$2.json"
}

# intent OP NS NAME [EXTRA_JSON]: one intent line for the ReplicaSet NS/NAME.
intent() {
  jq -nc --arg op "$1" --arg key "$2/$3" --argjson owner "$(owner_of "$2" "$3")" \
    --argjson extra "${4:-{\}}" '{op:$op,key:$key,owner:$owner} + $extra'
}

create_intent() {  # NS NAME COUNT
  intent create "$1" "$2" "$(jq -c --argjson n "$3" '{count:$n,template:.spec.template}' "$TMP/$1.$2.json")"
}

# mk_pod NS NAME LABEL [OWNER_UID OWNER_NAME]: a bare pod, optionally owned.
mk_pod() {
  if [ -n "${4:-}" ]; then
    refs=",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"$5\",\"uid\":\"$4\",\"controller\":true,\"blockOwnerDeletion\":true}]"
  else
    refs=
  fi
  kubectl create -f - >/dev/null <<EOF
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$2","namespace":"$1",
 "labels":{"app":"$3"}$refs},
 "spec":{"containers":[{"name":"c","image":"nginx"}]}}
EOF
}

pod_uid() { kubectl get pod -n "$1" "$2" -o jsonpath='{.metadata.uid}'; }
pod_gone() { ! kubectl get pod -n "$1" "$2" >/dev/null 2>&1; }

events_json() { kubectl get events -n "$1" -o json; }

test_create_pods_owner_refs_and_events() {
  need_cluster || return
  ns=$(new_ns create)
  mk_rs "$ns" web
  uid=$(jq -r .metadata.uid "$TMP/$ns.web.json")
  q_hold "$ns/web"
  { create_intent "$ns" web 3; intent end "$ns" web; } | apply 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  pods=$(kubectl get pods -n "$ns" -o json)
  assertEquals "pods created" 3 "$(echo "$pods" | jq '.items | length')"
  assertEquals "controllerRefs" 3 "$(echo "$pods" | jq --arg u "$uid" '[.items[].metadata.ownerReferences[]
    | select(.uid == $u and .kind == "ReplicaSet" and .apiVersion == "apps/v1" and .name == "web"
      and .controller == true and .blockOwnerDeletion == true)] | length')"
  assertEquals "generateName" 3 "$(echo "$pods" | jq '[.items[].metadata | select(.generateName == "web-"
    and (.name | startswith("web-")))] | length')"
  assertEquals "template labels and annotations" 3 "$(echo "$pods" | jq '[.items[].metadata
    | select(.labels.app == "web" and .annotations.note == "t")] | length')"
  names=$(echo "$pods" | jq -r '[.items[].metadata.name] | sort | join(" ")')
  ev=$(events_json "$ns")
  msgs=$(echo "$ev" | jq -r '[.items[] | select(.reason == "SuccessfulCreate" and .type == "Normal"
    and .source.component == "replicaset-controller" and .involvedObject.uid == "'"$uid"'")
    | .message | sub("^Created pod: "; "")] | sort | join(" ")')
  assertEquals "one SuccessfulCreate per pod" "$names" "$msgs"
  assertEquals "event names" 3 "$(echo "$ev" | jq '[.items[].metadata.name | select(test("^web\\.[0-9a-f]+$"))] | length')"
  if [ -n "$QSOCK" ]; then
    assertEquals "key forgotten, not retried" 0 "$(q_stat retries_total)"
    assertEquals "key done" 0 "$(q_stat processing)"
  fi
}

test_create_slow_start_batches() {
  need_cluster || return
  ns=$(new_ns batch)
  mk_rs "$ns" web 7
  q_hold "$ns/web"
  { create_intent "$ns" web 7; intent end "$ns" web; } | apply -v 2 2>"$TMP/log"
  batches=$(sed -n 's/.*creating a batch of \([0-9]*\) pods.*/\1/p' "$TMP/log" | tr '\n' ' ')
  assertEquals "batches" "1 2 4 " "$batches"
  assertEquals "pods" 7 "$(kubectl get pods -n "$ns" -o name | wc -l)"
}

test_create_without_labels_is_refused() {
  need_cluster || return
  ns=$(new_ns nolabels)
  mk_rs "$ns" web
  "$EXP_TOOL" "$RS_STATE_DIR/expectations" expect-creations "$ns/web" 2 >/dev/null
  q_hold "$ns/web"
  { intent create "$ns" web '{"count":2,"template":{"metadata":{},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}'
    intent end "$ns" web; } | apply 2>"$TMP/log"
  assertEquals "no pod" 0 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  grep -q "unable to create pods, no labels" "$TMP/log" || fail "no refusal logged"
  assertEquals "expectation lowered for both" 0 \
    "$("$EXP_TOOL" "$RS_STATE_DIR/expectations" get "$ns/web" | jq .add)"
  [ -n "$QSOCK" ] && assertEquals "key retried" 1 "$(q_stat retries_total)"
}

test_delete_pods_one_already_gone() {
  need_cluster || return
  ns=$(new_ns delete)
  mk_rs "$ns" web
  uid=$(jq -r .metadata.uid "$TMP/$ns.web.json")
  mk_pod "$ns" p1 web "$uid" web
  mk_pod "$ns" p2 web "$uid" web
  mk_pod "$ns" keep web "$uid" web
  "$EXP_TOOL" "$RS_STATE_DIR/expectations" expect-deletions "$ns/web" "$ns/p1" "$ns/p2" "$ns/gone" >/dev/null
  q_hold "$ns/web"
  { intent delete "$ns" web '{"pods":[{"name":"p1","uid":"a"},{"name":"gone","uid":"b"},{"name":"p2","uid":"c"}]}'
    intent end "$ns" web; } | apply 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  pod_gone "$ns" p1 || fail "p1 still there"
  pod_gone "$ns" p2 || fail "p2 still there"
  pod_gone "$ns" keep && fail "keep was deleted"
  ev=$(events_json "$ns")
  assertEquals "SuccessfulDelete events" "Deleted pod: p1,Deleted pod: p2" \
    "$(echo "$ev" | jq -r '[.items[] | select(.reason == "SuccessfulDelete") | .message] | sort | join(",")')"
  assertEquals "no FailedDelete for NotFound" 0 "$(echo "$ev" | jq '[.items[] | select(.reason == "FailedDelete")] | length')"
  # all three are left to the watch, the NotFound too: the pod was in
  # rs-sync's cache when it chose it, so the watch brings its deletion
  rec=$("$EXP_TOOL" "$RS_STATE_DIR/expectations" get "$ns/web")
  assertEquals "deletions still expected" 3 "$(echo "$rec" | jq .del)"
  if [ -n "$QSOCK" ]; then
    assertEquals "NotFound does not fail the key" 0 "$(q_stat retries_total)"
  fi
}

test_adopt_orphan() {
  need_cluster || return
  ns=$(new_ns adopt)
  mk_rs "$ns" web
  uid=$(jq -r .metadata.uid "$TMP/$ns.web.json")
  mk_pod "$ns" orphan web
  puid=$(pod_uid "$ns" orphan)
  q_hold "$ns/web"
  { intent adopt "$ns" web "{\"pod\":{\"name\":\"orphan\",\"uid\":\"$puid\"}}"
    intent end "$ns" web; } | apply -v 4 2>"$TMP/log"
  refs=$(kubectl get pod -n "$ns" orphan -o json | jq -c '.metadata.ownerReferences')
  assertEquals "controllerRef set" \
    "[{\"apiVersion\":\"apps/v1\",\"blockOwnerDeletion\":true,\"controller\":true,\"kind\":\"ReplicaSet\",\"name\":\"web\",\"uid\":\"$uid\"}]" \
    "$(echo "$refs" | jq -cS .)"
  grep -q "GET /apis/apps/v1/namespaces/$ns/replicasets/web: 200" "$TMP/log" ||
    fail "owner not read again before adopting"
  [ -n "$QSOCK" ] && assertEquals "key forgotten" 0 "$(q_stat retries_total)"
}

test_adopt_refused_when_owner_uid_differs() {
  need_cluster || return
  ns=$(new_ns refuse)
  mk_rs "$ns" web
  mk_pod "$ns" orphan web
  puid=$(pod_uid "$ns" orphan)
  # the intent names an owner that was replaced: same name, another UID
  jq '.metadata.uid = "00000000-0000-0000-0000-000000000001"' "$TMP/$ns.web.json" >"$TMP/x" &&
    mv "$TMP/x" "$TMP/$ns.web.json"
  q_hold "$ns/web"
  { intent adopt "$ns" web "{\"pod\":{\"name\":\"orphan\",\"uid\":\"$puid\"}}"
    intent end "$ns" web; } | apply -v 4 2>"$TMP/log"
  assertEquals "not adopted" "null" \
    "$(kubectl get pod -n "$ns" orphan -o json | jq -c '.metadata.ownerReferences')"
  grep -q "is gone: got uid" "$TMP/log" || fail "no refusal logged"
  grep -q "PATCH" "$TMP/log" && fail "a patch was sent"
  [ -n "$QSOCK" ] && assertEquals "key retried" 1 "$(q_stat retries_total)"
}

test_adopt_needs_the_pod_uid() {
  need_cluster || return
  ns=$(new_ns precond)
  mk_rs "$ns" web
  mk_pod "$ns" orphan web
  q_hold "$ns/web"
  # a pod of the same name but another UID (deleted and recreated)
  { intent adopt "$ns" web '{"pod":{"name":"orphan","uid":"00000000-0000-0000-0000-000000000002"}}'
    intent end "$ns" web; } | apply 2>"$TMP/log"
  assertEquals "not adopted" "null" \
    "$(kubectl get pod -n "$ns" orphan -o json | jq -c '.metadata.ownerReferences')"
  [ -n "$QSOCK" ] && assertEquals "key retried" 1 "$(q_stat retries_total)"
}

test_release() {
  need_cluster || return
  ns=$(new_ns release)
  mk_rs "$ns" web
  uid=$(jq -r .metadata.uid "$TMP/$ns.web.json")
  mk_pod "$ns" owned other "$uid" web
  puid=$(pod_uid "$ns" owned)
  q_hold "$ns/web"
  { intent release "$ns" web "{\"pod\":{\"name\":\"owned\",\"uid\":\"$puid\"}}"
    intent release "$ns" web '{"pod":{"name":"vanished","uid":"x"}}'
    intent end "$ns" web; } | apply 2>"$TMP/log"
  assertEquals "ownerReference removed" "null" \
    "$(kubectl get pod -n "$ns" owned -o json | jq -c '.metadata.ownerReferences')"
  [ -n "$QSOCK" ] && assertEquals "NotFound release is success" 0 "$(q_stat retries_total)"
}

status_intent() {  # NS NAME STATUS_JSON OLD_STATUS_JSON
  intent status "$1" "$2" "$(jq -c --argjson st "$3" --argjson old "$4" \
    '{object:(del(.metadata.managedFields) | .status = $st), old_status:$old}' "$TMP/$1.$2.json")"
}

test_status_written_once() {
  need_cluster || return
  ns=$(new_ns status)
  mk_rs "$ns" web
  old=$(jq -c '.status // {}' "$TMP/$ns.web.json")
  st='{"replicas":2,"fullyLabeledReplicas":2,"observedGeneration":1}'
  { status_intent "$ns" web "$st" "$old"; intent end "$ns" web; } | apply -v 4 2>"$TMP/log"
  kubectl get rs -n "$ns" web -o json >"$TMP/$ns.web.json"
  assertEquals "status written" 2 "$(jq .status.replicas "$TMP/$ns.web.json")"
  grep -q "PUT /apis/apps/v1/namespaces/$ns/replicasets/web/status: 200" "$TMP/log" ||
    fail "not written through /status"
  rv=$(jq -r .metadata.resourceVersion "$TMP/$ns.web.json")
  # rs-sync's next round: the same status, now also the old one
  cur=$(jq -c .status "$TMP/$ns.web.json")
  { status_intent "$ns" web "$cur" "$cur"; intent end "$ns" web; } | apply -v 4 2>"$TMP/log2"
  grep -q "PUT" "$TMP/log2" && fail "an unchanged status was written"
  assertEquals "resourceVersion unchanged" "$rv" \
    "$(kubectl get rs -n "$ns" web -o jsonpath='{.metadata.resourceVersion}')"
}

test_status_conflict_reads_again() {
  need_cluster || return
  ns=$(new_ns conflict)
  mk_rs "$ns" web
  old=$(jq -c '.status // {}' "$TMP/$ns.web.json")
  # the cached object is now stale
  kubectl label rs -n "$ns" web touched=yes >/dev/null
  q_hold "$ns/web"
  { status_intent "$ns" web '{"replicas":5,"observedGeneration":1}' "$old"
    intent end "$ns" web; } | apply -v 4 2>"$TMP/log"
  assertEquals "status written on the fresh copy" 5 \
    "$(kubectl get rs -n "$ns" web -o jsonpath='{.status.replicas}')"
  assertEquals "the label kept" yes \
    "$(kubectl get rs -n "$ns" web -o jsonpath='{.metadata.labels.touched}')"
  assertEquals "two PUTs" 2 "$(grep -c "PUT /apis/apps/v1/namespaces/$ns/replicasets/web/status" "$TMP/log")"
  [ -n "$QSOCK" ] && assertEquals "key forgotten" 0 "$(q_stat retries_total)"
}

# rs-sync syncs a key again before its cache has seen our status write:
# the intent carries the version that write replaced. rs-apply writes over
# the version it made instead of conflicting (no GET, no second PUT), and
# does not write again a status it has just written.
test_status_over_own_last_write() {
  need_cluster || return
  ns=$(new_ns ownwrite)
  mk_rs "$ns" web
  old=$(jq -c '.status // {}' "$TMP/$ns.web.json")
  { status_intent "$ns" web '{"replicas":2,"observedGeneration":1}' "$old"
    intent end "$ns" web
    status_intent "$ns" web '{"replicas":3,"observedGeneration":1}' "$old"
    intent end "$ns" web
    status_intent "$ns" web '{"replicas":3,"observedGeneration":1}' "$old"
    intent end "$ns" web; } | apply -v 4 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  assertEquals "the last status written" 3 \
    "$(kubectl get rs -n "$ns" web -o jsonpath='{.status.replicas}')"
  assertEquals "PUTs" 2 "$(grep -c "PUT /apis/apps/v1/namespaces/$ns/replicasets/web/status: 200" "$TMP/log")"
  assertEquals "conflicts" 0 "$(grep -c "replicasets/web/status: 409" "$TMP/log")"
  assertEquals "GETs" 0 "$(grep -c "GET /apis/apps/v1/namespaces/$ns/replicasets/web" "$TMP/log")"
}

# A key's end waits while other answers are due (--queue-hold), so that
# the ends of one window's answers reach rs-queue in one write; with
# nothing in flight it goes at once.
test_ends_wait_for_the_answers_due() {
  need_cluster || return
  local ns old pid t0 ms
  ns=$(new_ns hold)
  mk_rs "$ns" a
  # replicas 0: a controller in a later suite (they watch every namespace)
  # would otherwise make b's 1,000 pods, should this test not clean up
  mk_rs "$ns" b 0
  old=$(jq -c '.status // {}' "$TMP/$ns.a.json")
  q_hold "$ns/a"
  q_hold "$ns/b"
  mkfifo "$TMP/fifo"
  # shellcheck disable=SC2046
  rs-apply $(apply_flags) --queue-hold 10s --kube-api-qps 0 -v 4 <"$TMP/fifo" 2>"$TMP/log" &
  pid=$!
  exec 3>"$TMP/fifo"
  { create_intent "$ns" b 1000; intent end "$ns" b; } >&3
  wait_for 20 grep -q "$ns/b: creating a batch of 8 " "$TMP/log" || fail "b's creates under way"
  { status_intent "$ns" a '{"replicas":2,"observedGeneration":1}' "$old"
    intent end "$ns" a; } >&3
  wait_for 20 grep -q "replicasets/a/status: 200" "$TMP/log" || fail "a's status written"
  # b ends after its last create: 2 processing means a's DONE waits too
  assertEquals "a's end held while b's creates are due" 2 "$(q_stat processing)"
  assertTrue "both ended" "wait_for 60 q_stat_is processing 0"
  assertEquals "b's pods" 1000 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  q_hold "$ns/a"
  t0=$(date +%s%N)
  { status_intent "$ns" a '{"replicas":3,"observedGeneration":1}' "$old"
    intent end "$ns" a; } >&3
  assertTrue "a ended" "wait_for 20 q_stat_is processing 0"
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  assertTrue "nothing else due: ended in ${ms} ms, not at the hold's end" "[ $ms -lt 5000 ]"
  exec 3>&-
  wait "$pid"
  assertEquals "exit status" 0 $?
  rm -f "$TMP/fifo"
  # no namespace controller or garbage collector here: what is left stays
  # for the later suites' controllers, which watch every namespace
  kubectl -n "$ns" delete rs,pods --all --wait=false >/dev/null
}

test_quota_failed_create() {
  need_cluster || return
  ns=$(new_ns quota)
  mk_rs "$ns" web
  kubectl create quota q -n "$ns" --hard=pods=1 >/dev/null
  # no kube-controller-manager here: the quota's status is ours to set
  kubectl get quota -n "$ns" q -o json |
    jq '.status = {hard:{pods:"1"},used:{pods:"0"}}' >"$TMP/q.json"
  kubectl replace --subresource=status -f "$TMP/q.json" >/dev/null
  "$EXP_TOOL" "$RS_STATE_DIR/expectations" expect-creations "$ns/web" 3 >/dev/null
  old=$(jq -c '.status // {}' "$TMP/$ns.web.json")
  q_hold "$ns/web"
  { create_intent "$ns" web 3
    status_intent "$ns" web '{"replicas":3,"fullyLabeledReplicas":3,"observedGeneration":1}' "$old"
    intent end "$ns" web '{"requeue_after":30}'; } | apply -v 2 2>"$TMP/log"
  assertEquals "one pod within the quota" 1 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  assertEquals "batches stop after the failure" "1 2 " \
    "$(sed -n 's/.*creating a batch of \([0-9]*\) pods.*/\1/p' "$TMP/log" | tr '\n' ' ')"
  ev=$(events_json "$ns")
  assertEquals "FailedCreate events" 2 "$(echo "$ev" | jq '[.items[] | select(.reason == "FailedCreate"
    and .type == "Warning") | .count] | add')"
  echo "$ev" | jq -e '[.items[] | select(.reason == "FailedCreate")][0].message
    | test("^Error creating: pods \"web-[a-z0-9]+\" is forbidden: exceeded quota: q")' >/dev/null ||
    fail "FailedCreate message: $(echo "$ev" | jq -c '[.items[].message]')"
  cond=$(kubectl get rs -n "$ns" web -o json | jq -c '.status.conditions[0]')
  assertEquals "ReplicaFailure" "ReplicaFailure True FailedCreate" \
    "$(echo "$cond" | jq -r '"\(.type) \(.status) \(.reason)"')"
  echo "$cond" | jq -e '.message | test("exceeded quota: q")' >/dev/null || fail "condition message: $cond"
  assertEquals "expectations lowered for the 2 not created" 1 \
    "$("$EXP_TOOL" "$RS_STATE_DIR/expectations" get "$ns/web" | jq .add)"
  if [ -n "$QSOCK" ]; then
    assertEquals "key retried" 1 "$(q_stat retries_total)"
    sleep 0.2  # past the RETRY's own delay
    assertEquals "no AFTER on failure" 0 "$(q_stat waiting)"
  fi
  # Left behind, a ReplicaSet over its quota makes every controller that a
  # later suite starts on this cluster warn about it, which the suites
  # that check for a quiet log would take for theirs.
  kubectl -n "$ns" delete rs web --wait=false >/dev/null
}

test_terminating_namespace_is_not_a_failure() {
  need_cluster || return
  ns=$(new_ns term)
  mk_rs "$ns" web
  # no namespace controller runs: the namespace stays Terminating
  kubectl delete namespace "$ns" --wait=false >/dev/null
  wait_for 10 sh -c "kubectl get ns $ns -o jsonpath='{.status.phase}' | grep -q Terminating"
  "$EXP_TOOL" "$RS_STATE_DIR/expectations" expect-creations "$ns/web" 3 >/dev/null
  q_hold "$ns/web"
  { create_intent "$ns" web 3; intent end "$ns" web; } | apply -v 2 2>"$TMP/log"
  assertEquals "every batch ran" "1 2 " \
    "$(sed -n 's/.*creating a batch of \([0-9]*\) pods.*/\1/p' "$TMP/log" | tr '\n' ' ')"
  assertEquals "no FailedCreate" 0 "$(events_json "$ns" | jq '[.items[] | select(.reason == "FailedCreate")] | length')"
  assertEquals "expectations not lowered" 3 \
    "$("$EXP_TOOL" "$RS_STATE_DIR/expectations" get "$ns/web" | jq .add)"
  [ -n "$QSOCK" ] && assertEquals "key forgotten" 0 "$(q_stat retries_total)"
}

test_repeated_event_counted() {
  need_cluster || return
  ns=$(new_ns count)
  mk_rs "$ns" web
  mk_pod "$ns" p web
  del=$(intent delete "$ns" web '{"pods":[{"name":"p","uid":"u"}]}')
  end=$(intent end "$ns" web)
  # two rounds deleting a pod of the same name: the second event is a repeat
  { printf '%s\n%s\n' "$del" "$end"
    wait_for 20 pod_gone "$ns" p
    mk_pod "$ns" p web
    printf '%s\n%s\n' "$del" "$end"; } | apply -v 4 2>"$TMP/log"
  pod_gone "$ns" p || fail "p not deleted the second time"
  ev=$(events_json "$ns" | jq -c '[.items[] | select(.reason == "SuccessfulDelete")]')
  assertEquals "one Event object" 1 "$(echo "$ev" | jq length)"
  assertEquals "counted twice" 2 "$(echo "$ev" | jq '.[0].count')"
  grep -q "PATCH /api/v1/namespaces/$ns/events/web\." "$TMP/log" || fail "the repeat was not a PATCH"
}

test_similar_events_aggregated() {
  need_cluster || return
  ns=$(new_ns aggr)
  mk_rs "$ns" web 12
  { create_intent "$ns" web 12; intent end "$ns" web; } | apply 2>"$TMP/log"
  assertEquals "pods" 12 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  ev=$(events_json "$ns" | jq -c '[.items[] | select(.reason == "SuccessfulCreate")]')
  # client-go: the 10th similar event within 10 minutes and those after it
  # are combined into one, counted
  assertEquals "Event objects" 10 "$(echo "$ev" | jq length)"
  assertEquals "combined event count" 3 "$(echo "$ev" | jq '[.[] | select(.message
    | startswith("(combined from similar events): Created pod: web-"))][0].count')"
  assertEquals "all creations accounted for" 12 "$(echo "$ev" | jq '[.[].count] | add')"
}

# events_in_flight LOG NS: the most event writes of NS in flight at once in
# rs-apply's log (-v 6 logs a request as it goes, -v 4 as it ends).
events_in_flight() {
  awk -v p="/api/v1/namespaces/$2/events" '
    $0 ~ " (POST|PATCH) " p "[/a-z0-9.]* [{]" { n++; if (n > max) max = n }
    $0 ~ " (POST|PATCH) " p "[/a-z0-9.]*: [0-9]" { n-- }
    END { print max + 0 }' "$1"
}

# rs_events_intents NS COUNT NAME...: a create of COUNT pods and the end, for
# each ReplicaSet NAME made with mk_rs.
rs_events_intents() {
  local ns=$1 n=$2 name
  shift 2
  for name in "$@"; do create_intent "$ns" "$name" "$n"; intent end "$ns" "$name"; done
}

test_events_go_together_while_tokens_last() {
  need_cluster || return
  ns=$(new_ns evpar)
  mk_rs "$ns" a 8
  mk_rs "$ns" b 8
  rs_events_intents "$ns" 8 a b | apply --kube-api-qps 0 -v 6 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  ev=$(events_json "$ns" | jq -c '[.items[] | select(.reason == "SuccessfulCreate")]')
  assertEquals "one event a pod" 16 "$(echo "$ev" | jq length)"
  most=$(events_in_flight "$TMP/log" "$ns")
  [ "$most" -ge 2 ] || fail "event writes in flight at once: $most, with tokens to spare"
  [ "$most" -le 8 ] || fail "event writes in flight at once: $most, above 8"
}

# event_rounds LOG NS: the event writes of NS that began when none was in
# flight (rounds), and the shortest time between two, ms (rs-apply's -v 6
# log has a write with its body as it goes, -v 4 every request as it ends).
event_rounds() {
  awk -v p="/api/v1/namespaces/$2/events" '
    function t(s) { split(s, a, ":"); return (a[1] * 3600 + a[2] * 60 + a[3]) * 1000 }
    $0 ~ " (POST|PATCH) " p "[/a-z0-9.]* [{]" {
      if (n == 0) {
        now = t($2)
        if (rounds > 0 && (gap == "" || now - last < gap)) gap = now - last
        rounds++; last = now
      }
      n++
    }
    $0 ~ " (POST|PATCH) " p "[/a-z0-9.]*: [0-9]" { n-- }
    END { printf "%d %.1f\n", rounds, gap }' "$1"
}

test_events_go_in_rounds() {
  need_cluster || return
  ns=$(new_ns evround)
  mk_rs "$ns" a 8
  mk_rs "$ns" b 8
  mk_rs "$ns" c 8
  rs_events_intents "$ns" 8 a b c | apply --kube-api-qps 0 -v 6 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  assertEquals "one event a pod" 24 "$(events_json "$ns" | jq '[.items[] | select(.reason == "SuccessfulCreate")] | length')"
  set -- $(event_rounds "$TMP/log" "$ns")
  [ "$1" -ge 3 ] || fail "24 events in $1 rounds, with at most 8 a round"
  # the log's clock is the wall clock, the rounds' the monotonic one
  awk -v g="$2" 'BEGIN { exit !(g >= 19) }' ||
    fail "rounds of events $2 ms apart, not 20"
}

test_events_one_at_a_time_when_rate_limited() {
  need_cluster || return
  ns=$(new_ns evone)
  mk_rs "$ns" a 1
  # six events at once, and a bucket that never holds a token for a second
  # one (a write would have to take 500 ms for one to come back meanwhile)
  for i in 1 2 3 4 5 6; do
    intent event "$ns" a "{\"type\":\"Warning\",\"reason\":\"Test\",\"message\":\"m$i\"}"
  done | apply --kube-api-qps 2 --kube-api-burst 1 -v 6 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  assertEquals "the events" 6 "$(events_json "$ns" | jq '[.items[] | select(.reason == "Test")] | length')"
  assertEquals "event writes in flight at once" 1 "$(events_in_flight "$TMP/log" "$ns")"
}

test_dry_run_sends_nothing() {
  need_cluster || return
  ns=$(new_ns dryrun)
  mk_rs "$ns" web
  mk_pod "$ns" p1 web
  old=$(jq -c '.status // {}' "$TMP/$ns.web.json")
  rv=$(kubectl get rs -n "$ns" web -o jsonpath='{.metadata.resourceVersion}')
  { create_intent "$ns" web 3
    intent delete "$ns" web '{"pods":[{"name":"p1","uid":"u"}]}'
    status_intent "$ns" web '{"replicas":9}' "$old"
    intent end "$ns" web; } |
    rs-apply --dry-run --queue /nonexistent/q.sock --expectations /nonexistent/e >"$TMP/out" 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  assertEquals "requests printed" "POST POST POST DELETE PUT" \
    "$(jq -r .method "$TMP/out" | tr '\n' ' ' | sed 's/ $//')"
  assertEquals "create body" "web- true" \
    "$(jq -r 'select(.method == "POST") | "\(.body.metadata.generateName) \(.body.metadata.ownerReferences[0].controller)"' "$TMP/out" | head -1)"
  assertEquals "paths" "/api/v1/namespaces/$ns/pods/p1 /apis/apps/v1/namespaces/$ns/replicasets/web/status" \
    "$(jq -r 'select(.method != "POST") | .path' "$TMP/out" | tr '\n' ' ' | sed 's/ $//')"
  assertEquals "no pod created" 1 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  pod_gone "$ns" p1 && fail "p1 deleted"
  assertEquals "status untouched" "$rv" "$(kubectl get rs -n "$ns" web -o jsonpath='{.metadata.resourceVersion}')"
  assertEquals "no event" 0 "$(events_json "$ns" | jq '.items | length')"
}

test_keys_concurrent_up_to_limit() {
  need_cluster || return
  ns=$(new_ns conc)
  mk_rs "$ns" a
  mk_rs "$ns" b
  in=$(create_intent "$ns" a 1; intent end "$ns" a; create_intent "$ns" b 1; intent end "$ns" b)
  echo "$in" | apply --concurrency 1 -v 4 2>"$TMP/log1"
  a_end=$(grep -n "$ns/a: synced" "$TMP/log1" | cut -d: -f1)
  b_start=$(grep -n "$ns/b: intents start" "$TMP/log1" | cut -d: -f1)
  assertTrue "with --concurrency 1, b waits for a ($a_end < $b_start)" "[ ${a_end:-0} -lt ${b_start:-0} ]"
  kubectl delete pods -n "$ns" --all --wait=false >/dev/null
  echo "$in" | apply -v 4 2>"$TMP/log2"
  a_end=$(grep -n "$ns/a: synced" "$TMP/log2" | cut -d: -f1)
  b_start=$(grep -n "$ns/b: intents start" "$TMP/log2" | cut -d: -f1)
  assertTrue "by default, b starts before a ends ($b_start < $a_end)" "[ ${b_start:-9999} -lt ${a_end:-0} ]"
}

test_bad_lines_retry_their_key_only() {
  need_cluster || return
  ns=$(new_ns bad)
  mk_rs "$ns" a
  mk_rs "$ns" b
  q_hold "$ns/a"
  q_hold "$ns/b"
  { create_intent "$ns" a 1
    echo 'this is not json'
    intent end "$ns" a
    intent frobnicate "$ns" b
    create_intent "$ns" b 1
    intent end "$ns" b '{"requeue_after":60}'
    create_intent "$ns" a 1; } | apply 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  grep -q "line 2: malformed JSON" "$TMP/log" || fail "bad line not reported"
  grep -q "line 4: unknown op" "$TMP/log" || fail "unknown op not reported"
  grep -q "input ended inside the intents of $ns/a" "$TMP/log" || fail "missing end not reported"
  assertEquals "the good writes still ran" 3 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  if [ -n "$QSOCK" ]; then
    # a: malformed line, then a round without end; b: unknown op
    assertEquals "retries" 3 "$(q_stat retries_total)"
    sleep 0.2  # past the RETRYs' own delays
    assertEquals "no AFTER for a failed key" 0 "$(q_stat waiting)"
  fi
}

test_requeue_after() {
  need_cluster || return
  [ -n "$QSOCK" ] || { skip_test "no rs-queue (not on PATH): nothing to hand the AFTER to"; return; }
  ns=$(new_ns after)
  mk_rs "$ns" web
  q_hold "$ns/web"
  intent end "$ns" web '{"requeue_after":60}' | apply 2>"$TMP/log"
  sleep 0.2  # a RETRY would be back in the queue by now, an AFTER 60 not
  assertEquals "AFTER: waiting" 1 "$(q_stat waiting)"
  assertEquals "one delayed add (the AFTER), no RETRY" 1 "$(q_stat retries_total)"
  assertEquals "done" 0 "$(q_stat processing)"
  assertEquals "not queued yet" 0 "$(q_stat len)"
}

# hist STATS NAME: "count sum" of an unlabelled histogram in a stats file.
hist() {
  jq -r --arg n "$2" '.families[] | select(.name == $n) | .samples[0]
    | "\(.count) \(.sum)"' "$1"
}

# The stamps of an end line (doc/intents.md) time the key: from rs-sync's
# write (sent_at) to this read, from the event (event_at) to the end, and
# the writes from the first intent to the end. A stamp that is no positive
# number is ignored, and never fails its key; an end without stamps times
# the writes only.
test_end_stamps_time_the_key() {
  need_cluster || return
  ns=$(new_ns stamps)
  mk_rs "$ns" web
  mk_rs "$ns" db
  mk_rs "$ns" old
  q_hold "$ns/web"
  q_hold "$ns/db"
  q_hold "$ns/old"
  now=$(date +%s.%N)
  sent=$(mawk -v t="$now" 'BEGIN { printf "%.6f", t - 0.5 }')
  ev=$(mawk -v t="$now" 'BEGIN { printf "%.6f", t - 2 }')
  { create_intent "$ns" web 1
    intent end "$ns" web "{\"event_at\":$ev,\"sent_at\":$sent}"
    intent end "$ns" db '{"event_at":"yesterday","sent_at":-1}'
    intent end "$ns" old; } | apply 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  stats=$RS_STATE_DIR/stats/rs-apply.json
  assertEquals "intent delivery: the one sent_at" 1 \
    "$(hist "$stats" rs_apply_intent_delivery_seconds | cut -d' ' -f1)"
  assertTrue "intent delivery: at least 0.5 s: $(hist "$stats" rs_apply_intent_delivery_seconds)" \
    "hist $stats rs_apply_intent_delivery_seconds | mawk '{ ok = \$2 >= 0.5 && \$2 < 30 } END { exit !ok }'"
  assertEquals "event to end: the one event_at" 1 \
    "$(hist "$stats" rs_apply_event_to_end_seconds | cut -d' ' -f1)"
  assertTrue "event to end: at least 2 s: $(hist "$stats" rs_apply_event_to_end_seconds)" \
    "hist $stats rs_apply_event_to_end_seconds | mawk '{ ok = \$2 >= 2 && \$2 < 30 } END { exit !ok }'"
  assertEquals "every key's writes timed" 3 \
    "$(hist "$stats" rs_apply_key_seconds | cut -d' ' -f1)"
  assertTrue "the create took some time: $(hist "$stats" rs_apply_key_seconds)" \
    "hist $stats rs_apply_key_seconds | mawk '{ ok = \$2 > 0 && \$2 < 30 } END { exit !ok }'"
  assertEquals "the pod created" 1 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  grep -q "warning" "$TMP/log" && fail "a warning: $(grep warning "$TMP/log")"
  if [ -n "$QSOCK" ]; then
    assertEquals "bad stamps fail no key" 0 "$(q_stat retries_total)"
    assertEquals "all done" 0 "$(q_stat processing)"
  fi
}

test_replicationcontroller_owner() {
  need_cluster || return
  ns=$(new_ns rc)
  kubectl create -f - >/dev/null <<EOF
{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"legacy","namespace":"$ns"},
 "spec":{"replicas":2,"selector":{"app":"legacy"},
  "template":{"metadata":{"labels":{"app":"legacy"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}
EOF
  rc=$(kubectl get rc -n "$ns" legacy -o json)
  uid=$(echo "$rc" | jq -r .metadata.uid)
  owner=$(echo "$rc" | jq -c '{apiVersion:"v1",kind:"ReplicationController",namespace:.metadata.namespace,
    name:.metadata.name,uid:.metadata.uid,resourceVersion:.metadata.resourceVersion}')
  old=$(echo "$rc" | jq -c '.status // {}')
  { echo "$rc" | jq -c --argjson o "$owner" --arg k "$ns/legacy" \
      '{op:"create",key:$k,owner:$o,count:2,template:.spec.template}'
    echo "$rc" | jq -c --argjson o "$owner" --arg k "$ns/legacy" --argjson old "$old" \
      '{op:"status",key:$k,owner:$o,old_status:$old,
        object:(del(.metadata.managedFields) | .status = {replicas:2,observedGeneration:1})}'
    jq -nc --argjson o "$owner" --arg k "$ns/legacy" '{op:"end",key:$k,owner:$o}'; } | apply 2>"$TMP/log"
  pods=$(kubectl get pods -n "$ns" -o json)
  assertEquals "pods owned by the RC" 2 "$(echo "$pods" | jq --arg u "$uid" '[.items[]
    | select(.metadata.generateName == "legacy-") | .metadata.ownerReferences[]
    | select(.kind == "ReplicationController" and .apiVersion == "v1" and .uid == $u)] | length')"
  assertEquals "events from replication-controller" 2 "$(events_json "$ns" | jq '[.items[]
    | select(.reason == "SuccessfulCreate" and .source.component == "replication-controller"
      and .involvedObject.kind == "ReplicationController")] | length')"
  assertEquals "RC status" 2 "$(kubectl get rc -n "$ns" legacy -o jsonpath='{.status.replicas}')"
}

test_sigterm_finishes_keys_in_flight() {
  need_cluster || return
  ns=$(new_ns sigterm)
  mk_rs "$ns" a
  mk_rs "$ns" b
  q_hold "$ns/a"
  q_hold "$ns/b"
  mkfifo "$TMP/fifo"
  # shellcheck disable=SC2046
  rs-apply $(apply_flags) -v 2 <"$TMP/fifo" 2>"$TMP/log" &
  pid=$!
  exec 3>"$TMP/fifo"
  { create_intent "$ns" a 3; intent end "$ns" a; create_intent "$ns" b 1; } >&3
  # b's end never comes: rs-sync is still writing when TERM arrives
  wait_for 20 grep -q "$ns/b: creating a batch" "$TMP/log"
  kill -TERM "$pid"
  wait "$pid"
  st=$?
  exec 3>&-
  rm -f "$TMP/fifo"
  assertEquals "exit status" 0 "$st"
  assertEquals "pods of both keys" 4 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  if [ -n "$QSOCK" ]; then
    assertEquals "both keys done" 0 "$(q_stat processing)"
    assertEquals "b (cut short) retried, a forgotten" 1 "$(q_stat retries_total)"
  fi
}

# The writes go on rs-apply's own HTTP/2 connections (libnghttp2 over
# OpenSSL, --http-client direct, the default), with the kubeconfig's client
# certificate and with a ServiceAccount's bearer token; --http-client curl
# and a proxy in the environment leave them to libcurl.
test_writes_on_direct_http2() {
  need_cluster || return
  ns=$(new_ns direct)
  mk_rs "$ns" web
  { create_intent "$ns" web 3; intent end "$ns" web; } | apply -v 4 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  assertEquals "pods created" 3 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  grep -q 'API requests to https://.* on direct HTTP/2 (libnghttp2' "$TMP/log" ||
    fail "the client certificate's writes not direct: $(head -5 "$TMP/log")"
  grep -q 'HTTP/2 connection to https://.* up' "$TMP/log" || fail "no direct connection up"
  assertEquals "three creates answered 201" 3 "$(grep -c "POST /api/v1/namespaces/$ns/pods?fieldManager=rs-apply: 201" "$TMP/log")"

  # a bearer token: a ServiceAccount that may write pods, Events and status
  role_sa "$ns" writer get,create,update,patch,delete \
      pods,events,replicasets,replicasets/status &&
    sa_kubeconfig "$TMP/sa.kc" "$ns" writer || fail "no ServiceAccount kubeconfig"
  old=$(jq -c '.status // {}' "$TMP/$ns.web.json")
  st='{"replicas":3,"fullyLabeledReplicas":3,"observedGeneration":1}'
  { status_intent "$ns" web "$st" "$old"; intent end "$ns" web; } |
    apply -v 4 --kubeconfig "$TMP/sa.kc" 2>"$TMP/log.sa"
  assertEquals "exit status (token)" 0 $?
  assertEquals "status written (token)" 3 "$(kubectl get rs -n "$ns" web -o jsonpath='{.status.replicas}')"
  grep -q 'on direct HTTP/2 (libnghttp2' "$TMP/log.sa" || fail "the token's writes not direct"
  grep -q "PUT /apis/apps/v1/namespaces/$ns/replicasets/web/status: 200" "$TMP/log.sa" ||
    fail "status not written: $(cat "$TMP/log.sa")"

  # libcurl: asked for, or a proxy set (which libcurl alone honours; here
  # no_proxy names the server, so it goes straight there all the same)
  { create_intent "$ns" web 1; intent end "$ns" web; } | apply -v 4 --http-client curl 2>"$TMP/log.curl"
  assertEquals "exit status (curl)" 0 $?
  { create_intent "$ns" web 1; intent end "$ns" web; } |
    HTTPS_PROXY=http://127.0.0.1:1 NO_PROXY=127.0.0.1 no_proxy=127.0.0.1 apply -v 4 2>"$TMP/log.proxy"
  assertEquals "exit status (proxy)" 0 $?
  assertEquals "pods created on libcurl" 5 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  grep -q 'HTTP/2' "$TMP/log.curl" && fail "--http-client curl went direct: $(grep HTTP/2 "$TMP/log.curl")"
  grep -q 'on libcurl, not direct HTTP/2: a proxy is set in the environment' "$TMP/log.proxy" ||
    fail "a proxy set, and no word of libcurl: $(head -5 "$TMP/log.proxy")"
  grep -q 'HTTP/2 connection' "$TMP/log.proxy" && fail "a proxy set, and writes went direct"
  assertEquals "one create each on libcurl" 2 "$(cat "$TMP/log.curl" "$TMP/log.proxy" |
    grep -c "POST /api/v1/namespaces/$ns/pods?fieldManager=rs-apply: 201")"
}

# kube-apiserver's --goaway-chance: each HTTP/2 answer (watches aside) may
# carry a GOAWAY, after which the server takes no new stream on that
# connection and closes it once its streams ended. rs-apply's direct client
# must move to new connections: streams the server never took (past its
# GOAWAY's last stream) go again on another, those it took end there, and
# nothing is written twice or lost. 0.02 is the flag's upper bound;
# 3 x 150 creates and their deletes are some 1,000 writes (Events too), so
# a run with no GOAWAY at all has odds of 0.98^1000, about 2e-9. The
# writes leave on the rate limiter's clock (300 a second, a burst of 1),
# not as answers come, so that some go out while a GOAWAY is on its way:
# streams the server never took, which must go again on another
# connection (a client that kept writing on a connection past its GOAWAY
# loses them: 62 and 53 pods made of two keys' 150, 4 keys failed).
test_direct_goaway_replaces_connections() {
  need_cluster || return
  cluster_of_our_own "$TMP/goaway" RS_TEST_APISERVER_FLAGS=--goaway-chance=0.02 || return
  local -x KUBECONFIG=$TMP/goaway/kubeconfig
  ns=$(new_ns goaway)
  for rs in a b c; do mk_rs "$ns" $rs; q_hold "$ns/$rs"; done
  for rs in a b c; do create_intent "$ns" $rs 150; intent end "$ns" $rs; done |
    apply -v 4 --kubeconfig "$KUBECONFIG" --kube-api-qps 300 --kube-api-burst 1 2>"$TMP/log"
  assertEquals "exit status (creates)" 0 $?
  for rs in a b c; do
    assertEquals "pods of $rs, none twice, none missing" 150 \
      "$(kubectl get pods -n "$ns" -l app=$rs -o name | wc -l)"
  done
  for rs in a b c; do q_hold "$ns/$rs"; done
  for rs in a b c; do
    intent delete "$ns" $rs "$(kubectl get pods -n "$ns" -l app=$rs -o json |
      jq -c '{pods: [.items[].metadata | {name, uid}]}')"
    intent end "$ns" $rs
  done | apply -v 4 --kubeconfig "$KUBECONFIG" --kube-api-qps 300 --kube-api-burst 1 2>>"$TMP/log"
  assertEquals "exit status (deletes)" 0 $?
  assertEquals "pods left" 0 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  [ -n "$QSOCK" ] && assertEquals "no key failed" 0 "$(q_stat retries_total)"
  grep -q 'API requests to https://.* on direct HTTP/2' "$TMP/log" ||
    fail "not on the direct client: $(head -3 "$TMP/log")"
  grep -q 'on libcurl' "$TMP/log" && fail "fell back to libcurl: $(grep 'on libcurl' "$TMP/log")"
  goaways=$(grep -c 'HTTP/2 connection to .*: GOAWAY' "$TMP/log")
  ups=$(grep -c 'HTTP/2 connection to .* up$' "$TMP/log")
  echo "figure: $SUITE: --goaway-chance 0.02: $goaways GOAWAYs, $ups connections up," \
    "$(grep -c 'stream refused by the server, sent again' "$TMP/log") streams sent again"
  [ "$goaways" -ge 1 ] || fail "no GOAWAY seen"
  # each of the two runs dials one; a GOAWAY makes it dial another
  [ "$ups" -ge 3 ] || fail "$goaways GOAWAYs, and only $ups connections up"
  "$top/tests/env/cluster" down "$TMP/goaway" >/dev/null 2>&1
}

# A token file rotated under a running rs-apply: the old token is refused
# (bound to a Secret, deleted), and rs-apply has not read the file again yet
# (client-go's period, a minute). The 401 on the direct HTTP/2 client makes
# it read the file and send the write once more, with the new token; the
# key ends done, each pod made once.
test_direct_401_resends_with_the_rotated_token() {
  need_cluster || return
  ns=$(new_ns rotate)
  mk_rs "$ns" web
  role_sa "$ns" writer get,list,create,delete pods,events &&
    kubectl -n "$ns" create secret generic old >/dev/null &&
    kubectl -n "$ns" create secret generic new >/dev/null || fail "no ServiceAccount"
  kubectl -n "$ns" create token writer --bound-object-kind Secret \
    --bound-object-name old >"$TMP/token" || fail "no token"
  old=$(cat "$TMP/token")
  server=$(cluster_server)
  kubeconfig_write "$TMP/rot.kc" "$server" \
    "    certificate-authority: $RS_TEST_CLUSTER/ca.crt" "    tokenFile: $TMP/token"
  q_hold "$ns/web"
  mkfifo "$TMP/fifo"
  # shellcheck disable=SC2046
  rs-apply $(apply_flags) -v 8 --kubeconfig "$TMP/rot.kc" <"$TMP/fifo" 2>"$TMP/log" &
  pid=$!
  exec 3>"$TMP/fifo"
  wait_for 20 grep -q 'on direct HTTP/2' "$TMP/log" || fail "no direct client: $(head -3 "$TMP/log")"
  # the rotation: a new token in the file, the old one's Secret deleted
  kubectl -n "$ns" create token writer --bound-object-kind Secret \
    --bound-object-name new >"$TMP/token.new" && mv "$TMP/token.new" "$TMP/token" &&
    kubectl -n "$ns" delete secret old >/dev/null || fail "no rotation"
  # kube-apiserver keeps a token it took for 10 s (its authentication cache)
  refused() {
    [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$RS_TEST_CLUSTER/ca.crt" \
      -H "Authorization: Bearer $old" "$server/api/v1/namespaces/$ns/pods")" = 401 ]
  }
  wait_for 30 refused || fail "the old token still taken"
  { create_intent "$ns" web 3; intent end "$ns" web; } >&3
  exec 3>&-
  wait "$pid"
  assertEquals "exit status" 0 $?
  rm -f "$TMP/fifo"
  assertEquals "pods, each once" 3 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  [ -n "$QSOCK" ] && assertEquals "no key failed" 0 "$(q_stat retries_total)"
  n401=$(grep -c "POST https://.*/api/v1/namespaces/$ns/pods?fieldManager=rs-apply 401 in" "$TMP/log")
  n201=$(grep -c "POST https://.*/api/v1/namespaces/$ns/pods?fieldManager=rs-apply 201 in" "$TMP/log")
  [ "$n401" -ge 1 ] || fail "no create refused with the old token: $(grep POST "$TMP/log" | head -5)"
  assertEquals "creates that succeeded, on the new token" 3 "$n201"
  grep -q "token file $TMP/token re-read: new token" "$TMP/log" || fail "the file not read again"
  grep -q 'HTTP/2 connection to .* up' "$TMP/log" || fail "no direct connection"
  grep -q 'on libcurl' "$TMP/log" && fail "fell back to libcurl: $(grep 'on libcurl' "$TMP/log")"
  grep -q -- "$old" "$TMP/log" && fail "a token in the log"
  return 0
}

# exec_kubeconfig FILE PLUGIN [LINE]: a kubeconfig for the test cluster
# whose credentials come from the exec plugin PLUGIN; LINE, indented six
# spaces, is one more line of its exec block (its env).
exec_kubeconfig() {
  kubeconfig_write "$1" \
    "$(cluster_server)" \
    "    certificate-authority: $RS_TEST_CLUSTER/ca.crt" "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $2
      interactiveMode: Never${3:+
$3}"
}

# An exec plugin whose first token the server refuses (expired): the 401s
# on the direct client run the plugin once more, and the writes go again
# with its new token; three creates refused at once still run it only
# twice in all.
test_direct_401_runs_the_exec_plugin_again() {
  need_cluster || return
  ns=$(new_ns exec401)
  mk_rs "$ns" web
  role_sa "$ns" writer get,list,create,delete pods,events &&
    kubectl -n "$ns" create token writer >"$TMP/good" || fail "no ServiceAccount token"
  cat >"$TMP/plugin.sh" <<'PLUGIN'
#!/bin/sh
n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n + 1)); echo $n >"$COUNT"
if [ $n -eq 1 ]; then t=expired-token; else t=$(cat "$GOOD"); fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "$t"
PLUGIN
  chmod +x "$TMP/plugin.sh"
  exec_kubeconfig "$TMP/exec401.kc" "$TMP/plugin.sh" \
    "      env: [{name: COUNT, value: $TMP/count}, {name: GOOD, value: $TMP/good}]"
  q_hold "$ns/web"
  # a batch of 1 and one of 2: the first 401 before the others start
  { create_intent "$ns" web 3; intent end "$ns" web; } |
    apply -v 8 --kubeconfig "$TMP/exec401.kc" 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  assertEquals "pods, each once" 3 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  [ -n "$QSOCK" ] && assertEquals "no key failed" 0 "$(q_stat retries_total)"
  assertEquals "plugin runs" 2 "$(cat "$TMP/count")"
  grep -q -- "$(cat "$TMP/good")" "$TMP/log" && fail "a token in the log"
  grep -q 'exec plugin credentials refused (401): running the plugin again' "$TMP/log" ||
    fail "no word of the plugin run again"
  assertEquals "creates refused with the expired token" 1 \
    "$(grep -c "POST https://.*/api/v1/namespaces/$ns/pods?fieldManager=rs-apply 401 in" "$TMP/log")"
  assertEquals "creates made with the new token" 3 \
    "$(grep -c "POST https://.*/api/v1/namespaces/$ns/pods?fieldManager=rs-apply 201 in" "$TMP/log")"
  grep -q 'HTTP/2 connection to .* up' "$TMP/log" || fail "no direct connection"
  grep -q 'on libcurl' "$TMP/log" && fail "fell back to libcurl: $(grep 'on libcurl' "$TMP/log")"
  return 0
}

# An exec plugin that hands out a client certificate: the direct client
# cannot present it (its TLS context is made once, from the kubeconfig), so
# the first request that gets it turns the direct client off for good, as
# -v 1 says, and every write goes on libcurl with the certificate, none
# sent twice for the switch.
test_exec_client_certificate_goes_on_libcurl() {
  need_cluster || return
  ns=$(new_ns execcert)
  mk_rs "$ns" web
  jq -n --rawfile c "$RS_TEST_CLUSTER/admin.crt" --rawfile k "$RS_TEST_CLUSTER/admin.key" \
    '{apiVersion:"client.authentication.k8s.io/v1",kind:"ExecCredential",
      status:{clientCertificateData:$c,clientKeyData:$k}}' >"$TMP/cred.json"
  chmod 0600 "$TMP/cred.json"
  printf '#!/bin/sh\ncat "%s"\n' "$TMP/cred.json" >"$TMP/cert-plugin.sh"
  chmod +x "$TMP/cert-plugin.sh"
  exec_kubeconfig "$TMP/exec.kc" "$TMP/cert-plugin.sh"
  server=$(cluster_server)
  q_hold "$ns/web"
  { create_intent "$ns" web 3; intent end "$ns" web; } |
    apply -v 4 --kubeconfig "$TMP/exec.kc" 2>"$TMP/log"
  assertEquals "exit status" 0 $?
  assertEquals "pods, each once" 3 "$(kubectl get pods -n "$ns" -o name | wc -l)"
  [ -n "$QSOCK" ] && assertEquals "no key failed" 0 "$(q_stat retries_total)"
  assertEquals "the switch to libcurl, said once" 1 "$(grep -c \
    "API requests to $server on libcurl from now on: the exec plugin gives a client certificate" "$TMP/log")"
  grep -q 'HTTP/2 connection\|HTTP/2: dialling' "$TMP/log" &&
    fail "a direct connection: $(grep 'HTTP/2 connection\|HTTP/2: dialling' "$TMP/log")"
  assertEquals "three creates answered 201" 3 \
    "$(grep -c "POST /api/v1/namespaces/$ns/pods?fieldManager=rs-apply: 201" "$TMP/log")"
}

test_usage() {
  rs-apply --help >"$TMP/help"
  assertEquals "--help exit" 0 $?
  grep -q -- "--dry-run" "$TMP/help" || fail "--help does not list --dry-run"
  rs-apply --concurrency 0 </dev/null 2>/dev/null
  assertEquals "bad flag exit" 100 $?
  rs-apply --no-such-flag </dev/null 2>/dev/null
  assertEquals "unknown flag exit" 100 $?
  rs-apply --batch 2s </dev/null 2>"$TMP/err"
  assertEquals "--batch past 1s" 100 $?
  grep -q 'batch must be at most 1s' "$TMP/err" || fail "--batch: $(cat "$TMP/err")"
  rs-apply --batch 5 </dev/null 2>/dev/null
  assertEquals "--batch without a unit" 100 $?
  rs-apply --http-client wget </dev/null 2>"$TMP/err"
  assertEquals "--http-client neither direct nor curl" 100 $?
  grep -q -- "--http-client" "$TMP/help" || fail "--help does not list --http-client"
}

. "$SHUNIT2"
