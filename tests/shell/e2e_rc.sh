#!/bin/bash
# End-to-end for ReplicationControllers: the e2e.sh cases run through
# rs-watch replicationcontrollers pods | rs-sync --kind ReplicationController
# | rs-apply, with a full ReplicaSet controller running beside it in its own
# state directory all along, as kube-controller-manager runs both. Every test
# checks the final state with kubectl and counts pod ADDED events from a
# separate rs-watch, so that a pod created beyond what was needed fails.
# e2e_rc_sharded.sh runs them with 3 sharded instances of each controller
# (RS_TEST_INSTANCES, lib.sh), the ReplicaSet ones rs1..rs3 in the Lease
# group rs, the ReplicationController ones rc1..rc3 in the group rc.
. "$(dirname "$0")/lib.sh"

RC_DIR=$RS_STATE_DIR/rc
RS_DIR=$RS_STATE_DIR/rs
WATCH_PIDS=

# start_pipeline DIR QUEUE-NAME RESOURCE [RS-SYNC FLAGS...]: one whole
# controller with DIR as its RS_STATE_DIR: rs-queue serve --name QUEUE-NAME,
# and rs-watch RESOURCE pods | rs-sync | rs-apply joined by FIFOs in DIR, so
# that every stage has its own pid in RS_PIDS and dies by it alone. Intents
# are copied to DIR/intents.ndjson, logs to DIR/*.log.
start_pipeline() {
	_d=$1 _name=$2 _res=$3
	shift 3
	mkdir -p "$_d" && chmod 0700 "$_d" || return 1
	rm -f "$_d/events" "$_d/out" "$_d/in"
	mkfifo "$_d/events" "$_d/out" "$_d/in" || return 1
	env RS_STATE_DIR="$_d" rs-queue serve --name "$_name" 2>"$_d/queue.log" &
	RS_PIDS="$RS_PIDS $!"
	wait_for 10 test -S "$_d/queue.sock" || { echo "rs-queue $_name did not start" >&2; return 1; }
	env RS_STATE_DIR="$_d" rs-watch --batch 20ms "$_res" pods >"$_d/events" 2>"$_d/watch.log" &
	RS_PIDS="$RS_PIDS $!"
	WATCH_PIDS="$WATCH_PIDS $!"
	env RS_STATE_DIR="$_d" rs-sync -v 2 "$@" <"$_d/events" >"$_d/out" 2>"$_d/sync.log" &
	RS_PIDS="$RS_PIDS $!"
	tee "$_d/intents.ndjson" <"$_d/out" >"$_d/in" &
	RS_PIDS="$RS_PIDS $!"
	env RS_STATE_DIR="$_d" rs-apply -v 2 --kube-api-qps 200 --kube-api-burst 400 \
	    <"$_d/in" 2>"$_d/apply.log" &
	RS_PIDS="$RS_PIDS $!"
}

oneTimeSetUp() {
	need_cluster || return
	rs_bg rs-watch pods >"$TMP/pods.ndjson" 2>"$TMP/podwatch.log"
	if sharded; then
		INSTANCE_APPLY_FLAGS="-v 2 --kube-api-qps 200 --kube-api-burst 400"
		SHARD_GROUP=rs RS_QUEUE_NAME=replicaset \
		    start_instances "$RS_TEST_INSTANCES" rs &&
		SHARD_GROUP=rc RS_QUEUE_NAME=replicationmanager RS_KIND=ReplicationController \
		    start_instances "$RS_TEST_INSTANCES" rc ||
		    { fail "the instances did not start"; pipeline_logs; }
		return
	fi
	start_pipeline "$RS_DIR" replicaset replicasets || return 1
	start_pipeline "$RC_DIR" replicationmanager replicationcontrollers \
	    --kind ReplicationController || return 1
}

# stop_pipelines: the watches first, so that each pipeline ends on end of
# file rather than on a vanished queue; then everything else.
stop_pipelines() {
	stop_instances
	for p in $WATCH_PIDS; do kill "$p" 2>/dev/null; done
	sleep 0.5
	rs_cleanup
	WATCH_PIDS=
}

oneTimeTearDown() {
	stop_pipelines
	if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$RS_STATE_DIR" ]; then
		mkdir -p "$RS_KEEP_LOGS"
		cp -r "$TMP" "$RC_DIR" "$RS_DIR" "$RS_KEEP_LOGS" 2>/dev/null
	fi
	rm -rf "$RS_STATE_DIR"
}

# intents rs|rc: the intents of the ReplicaSet or the ReplicationController
# controller, of its pipeline or of all its instances.
intents() {
	if sharded; then instance_intents "$1"
	elif [ "$1" = rs ]; then cat "$RS_DIR/intents.ndjson"
	else cat "$RC_DIR/intents.ndjson"; fi
}

# queue_dirs rs|rc: the state directories of the controller's rs-queue, or
# of each of its instances' rs-queue.
queue_dirs() {
	if sharded; then printf "$TMP/$1%s/state\n" $(seq 1 "$RS_TEST_INSTANCES")
	elif [ "$1" = rs ]; then echo "$RS_DIR"
	else echo "$RC_DIR"; fi
}

# make_rc NS NAME REPLICAS [LABEL] [EXTRA-SPEC-JSON]: a ReplicationController
# whose selector and pods are app=LABEL (default NAME).
make_rc() {
	_extra=${5:-'{}'}
	jq -n --arg name "$2" --argjson n "$3" --arg app "${4:-$2}" --argjson extra "$_extra" '{
	  apiVersion: "v1", kind: "ReplicationController", metadata: {name: $name},
	  spec: ({replicas: $n, selector: {app: $app},
	    template: {metadata: {labels: {app: $app}},
	      spec: {containers: [{name: "c", image: "registry.k8s.io/pause:3.10"}]}}} + $extra)
	}' | kubectl -n "$1" apply -f - >/dev/null
}

uid_of() { rs_json "$1" "$2" "${3:-rc}" | jq -r .metadata.uid; }

# owned NS KIND UID: sorted names of the live pods whose controllerRef is
# the KIND with UID.
owned() {
	kubectl -n "$1" get pods -o json | jq -r --arg k "$2" --arg uid "$3" '
	  .items[] | select(.metadata.deletionTimestamp == null) |
	  select([.metadata.ownerReferences[]? | select(.controller == true and
	    .kind == $k and .uid == $uid)] | length == 1) | .metadata.name' | sort
}
owned_is() { [ "$(owned "$1" "$2" "$3" | wc -l)" -eq "$4" ]; }

# events_with NS REASON MIN: at least MIN events REASON (counting repeats)
# about a ReplicationController, from the source replication-controller.
events_with() {
	kubectl -n "$1" get events -o json | jq -e --arg r "$2" --argjson min "$3" '
	  [.items[] | select(.reason == $r and .source.component == "replication-controller"
	    and .involvedObject.kind == "ReplicationController"
	    and .involvedObject.apiVersion == "v1") | .count] | add // 0 | . >= $min' >/dev/null
}

# event_count NS REASON COMPONENT KIND: events REASON (counting repeats)
# from COMPONENT about a KIND.
event_count() {
	kubectl -n "$1" get events -o json | jq --arg r "$2" --arg c "$3" --arg k "$4" '
	  [.items[] | select(.reason == $r and .source.component == $c and
	    .involvedObject.kind == $k) | .count] | add // 0'
}

# intents_touching rs|rc NS NAMES...: intents of that controller for a key
# of NS that name one of the pods NAMES (adopt, release or delete).
intents_touching() {
	_k=$1 _ns=$2
	shift 2
	_names=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
	intents "$_k" | jq -c --arg ns "$_ns" --argjson names "$_names" '
	  select(.key | startswith($ns + "/")) |
	  select([.pod.name?, .pods[]?.name] | any(.[]; . as $n | $names | index($n) != null))'
}

test_create_three() {
	need_cluster || return
	ns=$(new_ns rc-create)
	make_rc "$ns" web 3
	assertTrue "3 pods" "wait_count $ns app=web 3 30"
	assertTrue "status.replicas 3" "wait_for 20 rc_status_is $ns web '.replicas == 3 and .fullyLabeledReplicas == 3'"
	uid=$(uid_of "$ns" web)
	refs=$(kubectl -n "$ns" get pods -l app=web -o json | jq -c --arg uid "$uid" \
	    '[.items[].metadata.ownerReferences[] | select(.uid==$uid and .kind=="ReplicationController" and
	      .apiVersion=="v1" and .name=="web" and .controller==true and
	      .blockOwnerDeletion==true)] | length')
	assertEquals "owner references" 3 "$refs"
	names=$(kubectl -n "$ns" get pods -l app=web -o json | jq -r '[.items[].metadata.generateName] | unique | .[]')
	assertEquals "generateName" "web-" "$names"
	assertTrue "SuccessfulCreate events from replication-controller" \
	    "wait_for 20 events_with $ns SuccessfulCreate 3"
	assertTrue "observedGeneration" "rc_status_is $ns web '.observedGeneration == 1'"
	sleep 2
	assertEquals "no extra creates" 3 "$(pod_adds "$ns")"
	n=$(intents rs | jq -c --arg ns "$ns" 'select(.key | startswith($ns + "/"))' | wc -l)
	assertEquals "the ReplicaSet controller wrote nothing for an RC" 0 "$n"
}

test_selector_defaulted() {
	need_cluster || return
	ns=$(new_ns rc-defsel)
	# no spec.selector: the API server sets it to the template's labels
	jq -n '{apiVersion: "v1", kind: "ReplicationController", metadata: {name: "web"},
	  spec: {replicas: 2, template: {metadata: {labels: {app: "web", tier: "x"}},
	    spec: {containers: [{name: "c", image: "registry.k8s.io/pause:3.10"}]}}}}' |
	    kubectl -n "$ns" apply -f - >/dev/null
	sel=$(rs_json "$ns" web rc | jq -c '.spec.selector')
	assertEquals "defaulted selector" '{"app":"web","tier":"x"}' "$sel"
	assertTrue "2 pods" "wait_count $ns app=web,tier=x 2 30"
	# an orphan matching only part of the map is not the RC's
	kubectl -n "$ns" run half --image=registry.k8s.io/pause:3.10 --labels app=web --restart=Never >/dev/null
	sleep 3
	n=$(kubectl -n "$ns" get pod half -o json | jq '(.metadata.ownerReferences // []) | length')
	assertEquals "partial match not adopted" 0 "$n"
	assertEquals "creates" 3 "$(pod_adds "$ns")"
}

test_scale_up_down_and_replace() {
	need_cluster || return
	ns=$(new_ns rc-scale)
	make_rc "$ns" web 3
	check_scale_cycle rc "$ns"
	assertTrue "SuccessfulDelete events" "wait_for 10 events_with $ns SuccessfulDelete 10"
	n=$(intents rc | jq -c --arg ns "$ns" 'select((.key | startswith($ns + "/")) and .op == "status" and
	  (.object.status | has("terminatingReplicas")))' | wc -l)
	assertEquals "no terminatingReplicas in RC status" 0 "$n"
	n=$(intents rc | jq -c --arg ns "$ns" 'select((.key | startswith($ns + "/")) and .op == "status")' |
	    wc -l)
	assertTrue "status intents were written ($n)" "[ $n -gt 0 ]"
}

test_ready_and_available() {
	need_cluster || return
	ns=$(new_ns rc-ready)
	make_rc "$ns" web 3 web '{"minReadySeconds": 5}'
	assertTrue "3 pods" "wait_count $ns app=web 3 30"
	status_watch "$ns" web rc
	for p in $(live_pods "$ns" app=web); do set_pod_status "$ns" "$p" Running True; done
	assertTrue "ready 3" "wait_for 20 rc_status_is $ns web '.readyReplicas == 3'"
	assertTrue "available 3 after minReadySeconds" "wait_for 20 rc_status_is $ns web '.availableReplicas == 3'"
	assertEquals "no status counted a pod available within 5 s of its Ready" "" \
	    "$(available_too_soon "$ns" web rc 5)"
	p=$(live_pods "$ns" app=web | head -1)
	set_pod_status "$ns" "$p" Running False
	assertTrue "ready 2" "wait_for 20 rc_status_is $ns web '.readyReplicas == 2 and .availableReplicas == 2'"
}

test_adopt_and_release() {
	need_cluster || return
	ns=$(new_ns rc-adopt)
	kubectl -n "$ns" run orphan --image=registry.k8s.io/pause:3.10 --labels app=web --restart=Never >/dev/null
	make_rc "$ns" web 2
	uid=$(uid_of "$ns" web)
	assertTrue "orphan adopted" "wait_for 30 sh -c \"kubectl -n $ns get pod orphan -o json | jq -e '.metadata.ownerReferences[0] | .uid == \\\"$uid\\\" and .kind == \\\"ReplicationController\\\" and .apiVersion == \\\"v1\\\" and .controller'\""
	assertTrue "2 pods" "wait_count $ns app=web 2 30"
	sleep 2
	assertEquals "one create besides the orphan" 2 "$(pod_adds "$ns")"
	kubectl -n "$ns" label pod orphan app=gone --overwrite >/dev/null
	assertTrue "released" "wait_for 30 sh -c \"kubectl -n $ns get pod orphan -o json | jq -e '(.metadata.ownerReferences // []) | length == 0'\""
	assertTrue "replacement made" "wait_count $ns app=web 2 30"
	sleep 2
	assertEquals "one replacement" 3 "$(pod_adds "$ns")"
}

test_quota_failure_and_recovery() {
	need_cluster || return
	ns=$(new_ns rc-quota)
	quota_pods "$ns" 2
	make_rc "$ns" web 4
	check_quota_failure rc "$ns"
	sleep 2
	assertEquals "no extra creates" 4 "$(pod_adds "$ns")"
}

# An RS and an RC of the same name in one namespace whose selectors both
# match all the pods: controllerRef (kind and UID) keeps each to its own,
# through scaling and an orphan that both try to adopt. The same name gives
# both the same key, namespace/web: only the separate state directories keep
# their queues and expectations apart.
test_rs_and_rc_side_by_side() {
	need_cluster || return
	ns=$(new_ns rc-both)
	make_rs "$ns" web 2 web
	make_rc "$ns" web 3 web
	rsuid=$(uid_of "$ns" web rs)
	rcuid=$(uid_of "$ns" web rc)
	assertTrue "RS owns 2" "wait_for 30 owned_is $ns ReplicaSet $rsuid 2"
	assertTrue "RC owns 3" "wait_for 30 owned_is $ns ReplicationController $rcuid 3"
	assertTrue "5 pods" "wait_count $ns app=web 5 30"
	sleep 3
	assertEquals "RS still owns 2" 2 "$(owned "$ns" ReplicaSet "$rsuid" | wc -l)"
	assertEquals "RC still owns 3" 3 "$(owned "$ns" ReplicationController "$rcuid" | wc -l)"
	assertEquals "creates: 2 + 3" 5 "$(pod_adds "$ns")"
	assertTrue "RS status 2" "wait_for 20 rs_status_is $ns web '.replicas == 2'"
	assertTrue "RC status 3" "wait_for 20 rc_status_is $ns web '.replicas == 3'"
	rspods=$(owned "$ns" ReplicaSet "$rsuid")
	rcpods=$(owned "$ns" ReplicationController "$rcuid")

	kubectl -n "$ns" scale rc web --replicas 1 >/dev/null
	assertTrue "RC owns 1" "wait_for 30 owned_is $ns ReplicationController $rcuid 1"
	assertTrue "3 pods in all" "wait_count $ns app=web 3 30"
	assertEquals "RS pods untouched by the RC's scale-down" "$rspods" \
	    "$(owned "$ns" ReplicaSet "$rsuid")"
	rcpods=$(owned "$ns" ReplicationController "$rcuid")

	kubectl -n "$ns" scale rs web --replicas 4 >/dev/null
	assertTrue "RS owns 4" "wait_for 30 owned_is $ns ReplicaSet $rsuid 4"
	kubectl -n "$ns" scale rs web --replicas 1 >/dev/null
	assertTrue "RS owns 1" "wait_for 30 owned_is $ns ReplicaSet $rsuid 1"
	assertTrue "2 pods in all" "wait_count $ns app=web 2 30"
	assertEquals "RC pod untouched by the RS's scaling" "$rcpods" \
	    "$(owned "$ns" ReplicationController "$rcuid")"

	# an orphan both select: both try to adopt, the API server lets one
	# controllerRef in, the other controller leaves it be
	kubectl -n "$ns" run orphan --image=registry.k8s.io/pause:3.10 --labels app=web --restart=Never >/dev/null
	assertTrue "orphan adopted" "wait_for 30 sh -c \"kubectl -n $ns get pod orphan -o json | jq -e '[.metadata.ownerReferences[]? | select(.controller)] | length == 1'\""
	assertTrue "back to 1 + 1" "wait_count $ns app=web 2 30"
	sleep 3
	assertTrue "RS owns 1" "owned_is $ns ReplicaSet $rsuid 1"
	assertTrue "RC owns 1" "owned_is $ns ReplicationController $rcuid 1"
	bad=$(kubectl -n "$ns" get pods -o json | jq '[.items[] |
	  select([.metadata.ownerReferences[]? | select(.controller)] | length > 1)] | length')
	assertEquals "no pod with two controllers" 0 "$bad"
	assertEquals "creates: 2 + 3 + 2 scale-up + orphan" 8 "$(pod_adds "$ns")"

	# each pipeline's intents: only its own kind, never the other's pods
	allrc=$(jq -r --arg ns "$ns" 'select(.object.metadata.namespace == $ns) |
	  .object.metadata | select(any(.ownerReferences[]?; .kind == "ReplicationController")) |
	  .name' "$TMP/pods.ndjson" | sort -u | grep -v '^orphan$')
	allrs=$(jq -r --arg ns "$ns" 'select(.object.metadata.namespace == $ns) |
	  .object.metadata | select(any(.ownerReferences[]?; .kind == "ReplicaSet")) |
	  .name' "$TMP/pods.ndjson" | sort -u | grep -v '^orphan$')
	assertTrue "RC pods were seen" "[ -n '$allrc' ]"
	assertTrue "RS pods were seen" "[ -n '$allrs' ]"
	assertEquals "RS intents about RC pods" "" \
	    "$(intents_touching rs "$ns" $allrc)"
	assertEquals "RC intents about RS pods" "" \
	    "$(intents_touching rc "$ns" $allrs)"
	assertEquals "RS pipeline: only ReplicaSet owners" 0 \
	    "$(intents rs | jq -c 'select(.owner.kind != "ReplicaSet")' | wc -l)"
	assertEquals "RC pipeline: only ReplicationController owners" 0 \
	    "$(intents rc | jq -c 'select(.owner.kind != "ReplicationController" or .owner.apiVersion != "v1")' | wc -l)"
	n=$(intents rs | jq -s --arg k "$ns/web" '[.[] | select(.key == $k and .op == "create") | .count] | add // 0')
	assertEquals "RS asked for 2 + 2 pods" 4 "$n"
	n=$(intents rc | jq -s --arg k "$ns/web" '[.[] | select(.key == $k and .op == "create") | .count] | add // 0')
	assertEquals "RC asked for 3 pods" 3 "$n"
	assertEquals "SuccessfulCreate events of the RS" 4 \
	    "$(event_count "$ns" SuccessfulCreate replicaset-controller ReplicaSet)"
	assertEquals "SuccessfulCreate events of the RC" 3 \
	    "$(event_count "$ns" SuccessfulCreate replication-controller ReplicationController)"
}

# Last, so that both queues have seen work. Sharded, each instance's
# queue: its name, and the adds of all the RC instances' queues.
test_queue_names() {
	need_cluster || return
	local d n=0
	for d in $(queue_dirs rc); do
		assertEquals "RC queue name" replicationmanager \
		    "$(RS_STATE_DIR=$d rs-queue stats | jq -r .name)"
		n=$(( n + $(RS_STATE_DIR=$d rs-queue stats | jq .adds_total) ))
		assertTrue "prometheus label" \
		    "RS_STATE_DIR=$d rs-queue stats --prometheus | grep -q '^workqueue_adds_total{name=\"replicationmanager\"}'"
	done
	for d in $(queue_dirs rs); do
		assertEquals "RS queue name" replicaset \
		    "$(RS_STATE_DIR=$d rs-queue stats | jq -r .name)"
	done
	assertTrue "the RC pipeline used its queue ($n adds)" "[ $n -gt 0 ]"
}

. "$SHUNIT2"
