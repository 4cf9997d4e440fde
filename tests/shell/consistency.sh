# consistency.sh: the stale-cache guard (KEP-5647, feature gate
# StaleControllerConsistencyReplicaSet). rs-apply records the
# resourceVersion of each write it makes for an owner; rs-sync does not
# sync that owner while the streams it has read are behind those writes.
# A relay between rs-watch and rs-sync (tests/tools/hold-relay.sh) holds
# the stream back after the ReplicaSet's scale-up, so the pods rs-apply
# creates are not seen; a sync asked for meanwhile must be skipped, counted
# and retried with the gate on, and go ahead with it off. With the pods
# stream alone held and a faultproxy (tests/tools/faultproxy.c) before
# rs-apply, a create whose answer never comes must hold the next sync the
# same way: the pod it made is not created twice.
. "$(dirname "$0")/lib.sh"

EXP_TOOL=${EXP_TOOL:-$RS_BIN/../test/exp-tool}
[ -x "$EXP_TOOL" ] || EXP_TOOL=$top/build/test/exp-tool
GATE_OFF="--feature-gates StaleControllerConsistencyReplicaSet=false"
SKIPS=replicaset_controller_stale_sync_skips_total
FAULTPROXY=${FAULTPROXY:-$RS_BIN/../test/faultproxy}
[ -x "$FAULTPROXY" ] || FAULTPROXY=$top/build/test/faultproxy
# start_proxy, proxy
. "$top/tests/env/proxy.sh"

oneTimeSetUp() { need_cluster; }

tearDown() {
  stop_controller
  [ -f "$TMP/px/pids" ] || return 0
  for _p in $(cat "$TMP/px/pids"); do kill "$_p" 2>/dev/null; wait "$_p" 2>/dev/null; done
  rm -f "$TMP/px/pids"
}

# stale_skips: rs-sync's skips so far, all labels.
stale_skips() { stage_stat rs-sync "$SKIPS"; }

skips_above() { [ "$(stale_skips)" -gt "$1" ]; }

# synced_lines NS: how often rs-apply ended NS/web as synced.
synced_lines() { grep -c "$1/web: synced" "$TMP/apply.log"; }
# synced_above NS N: more than N of them, read again at each call.
synced_above() { [ "$(synced_lines "$1")" -gt "$2" ]; }

# held_scale_up NS: web scaled 0 -> 2 with the relay's mark; returns once
# the two pods exist and rs-apply has ended the key, the stream held back
# since the scale-up.
held_scale_up() {
  make_rs "$1" web 0
  wait_for 20 rs_status_is "$1" web '.observedGeneration == 1' ||
    { tail -n 5 "$TMP"/sync.log "$TMP"/apply.log "$TMP"/watch.log >&2; fail "the pipeline did not sync web"; }
  kubectl -n "$1" patch rs web --type=merge -p \
    "{\"metadata\":{\"annotations\":{\"rs-test/hold\":\"$1\"}},\"spec\":{\"replicas\":2}}" >/dev/null
  wait_count "$1" app=web 2 20 || fail "the two pods were not created"
  wait_for 20 test -e "$TMP/hold" || fail "the relay did not hold"
  # the stream held, nothing syncs web again once its scale-up has ended
  wait_for 30 syncs_settled "$1" || fail "rs-apply did not end the key"
}

# syncs_settled NS: rs-apply ended NS/web as synced at least twice (its
# first sync, its scale-up) and no more for 2 s.
syncs_settled() {
  _n=$(synced_lines "$1")
  sleep 2
  [ "$_n" -ge 2 ] && [ "$_n" -eq "$(synced_lines "$1")" ]
}

# relay NS: the relay for held_scale_up in NS (the mark names the namespace:
# the ReplicaSets of earlier tests, listed again, carry theirs)
relay() { echo "bash $top/tests/tools/hold-relay.sh rs-test/hold\\\":\\\"$1 $TMP/hold"; }

# relay_pods NS: the same, holding back only the pods stream
relay_pods() { echo "$(relay "$1") \\\"resource\\\":\\\"pods\\\""; }

test_stale_cache_skipped_then_synced() {
  ns=$(new_ns stale) || fail "namespace"
  RS_RELAY=$(relay "$ns") start_controller || fail "start"
  held_scale_up "$ns"
  assertTrue "the writes were recorded" \
    "'$EXP_TOOL' '$RS_STATE_DIR/expectations' written '$ns/web' | jq -e '.written.pods | length > 0'"
  synced=$(synced_lines "$ns")
  rs-queue --queue "$RS_QUEUE_SOCK" add "$ns/web" || fail "add"
  assertTrue "the sync was skipped and counted" "wait_for 20 skips_above 0"
  assertTrue "said why" "grep -q '$ns/web: not synced: read version .* is not as new as written version' '$TMP/sync.log'"
  assertTrue "retried through rs-queue" "[ \$(rs-queue --queue '$RS_QUEUE_SOCK' stats | jq .retries_total) -gt 0 ]"
  assertEquals "no sync went ahead while held" "$synced" "$(synced_lines "$ns")"
  rm -f "$TMP/hold"
  assertTrue "synced once the stream caught up" \
    "wait_for 30 rs_status_is '$ns' web '.replicas == 2 and .observedGeneration == 2'"
  assertTrue "a sync went ahead" "wait_for 10 synced_above $ns $synced"
  # the stats file is written at most once a second
  sleep 2; n=$(stale_skips); sleep 3
  assertEquals "no more skips once caught up" "$n" "$(stale_skips)"
  assertEquals "exactly two pods" 2 "$(count_live "$ns" app=web)"
  assertEquals "two creates in all" 2 "$(pod_adds "$ns")"
  assertTrue "the record is cleared once seen" \
    "wait_for 10 sh -c \"! '$EXP_TOOL' '$RS_STATE_DIR/expectations' written '$ns/web'\""
  labels=$(jq -c --arg n "$SKIPS" '[.families[] | select(.name == $n) | .samples[].labels] | .[0]' \
    "$RS_STATE_DIR/stats/rs-sync.json")
  assertTrue "upstream's labels: $labels" "echo '$labels' | jq -e 'keys == [\"group\",\"resource\"]'"
}

test_gate_off_syncs_at_once() {
  ns=$(new_ns nogate) || fail "namespace"
  RS_RELAY=$(relay "$ns") RS_SYNC_FLAGS=$GATE_OFF start_controller $GATE_OFF || fail "start"
  held_scale_up "$ns"
  assertFalse "nothing recorded with the gate off" \
    "'$EXP_TOOL' '$RS_STATE_DIR/expectations' written '$ns/web'"
  synced=$(synced_lines "$ns")
  rs-queue --queue "$RS_QUEUE_SOCK" add "$ns/web" || fail "add"
  assertTrue "synced at once, the stream still held" \
    "wait_for 20 synced_above $ns $synced"
  assertTrue "still held" "test -e '$TMP/hold'"
  assertEquals "no skip" 0 "$(stale_skips)"
  rm -f "$TMP/hold"
  assertTrue "converged" "wait_for 30 rs_status_is '$ns' web '.replicas == 2'"
  assertEquals "exactly two pods" 2 "$(count_live "$ns" app=web)"
}

# As upstream, whose pod deletes get no object back, a delete's version is
# not recorded: after a round of deletes the next sync waits for the status
# write's version, not for the stream to reach the deletions (the
# expectations hold back the next round until they are seen).
test_deletes_not_recorded() {
  ns=$(new_ns stale) || fail "namespace"
  RS_RELAY=$(relay "$ns") start_controller || fail "start"
  make_rs "$ns" web 2
  wait_for 30 rs_status_is "$ns" web '.replicas == 2 and .observedGeneration == 1' ||
    fail "the pipeline did not scale web up"
  assertTrue "the creates' record is cleared once seen" \
    "wait_for 20 sh -c \"! '$EXP_TOOL' '$RS_STATE_DIR/expectations' written '$ns/web'\""
  kubectl -n "$ns" patch rs web --type=merge -p \
    "{\"metadata\":{\"annotations\":{\"rs-test/hold\":\"$ns\"}},\"spec\":{\"replicas\":0}}" >/dev/null
  wait_count "$ns" app=web 0 20 || fail "the two pods were not deleted"
  wait_for 20 test -e "$TMP/hold" || fail "the relay did not hold"
  wait_for 30 syncs_settled "$ns" || fail "rs-apply did not end the key"
  "$EXP_TOOL" "$RS_STATE_DIR/expectations" written "$ns/web" >"$TMP/written"
  rc=$?
  assertEquals "the status write is recorded: $(cat "$TMP/written")" 0 "$rc"
  assertTrue "the deletes are not: $(cat "$TMP/written")" \
    "jq -e '.written.pods == null' '$TMP/written'"
  rm -f "$TMP/hold"
  assertTrue "converged" \
    "wait_for 30 rs_status_is '$ns' web '.replicas == 0 and .observedGeneration == 2'"
}

# proxied_web NS N: the pipeline with rs-apply behind a faultproxy ($px)
# and only the pods stream held after NS's mark; web made with N replicas
# and synced, its creates observed.
proxied_web() {
  px=$TMP/px
  mkdir -p "$px"
  start_proxy "$px" "$RS_TEST_CLUSTER" "$KUBECONFIG" || { echo "faultproxy did not start" >&2; return 1; }
  RS_RELAY=$(relay_pods "$1") start_controller --kubeconfig "$px/proxy.kubeconfig" || return 1
  make_rs "$1" web "$2"
  wait_for 30 rs_status_is "$1" web "(.replicas // 0) == $2 and .observedGeneration == 1" &&
    wait_for 20 "$EXP_TOOL" "$RS_STATE_DIR/expectations" satisfied "$1/web" >/dev/null ||
    { pipeline_logs; echo "the pipeline did not sync web" >&2; return 1; }
}

# ended_lines NS: how often rs-apply ended NS/web, synced or failed.
ended_lines() { grep -cE "$1/web: (synced|sync failed)" "$TMP/apply.log"; }
# ended_above NS N: more than N of them, read again at each call.
ended_above() { [ "$(ended_lines "$1")" -gt "$2" ]; }
# sync_ends: the syncs that wrote nothing, which rs-sync ended itself.
sync_ends() { stage_stat rs-sync rs_sync_ends_total; }
sync_ends_above() { [ "$(sync_ends)" -gt "$1" ]; }
# a_sync_ended NS APPLY-ENDS SYNC-ENDS: a sync of NS/web ended since, by
# rs-apply (it wrote something) or by rs-sync (it wrote nothing).
a_sync_ended() { ended_above "$1" "$2" || sync_ends_above "$3"; }

# unanswered_scale NS N: web scaled to N replicas, with the relay's mark,
# while the proxy lets rs-apply's requests through and holds the answers
# back; once the apiserver has N pods (the write was carried out) and the
# pods stream is held, the proxy resets the connections, so rs-apply
# never learns the outcome, and is up again. Sets ended: rs-apply's ends
# of NS/web before the reset (its round cannot end before).
unanswered_scale() {
  proxy mute "$px"
  wait_for 10 grep -q 'faultproxy: mute' "$px/proxy.log" || { echo "the proxy did not mute" >&2; return 1; }
  kubectl -n "$1" patch rs web --type=merge -p \
    "{\"metadata\":{\"annotations\":{\"rs-test/hold\":\"$1\"}},\"spec\":{\"replicas\":$2}}" >/dev/null
  wait_count "$1" app=web "$2" 20 || { pipeline_logs; echo "the write did not reach the apiserver" >&2; return 1; }
  wait_for 20 test -e "$TMP/hold" || { echo "the relay did not hold" >&2; return 1; }
  ended=$(ended_lines "$1")
  proxy cut "$px"
  proxy up "$px"
}

# released NS ADDS: the pods stream let go, web converges to one pod;
# ADDS pods were created in all.
released() {
  rm -f "$TMP/hold"
  assertTrue "converged" \
    "wait_for 30 rs_status_is '$1' web '.replicas == 1 and .observedGeneration == 2'"
  sleep 2
  assertEquals "exactly one pod" 1 "$(count_live "$1" app=web)"
  assertEquals "pods created in all" "$2" "$(pod_adds "$1")"
}

# after_failure NS: a sync of NS/web came after its failed create: a
# second pod (the defect), or a skip for the pods stream.
after_failure() {
  [ "$(count_live "$1" app=web)" -ge 2 ] ||
    grep -q "$1/web: not synced: read version .* for pods" "$TMP/sync.log"
}

# A create whose answer never comes made its pod. rs-apply lowers the
# expectation, as upstream does, and the key is retried at once; the pods
# stream is held, the ReplicaSets stream is not. The next sync must wait
# for the pods stream, not create a second pod.
test_create_of_unknown_outcome_not_repeated() {
  ns=$(new_ns unknown) || fail "namespace"
  proxied_web "$ns" 0 || { fail "start"; return; }
  unanswered_scale "$ns" 1 || { fail "the create was not left unanswered"; return; }
  assertTrue "the create failed for rs-apply" \
    "wait_for 20 grep -q '$ns/web: unable to create a pod' '$TMP/apply.log'"
  assertTrue "a sync came after the failure" "wait_for 30 after_failure $ns"
  assertEquals "no second pod while the first was not seen" 1 "$(count_live "$ns" app=web)"
  released "$ns" 1
}

# A delete whose answer never comes removed its pod. rs-apply must not
# observe that deletion itself, as it does for a delete that failed: the
# stream will bring it, and until then the next sync must not count the
# pod and delete another.
test_delete_of_unknown_outcome_left_to_the_stream() {
  ns=$(new_ns unknown) || fail "namespace"
  proxied_web "$ns" 2 || { fail "start"; return; }
  unanswered_scale "$ns" 1 || { fail "the delete was not left unanswered"; return; }
  assertTrue "rs-apply ended the round" "wait_for 20 ended_above $ns $ended"
  assertFalse "the deletion is still expected (left to the stream)" \
    "'$EXP_TOOL' '$RS_STATE_DIR/expectations' satisfied '$ns/web'"
  sleep 1; ended=$(ended_lines "$ns") ends=$(sync_ends)
  rs-queue --queue "$RS_QUEUE_SOCK" add "$ns/web" || fail "add"
  assertTrue "a sync meanwhile" "wait_for 20 a_sync_ended $ns $ended $ends"
  assertEquals "no second delete while the first was not seen" 1 "$(count_live "$ns" app=web)"
  released "$ns" 2
}

test_unknown_gate_is_a_usage_error() {
  rs-sync --feature-gates NoSuchGate=true </dev/null 2>"$TMP/err"
  assertEquals "exit 100" 100 $?
  assertTrue "says which" "grep -q 'unrecognized feature gate: NoSuchGate' '$TMP/err'"
  rs-apply --feature-gates StaleControllerConsistencyReplicaSet=maybe </dev/null 2>"$TMP/err"
  assertEquals "bad bool: exit 100" 100 $?
}

# rs-sync --once replays the guard: a recorded stream that stops short of
# a write recorded in the expectations file gives a retry, not a decision.
replay_events() {
  cat <<'EOF'
{"type":"ADDED","resource":"replicasets","object":{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web","namespace":"ns","uid":"uid-web","resourceVersion":"100","generation":1},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"x"}]}}},"status":{"replicas":0}}}
{"type":"SYNCED","resource":"replicasets","resourceVersion":"100"}
{"type":"SYNCED","resource":"pods","resourceVersion":"100"}
EOF
}

test_replay_shows_the_guard() {
  f=$RS_STATE_DIR/replay-exp
  rm -f "$f" "$f-lock"
  "$EXP_TOOL" "$f" wrote ns/web uid-web pods=150 >/dev/null || fail "wrote"
  replay_events | rs-sync --once ns/web --expectations "$f" >"$TMP/out" 2>"$TMP/err"
  assertEquals "exit 0" 0 $?
  assertTrue "an end asking for a retry: $(cat "$TMP/out")" \
    "jq -se 'length == 1 and .[0].op == \"end\" and .[0].retry == true' '$TMP/out'"
  # with the gate off, at once (on a file of its own: the decision raises
  # expectations)
  g=$RS_STATE_DIR/replay-exp-off
  rm -f "$g" "$g-lock"
  "$EXP_TOOL" "$g" wrote ns/web uid-web pods=150 >/dev/null || fail "wrote"
  replay_events | rs-sync --once ns/web --expectations "$g" $GATE_OFF >"$TMP/out" 2>"$TMP/err"
  assertTrue "gate off: a decision" \
    "jq -se 'map(select(.op == \"create\")) | length == 1' '$TMP/out'"
  # the stream reaches the write: the sync decides (two creates)
  { replay_events; echo '{"type":"BOOKMARK","resource":"pods","resourceVersion":"150"}'; } |
    rs-sync --once ns/web --expectations "$f" >"$TMP/out" 2>"$TMP/err"
  assertTrue "a decision: $(cat "$TMP/out")" \
    "jq -se 'map(select(.op == \"create\" and .count == 2)) | length == 1' '$TMP/out'"
  assertFalse "the record is cleared" "'$EXP_TOOL' '$f' written ns/web"
}

. "$SHUNIT2"
