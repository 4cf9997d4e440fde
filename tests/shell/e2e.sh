#!/bin/bash
# End-to-end: rs-queue serve plus rs-watch | rs-sync | rs-apply against the
# real test apiserver, no other controller running. Every test checks the
# final state with kubectl and counts pod ADDED events from a separate
# rs-watch, so that a pod created beyond what was needed fails the test.
# deb.sh runs these scenarios against the installed package: it sources
# this file with E2E_SCENARIOS_ONLY=1, lib.sh loaded and a controller of
# its own. e2e_sharded.sh runs them against 3 sharded instances
# (RS_TEST_INSTANCES, lib.sh).
[ -n "${E2E_SCENARIOS_ONLY:-}" ] || . "$(dirname "$0")/lib.sh"

oneTimeSetUp() {
  need_cluster || return
  start_controller --kube-api-qps 200 --kube-api-burst 400 ||
    { fail "the controller did not start"; pipeline_logs; }
}

oneTimeTearDown() {
  stop_controller
  if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$TMP" ]; then cp -r "$TMP" "$RS_KEEP_LOGS"; fi
  rm -rf "$RS_STATE_DIR"
}

owner_uid() { rs_json "$1" "$2" | jq -r .metadata.uid; }

test_create_three() {
  need_cluster || return
  ns=$(new_ns create)
  make_rs "$ns" web 3
  assertTrue "3 pods" "wait_count $ns app=web 3 30"
  assertTrue "status.replicas 3" "wait_for 20 rs_status_is $ns web '.replicas == 3'"
  uid=$(owner_uid "$ns" web)
  refs=$(kubectl -n "$ns" get pods -l app=web -o json | jq -c --arg uid "$uid" \
    '[.items[].metadata.ownerReferences[] | select(.uid==$uid and .kind=="ReplicaSet" and
      .apiVersion=="apps/v1" and .name=="web" and .controller==true and
      .blockOwnerDeletion==true)] | length')
  assertEquals "owner references" 3 "$refs"
  names=$(kubectl -n "$ns" get pods -l app=web -o json | jq -r '[.items[].metadata.generateName] | unique | .[]')
  assertEquals "generateName" "web-" "$names"
  assertTrue "SuccessfulCreate events" "wait_for 20 sh -c \"kubectl -n $ns get events -o json | jq -e '[.items[] | select(.reason==\\\"SuccessfulCreate\\\" and .involvedObject.name==\\\"web\\\" and .source.component==\\\"replicaset-controller\\\")] | map(.count) | add >= 3'\""
  sleep 2
  assertEquals "no extra creates" 3 "$(pod_adds "$ns")"
}

test_scale_up_down_and_replace() {
  need_cluster || return
  ns=$(new_ns scale)
  make_rs "$ns" web 3
  check_scale_cycle rs "$ns"
  assertTrue "SuccessfulDelete events" "kubectl -n $ns get events -o json | jq -e '[.items[] | select(.reason==\"SuccessfulDelete\")] | length > 0'"
}

test_scale_down_ranking() {
  need_cluster || return
  ns=$(new_ns rank)
  make_rs "$ns" web 6
  assertTrue "6 pods" "wait_count $ns app=web 6 30"
  pods=$(live_pods "$ns" app=web | sort)
  set -- $pods
  # p1 Pending (default); p2,p3 Running not ready; p4,p5,p6 Running ready,
  # p4 with a high deletion cost, p5 with a lower one.
  set_pod_status "$ns" "$2" Running False
  set_pod_status "$ns" "$3" Running False
  for p in "$4" "$5" "$6"; do set_pod_status "$ns" "$p" Running True; done
  kubectl -n "$ns" annotate pod "$4" controller.kubernetes.io/pod-deletion-cost=100 >/dev/null
  kubectl -n "$ns" annotate pod "$5" controller.kubernetes.io/pod-deletion-cost=50 >/dev/null
  kubectl -n "$ns" annotate pod "$6" controller.kubernetes.io/pod-deletion-cost=50 >/dev/null
  assertTrue "3 ready" "wait_for 20 rs_status_is $ns web '.readyReplicas == 3'"
  kubectl -n "$ns" scale rs web --replicas 4 >/dev/null
  assertTrue "4 pods" "wait_count $ns app=web 4 30"
  left=$(live_pods "$ns" app=web | sort | tr '\n' ' ')
  case " $left " in *" $1 "*) fail "the pending pod $1 survived: $left" ;; esac
  case " $left " in *" $4 "*) ;; *) fail "ready pod $4 was deleted: $left" ;; esac
  kubectl -n "$ns" scale rs web --replicas 2 >/dev/null
  assertTrue "2 pods" "wait_count $ns app=web 2 30"
  left=$(live_pods "$ns" app=web | sort | tr '\n' ' ')
  case " $left " in *" $4 "*) ;; *) fail "the costliest pod $4 was deleted: $left" ;; esac
  case " $left " in *" $2 "*|*" $3 "*) fail "a not-ready pod survived ready ones: $left" ;; esac
}

test_ready_and_available() {
  need_cluster || return
  ns=$(new_ns ready)
  make_rs "$ns" web 3 web '{"minReadySeconds": 5}'
  assertTrue "3 pods" "wait_count $ns app=web 3 30"
  status_watch "$ns" web
  for p in $(live_pods "$ns" app=web); do set_pod_status "$ns" "$p" Running True; done
  assertTrue "ready 3" "wait_for 20 rs_status_is $ns web '.readyReplicas == 3'"
  assertTrue "available 3 after minReadySeconds" "wait_for 20 rs_status_is $ns web '.availableReplicas == 3'"
  assertEquals "no status counted a pod available within 5 s of its Ready" "" \
    "$(available_too_soon "$ns" web rs 5)"
  p=$(live_pods "$ns" app=web | head -1)
  set_pod_status "$ns" "$p" Running False
  assertTrue "ready 2" "wait_for 20 rs_status_is $ns web '.readyReplicas == 2 and .availableReplicas == 2'"
}

test_adopt_and_release() {
  need_cluster || return
  ns=$(new_ns adopt)
  kubectl -n "$ns" run orphan --image=registry.k8s.io/pause:3.10 --labels app=web --restart=Never >/dev/null
  make_rs "$ns" web 2
  uid=$(owner_uid "$ns" web)
  assertTrue "orphan adopted" "wait_for 30 sh -c \"kubectl -n $ns get pod orphan -o json | jq -e '.metadata.ownerReferences[0].uid == \\\"$uid\\\"'\""
  assertTrue "2 pods" "wait_count $ns app=web 2 30"
  sleep 2
  assertEquals "one create besides the orphan" 2 "$(pod_adds "$ns")"
  kubectl -n "$ns" label pod orphan app=gone --overwrite >/dev/null
  assertTrue "released" "wait_for 30 sh -c \"kubectl -n $ns get pod orphan -o json | jq -e '(.metadata.ownerReferences // []) | length == 0'\""
  assertTrue "replacement made" "wait_count $ns app=web 2 30"
}

# A ReplicaSet being deleted adopts nothing. The controller is seen at work
# meanwhile: it makes the pod of a second ReplicaSet (created after the
# orphan, so its pod comes after the orphan in the controller's pod
# stream), then syncs web again (a new generation observed) with the
# orphan in its cache, and still leaves the orphan alone.
test_no_adoption_while_deleting() {
  need_cluster || return
  local gen
  ns=$(new_ns deleting)
  make_rs "$ns" web 0 web
  kubectl -n "$ns" patch rs web --type=merge -p '{"metadata":{"finalizers":["rs-controller.test/hold"]}}' >/dev/null
  kubectl -n "$ns" delete rs web --wait=false >/dev/null
  kubectl -n "$ns" run orphan --image=registry.k8s.io/pause:3.10 --labels app=web --restart=Never >/dev/null
  make_rs "$ns" probe 1
  assertTrue "the controller makes probe's pod after the orphan" "wait_count $ns app=probe 1 30"
  assertTrue "and counts it" "wait_for 20 rs_status_is $ns probe '.replicas == 1'"
  kubectl -n "$ns" patch rs web --type=merge -p '{"spec":{"minReadySeconds":1}}' >/dev/null
  gen=$(rs_json "$ns" web | jq .metadata.generation)
  assertTrue "web synced again while deleting (generation $gen observed)" \
    "wait_for 20 rs_status_is $ns web '.observedGeneration == $gen'"
  n=$(kubectl -n "$ns" get pod orphan -o json | jq '(.metadata.ownerReferences // []) | length')
  assertEquals "orphan left alone" 0 "$n"
  kubectl -n "$ns" patch rs web --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
}

test_other_controllers_pod_untouched() {
  need_cluster || return
  ns=$(new_ns other)
  kubectl -n "$ns" create -f - >/dev/null <<EOT
apiVersion: v1
kind: Pod
metadata:
  name: foreign
  labels: {app: web}
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: someone, uid: 3b1c1d5e-0000-4000-8000-000000000001, controller: true}
spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
EOT
  make_rs "$ns" web 2
  assertTrue "2 own pods" "wait_for 30 sh -c \"kubectl -n $ns get pods -o json | jq -e '[.items[] | select(.metadata.ownerReferences[0].kind==\\\"ReplicaSet\\\")] | length == 2'\""
  kubectl -n "$ns" scale rs web --replicas 0 >/dev/null
  assertTrue "its own pods gone, the foreign one left" "wait_count $ns app=web 1 30"
  assertTrue "status 0" "wait_for 20 rs_status_is $ns web '.replicas == 0'"
  assertTrue "foreign pod still there, still foreign" \
    "kubectl -n $ns get pod foreign -o json | jq -e '.metadata.ownerReferences[0].kind == \"ConfigMap\" and .metadata.deletionTimestamp == null'"
}

test_quota_failure_and_recovery() {
  need_cluster || return
  ns=$(new_ns quota)
  quota_pods "$ns" 2
  make_rs "$ns" web 4
  check_quota_failure rs "$ns"
  sleep 2
  assertEquals "no extra creates" 4 "$(pod_adds "$ns")"
}

test_burst_of_1200() {
  need_cluster || return
  ns=$(new_ns burst)
  make_rs "$ns" big 1200
  assertTrue "1200 pods" "wait_count $ns app=big 1200 240"
  assertTrue "status 1200" "wait_for 60 rs_status_is $ns big '.replicas == 1200'"
  sleep 2
  # the intents, where start_controller recorded them (not under s6)
  if recorded_intents >/dev/null; then
    max=$(recorded_intents | jq -s --arg ns "$ns" '[.[] | select(.op=="create" and .owner.namespace==$ns) | .count] | max')
    assertTrue "steps of at most 500 (largest $max)" "[ $max -le 500 ]"
  fi
  assertEquals "creates" 1200 "$(pod_adds "$ns")"
  assertTrue "never more than 1200 at once" "[ $(pod_peak "$ns") -le 1200 ]"
  kubectl -n "$ns" scale rs big --replicas 0 >/dev/null
  assertTrue "0 pods" "wait_count $ns app=big 0 240"
}

test_dry_run_writes_nothing() {
  need_cluster || return
  ns=$(new_ns dry)
  make_rs "$ns" web 2
  uid=$(owner_uid "$ns" web)
  rv=$(rs_json "$ns" web | jq -r .metadata.resourceVersion)
  out=$(jq -cn --arg ns "$ns" --arg uid "$uid" --arg rv "$rv" '
    {apiVersion:"apps/v1",kind:"ReplicaSet",namespace:$ns,name:"dry-target",uid:$uid,resourceVersion:$rv} as $o |
    ({op:"create",key:"\($ns)/dry-target",owner:$o,count:2,
      template:{metadata:{labels:{app:"dry"}},spec:{containers:[{name:"c",image:"x"}]}}},
     {op:"end",key:"\($ns)/dry-target",owner:$o})' | rs-apply --dry-run 2>"$TMP/dry.err")
  n=$(printf '%s\n' "$out" | jq -s --arg p "/api/v1/namespaces/$ns/pods" '[.[] | select(.method == "POST" and (.path | sub("[?].*"; "")) == $p)] | length')
  assertEquals "the two creates printed on stdout: $out" 2 "$n"
  # rs-apply has exited: nothing of it is still on its way
  assertEquals "no pod written" 0 "$(kubectl -n "$ns" get pods -l app=dry -o name | wc -l)"
}

[ -n "${E2E_SCENARIOS_ONLY:-}" ] || . "$SHUNIT2"
