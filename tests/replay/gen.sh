#!/bin/bash
# gen.sh [DIR]: writes the replay cases of rs-sync into DIR (default
# tests/replay/cases, replaced as a whole). Each case is a folder with
#   events.ndjson  the rs-watch stream fed to rs-sync
#   args           the rs-sync arguments (@EXP@: an expectations file that
#                  the case's setup prepared)
#   expect.jq      run as jq -s -L tests/replay -f expect.jq over the
#                  intents; must print true. Its first comment says what
#                  the case checks and why (upstream rule).
#   setup          (optional) sh script run first, with EXP (a fresh path)
#                  and EXP_TOOL (build/test/exp-tool) in its environment
# The fixtures are generated but checked in, so that a case can be read and
# run without this script; tests/shell/replay.sh checks that they match.
#
# Builders (options are key=value; times are seconds relative to NOW or
# RFC 3339):
#   rs NAME   [ev= ns= uid= rv= gen= replicas= minready= sel=JSON tmpl=JSON
#              status=JSON owner=DEPLOYMENT_UID deleted= created= merge=JSON
#              at= (rs-watch's "at", a time like the others)]
#   rc NAME   [same; sel is a map]
#   pod NAME  [ev= ns= uid= rv= labels=JSON node= (empty: unassigned)
#              phase= ready=SECONDS|no|none|nolt created= (empty: none)
#              restarts= sidecar_restarts= init_restarts= cost= deleted=
#              own=RS ownrc=RC ctl=KIND/NAME/UID nonctl=KIND/NAME/UID
#              orphan=1 unknown=1 merge=JSON at=]
#   raw LINE        a line as is (malformed input)
#   synced [RES]    SYNCED for pods and RES (default replicasets)
#   expect "WHAT" <<'EOF' ... EOF     the case's expect.jq
#   setup <<'EOF' ... EOF             the case's setup
# Pods default to: labels {"app":"web"}, node node-1, Running, Ready since
# 600 s, created 1200 s before NOW, controlled by the case's controller "web"
# unless own=, ownrc=, ctl= or orphan=1 is given (nonctl= adds a
# non-controller reference beside it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/cases}
NOW=2026-01-01T00:10:00Z
T="--now $NOW"

case $out in
*/cases|/tmp/*) rm -rf -- "$out" ;;
*) echo "gen.sh: refusing to replace $out" >&2; exit 100 ;;
esac
mkdir -p "$out"

# Events are collected as spec lines (see gen.jq) and turned into the
# case's events.ndjson by one jq run when the case is complete.
flush() {
	[ -n "${dir:-}" ] || return 0
	jq -rR --arg now "$NOW" -f "$here/gen.jq" <"$SPEC" >"$dir/events.ndjson"
	rm -f "$SPEC"
}

case_() {  # case_ NAME ARGS...
	flush
	dir=$out/$1; shift
	mkdir "$dir"
	SPEC=$dir/.spec
	: >"$SPEC"
	echo "$*" >"$dir/args"
	OWN=web OWNOPT=own
}

_gen() {
	local kind=$1 line="$1	$2" kv owned=0
	shift 2
	for kv; do
		case $kv in own=*|ownrc=*|ctl=*|orphan=*) owned=1 ;; esac
	done
	if [ "$kind" = pod ] && [ $owned = 0 ] && [ -n "$OWN" ]; then
		line="$line	$OWNOPT=$OWN"
	fi
	for kv; do
		[ "${kv%%=*}" = orphan ] && continue
		line="$line	$kv"
	done
	printf '%s\n' "$line" >>"$SPEC"
}
rs() { _gen rs "$@"; }
rc() { _gen rc "$@"; }
pod() { _gen pod "$@"; }
raw() { printf 'raw\t%s\n' "$1" >>"$SPEC"; }
synced() {
	raw '{"type":"SYNCED","resource":"pods"}'
	raw "{\"type\":\"SYNCED\",\"resource\":\"${1:-replicasets}\"}"
}
expect() {  # expect "WHAT IT CHECKS" <<'EOF' program EOF
	{ echo "# $1"; echo 'include "replay";'; cat; } >"$dir/expect.jq"
}
setup() { cat >"$dir/setup"; }

# The status rs-sync computes for three ready, available, fully labeled
# pods of generation 1: cached as is, nothing to write.
FULL3='{"replicas":3,"fullyLabeledReplicas":3,"readyReplicas":3,"availableReplicas":3,"terminatingReplicas":0,"observedGeneration":1}'

### scaling ###################################################################

case_ scale-up-from-zero --once ns/web $T
rs web replicas=3
synced
expect "no pods, replicas 3: one create of 3 from the template, then status (replicas 0, zero counts omitted, terminatingReplicas 0) and end" <<'EOF'
ops == ["create", "status", "end"]
and count == 3
and one("create").template == {metadata: {labels: {app: "web"}}, spec: {containers: [{name: "c", image: "nginx"}]}}
and one("create").owner == {apiVersion: "apps/v1", kind: "ReplicaSet", namespace: "ns", name: "web", uid: "uid-rs-web", resourceVersion: "100"}
and status == {replicas: 0, terminatingReplicas: 0, observedGeneration: 1}
and old_status == {replicas: 0}
and one("status").object.metadata.name == "web"
and (one("status").object | has("spec") | not)
and no_requeue
and fin.owner.uid == "uid-rs-web"
and all(.[]; .key == "ns/web")
EOF

case_ scale-up-partial --once ns/web $T
rs web replicas=5
pod web-a
pod web-b
synced
expect "2 of 5: create 3; status counts the 2 (ready, available, fully labeled)" <<'EOF'
ops == ["create", "status", "end"]
and count == 3
and status == {replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2, terminatingReplicas: 0, observedGeneration: 1}
EOF

case_ scale-up-burst-cap --once ns/web $T
rs web replicas=1200
synced
expect "burstReplicas (500) caps one round: replicas 1200 from 0 creates 500" <<'EOF'
ops == ["create", "status", "end"] and count == 500
EOF

case_ scale-up-burst-flag --once ns/web $T --burst-replicas 7
rs web replicas=10
pod web-a
synced
expect "--burst-replicas 7: 9 missing, 7 created" <<'EOF'
ops == ["create", "status", "end"] and count == 7 and status.replicas == 1
EOF

case_ scale-down --once ns/web $T
rs web replicas=2 status="$FULL3"
pod web-a created=-100 ready=-50
pod web-b created=-200 ready=-50
pod web-c created=-400 ready=-50
pod web-d created=-800 ready=-50
pod web-e created=-1600 ready=-50
synced
expect "5 of 2: delete the 3 newest (same readiness, creation ages in different log2 buckets), newest first; status still counts 5" <<'EOF'
ops == ["delete", "status", "end"]
and deleted == ["web-a", "web-b", "web-c"]
and one("delete").pods[0] == {name: "web-a", uid: "uid-web-a"}
and status.replicas == 5
EOF

case_ scale-down-to-zero --once ns/web $T
rs web replicas=0 status="$FULL3"
pod web-a
pod web-b created=-1300
pod web-c created=-1400
synced
expect "replicas 0: every pod deleted" <<'EOF'
ops == ["delete", "status", "end"]
and (deleted | sort) == ["web-a", "web-b", "web-c"]
and status.replicas == 3
EOF

case_ scale-down-burst --once ns/web $T --burst-replicas 2
rs web replicas=0
pod web-a created=-100 ready=-50
pod web-b created=-200 ready=-50
pod web-c created=-400 ready=-50
pod web-d created=-800 ready=-50
pod web-e created=-1600 ready=-50
synced
expect "--burst-replicas 2 caps deletions too: the 2 first-ranked (newest) of 5" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-a", "web-b"]
EOF

case_ scale-down-skips-terminating --once ns/web $T
rs web replicas=2
pod web-a created=-3000 ready=-3000
pod web-b created=-2000 ready=-2000
pod web-c created=-1000 ready=-1000
pod web-t created=-10 ready=-5 deleted=-1
synced
expect "a terminating pod is not active: it is neither counted nor chosen; 3 active of 2, the newest active goes" <<'EOF'
ops == ["delete", "status", "end"]
and deleted == ["web-c"]
and status.replicas == 3 and status.terminatingReplicas == 1
EOF

case_ rs-modified-replicas --once ns/web $T
rs web replicas=3 status="$FULL3"
pod web-a created=-100
pod web-b created=-2000
pod web-c created=-3000
synced
rs web ev=MODIFIED rv=101 gen=2 replicas=1 status="$FULL3"
expect "the latest MODIFIED wins: replicas 3 then 1, delete 2 (newest first); observedGeneration follows generation 2" <<'EOF'
ops == ["delete", "status", "end"]
and deleted == ["web-a", "web-b"]
and status.observedGeneration == 2
and one("delete").owner.resourceVersion == "101"
EOF

### status ####################################################################

case_ noop-equal-status --once ns/web $T
rs web replicas=3 status="$FULL3"
pod web-a
pod web-b
pod web-c
synced
expect "nothing to do and the cached status equals the computed one: end only" <<'EOF'
ops == ["end"] and no_requeue and fin.owner.uid == "uid-rs-web"
EOF

case_ status-terminating-zero --once ns/web $T
rs web replicas=3 status='{"replicas":3,"fullyLabeledReplicas":3,"readyReplicas":3,"availableReplicas":3,"observedGeneration":1}'
pod web-a
pod web-b
pod web-c
synced
expect "terminatingReplicas is reported even when 0 (ReplicaSet): a cached status without it is written" <<'EOF'
ops == ["status", "end"]
and status.terminatingReplicas == 0
and (old_status | has("terminatingReplicas") | not)
and status.readyReplicas == 3
EOF

case_ status-ready-change --once ns/web $T
rs web replicas=3 status="$FULL3"
pod web-a
pod web-b
pod web-c ready=no
synced
expect "status only: one pod lost readiness, readyReplicas/availableReplicas 3 -> 2, no create or delete" <<'EOF'
ops == ["status", "end"]
and status == {replicas: 3, fullyLabeledReplicas: 3, readyReplicas: 2, availableReplicas: 2, terminatingReplicas: 0, observedGeneration: 1}
and old_status.readyReplicas == 3
EOF

case_ status-all-unready --once ns/web $T
rs web replicas=2 status='{"replicas":2,"fullyLabeledReplicas":2,"readyReplicas":2,"availableReplicas":2,"terminatingReplicas":0,"observedGeneration":1}'
pod web-a ready=no phase=Pending
pod web-b ready=none phase=Pending node=
synced
expect "zero ready and available counts are omitted (omitempty), not written as 0" <<'EOF'
ops == ["status", "end"]
and status == {replicas: 2, fullyLabeledReplicas: 2, terminatingReplicas: 0, observedGeneration: 1}
EOF

case_ status-object-without-spec --once ns/web $T
rs web replicas=3 rv=777 status="$FULL3" merge='{"metadata":{"labels":{"team":"a"},"annotations":{"note":"keep"},"managedFields":[{"manager":"kubectl","operation":"Apply"}]}}'
pod web-a
pod web-b
pod web-c ready=no
synced
expect "the status intent carries the cached object (labels, annotations, resourceVersion: the metadata whole) minus managedFields and minus spec (a /status write keeps the stored spec), with the new status" <<'EOF'
one("status").object as $o
| ops == ["status", "end"]
and ($o.metadata | has("managedFields") | not)
and $o.metadata.labels == {team: "a"} and $o.metadata.annotations == {note: "keep"}
and $o.metadata.resourceVersion == "777" and $o.metadata.uid == "uid-rs-web"
and ($o | has("spec") | not) and $o.kind == "ReplicaSet" and $o.apiVersion == "apps/v1"
and $o.status.readyReplicas == 2
and one("status").owner.resourceVersion == "777"
EOF

case_ observed-generation-behind --once ns/web $T
rs web replicas=3 gen=5 status='{"replicas":3,"fullyLabeledReplicas":3,"readyReplicas":3,"availableReplicas":3,"terminatingReplicas":0,"observedGeneration":4}'
pod web-a
pod web-b
pod web-c
synced
expect "generation 5, observedGeneration 4, counts equal: status written with observedGeneration 5" <<'EOF'
ops == ["status", "end"] and status.observedGeneration == 5 and status.replicas == 3
EOF

case_ replica-failure-dropped --once ns/web $T
rs web replicas=3 status='{"replicas":3,"fullyLabeledReplicas":3,"readyReplicas":3,"availableReplicas":3,"terminatingReplicas":0,"observedGeneration":1,"conditions":[{"type":"ReplicaFailure","status":"True","reason":"FailedCreate","message":"pods is forbidden: exceeded quota","lastTransitionTime":"2026-01-01T00:00:00Z"}]}'
pod web-a
pod web-b
pod web-c
synced
expect "a sync without manage error removes the ReplicaFailure condition: status written without it, old_status keeps it" <<'EOF'
ops == ["status", "end"]
and ([status.conditions // [] | .[] | select(.type == "ReplicaFailure")] | length) == 0
and old_status.conditions[0].type == "ReplicaFailure"
and status.readyReplicas == 3
EOF

case_ fully-labeled --once ns/web $T
rs web replicas=4 tmpl='{"app":"web","tier":"fe"}'
pod web-a labels='{"app":"web","tier":"fe"}'
pod web-b labels='{"app":"web"}'
pod web-c labels='{"app":"web","tier":"fe","extra":"x"}'
pod web-d labels='{"app":"web","tier":"be"}'
synced
expect "fullyLabeledReplicas counts pods carrying every template label (extra labels allowed): 2 of 4" <<'EOF'
ops == ["status", "end"]
and status.replicas == 4 and status.fullyLabeledReplicas == 2 and status.readyReplicas == 4
EOF

case_ no-terminating-replicas-flag --once ns/web $T --no-terminating-replicas
rs web replicas=1
pod web-a
pod web-t deleted=-1
synced
expect "--no-terminating-replicas (feature off): status has no terminatingReplicas field" <<'EOF'
ops == ["status", "end"]
and status == {replicas: 1, fullyLabeledReplicas: 1, readyReplicas: 1, availableReplicas: 1, observedGeneration: 1}
EOF

### availability and requeue ##################################################

case_ available-minready --once ns/web $T
rs web replicas=3 minready=10
pod web-a ready=-60
pod web-b ready=-5
pod web-c ready=no
synced
expect "minReadySeconds 10: ready 60 s is available, ready 5 s is not; requeue when the next one becomes available: 5 s + 0.1" <<'EOF'
ops == ["status", "end"]
and status.readyReplicas == 2 and status.availableReplicas == 1 and status.replicas == 3
and near(requeue; 5.1)
EOF

case_ available-requeue-min --once ns/web $T
rs web replicas=3 minready=10
pod web-a ready=-2
pod web-b ready=-7
pod web-c ready=-30
synced
expect "requeue_after is the soonest availability among pods (3 s left of 10), plus 0.1" <<'EOF'
ops == ["status", "end"]
and status.readyReplicas == 3 and status.availableReplicas == 1
and near(requeue; 3.1)
EOF

case_ available-all --once ns/web $T
rs web replicas=2 minready=10
pod web-a ready=-60
pod web-b ready=-30
synced
expect "every ready pod available: no requeue_after" <<'EOF'
ops == ["status", "end"]
and status.readyReplicas == 2 and status.availableReplicas == 2
and no_requeue
EOF

case_ available-no-transition-time --once ns/web $T
rs web replicas=2 minready=10
pod web-a ready=nolt
pod web-b ready=-60
synced
expect "ready without lastTransitionTime is not available when minReadySeconds > 0; no pod gives a next check, so the fallback is minReadySeconds" <<'EOF'
ops == ["status", "end"]
and status.readyReplicas == 2 and status.availableReplicas == 1
and requeue >= 10 and requeue <= 10.1
EOF

case_ available-minready-zero --once ns/web $T
rs web replicas=2
pod web-a ready=nolt
pod web-b ready=-1
synced
expect "minReadySeconds 0: every ready pod is available at once (even without lastTransitionTime); no requeue" <<'EOF'
ops == ["status", "end"]
and status.readyReplicas == 2 and status.availableReplicas == 2
and no_requeue
EOF

case_ available-future-ready-time --once ns/web $T
rs web replicas=1 minready=10
pod web-a ready=5
synced
expect "a Ready transition 5 s in the future (clock skew): not available; FindMinNextPodAvailabilityCheck gives 15 s (the only pod's check, not capped at minReadySeconds)" <<'EOF'
ops == ["status", "end"]
and status.readyReplicas == 1 and (status | has("availableReplicas") | not)
and requeue >= 15 and requeue <= 15.1
EOF

case_ available-boundary --once ns/web $T
rs web replicas=1 minready=10
pod web-a ready=-10
synced
expect "ready exactly minReadySeconds ago: not yet available (IsPodAvailable wants lastTransitionTime + minReadySeconds strictly before now)" <<'EOF'
ops == ["status", "end"]
and status.readyReplicas == 1 and (status | has("availableReplicas") | not)
EOF

case_ available-boundary-requeue --once ns/web $T
rs web replicas=1 minready=10
pod web-a ready=-10
synced
expect "ready exactly minReadySeconds ago: nextPodAvailabilityCheck is 0, not positive, so no pod gives a check and upstream falls back to minReadySeconds" <<'EOF'
requeue >= 10 and requeue <= 10.1
EOF

### controller object states ###################################################

case_ rs-deleted --once ns/web $T
rs web replicas=3
pod web-a
synced
rs web ev=DELETED
expect "the ReplicaSet was deleted: end only, without owner" <<'EOF'
ops == ["end"] and (fin | has("owner") | not) and fin.key == "ns/web" and no_requeue
EOF

case_ rs-deleted-final-state-unknown --once ns/web $T
rs web replicas=3
pod web-a
synced
rs web ev=DELETED unknown=1 replicas=5
expect "a ReplicaSet tombstone (DELETED, final_state_unknown) deletes it all the same: end only, without owner" <<'EOF'
ops == ["end"] and (fin | has("owner") | not)
EOF

case_ rs-unknown-key --once ns/nothere $T
rs web replicas=3
synced
expect "a key never seen: end only, without owner" <<'EOF'
ops == ["end"] and (fin | has("owner") | not) and fin.key == "ns/nothere"
EOF

case_ rs-deleting --once ns/web $T
rs web replicas=3 deleted=-30
pod web-a
pod web-o orphan=1
synced
expect "ReplicaSet with deletionTimestamp: no create for the missing 2, no adopt of the matching orphan; status still written" <<'EOF'
ops == ["status", "end"]
and status.replicas == 1
and untouched("web-o")
EOF

case_ rs-deleting-no-release --once ns/web $T
rs web replicas=0 deleted=-30
pod web-a
pod web-b created=-100
pod web-x labels='{"app":"other"}'
synced
expect "ReplicaSet with deletionTimestamp: owned pods that stopped matching are not released, extra pods not deleted" <<'EOF'
ops == ["status", "end"]
and status.replicas == 2
and untouched("web-x") and untouched("web-a") and untouched("web-b")
EOF

case_ rs-modified-new-uid --once ns/web $T
rs web replicas=2
pod web-a
pod web-b
synced
rs web ev=MODIFIED uid=uid-rs-web-2 rv=300 replicas=2
expect "same name, new UID (deleted and recreated): the old incarnation's pods are not counted nor adopted; create 2 for the new UID" <<'EOF'
ops == ["create", "status", "end"]
and count == 2
and owner_is("ReplicaSet"; "uid-rs-web-2")
and status.replicas == 0
EOF

### selectors #################################################################

case_ invalid-selector-operator --once ns/web $T
rs web replicas=3 sel='{"matchExpressions":[{"key":"app","operator":"Bogus","values":["web"]}]}'
pod web-o orphan=1
synced
expect "unknown selector operator: the sync is skipped (end only, no status)" <<'EOF'
ops == ["end"] and fin.owner.uid == "uid-rs-web"
EOF

case_ invalid-selector-in-no-values --once ns/web $T
rs web replicas=3 sel='{"matchExpressions":[{"key":"app","operator":"In","values":[]}]}'
synced
expect "In with no values is an invalid selector: end only" <<'EOF'
ops == ["end"]
EOF

case_ invalid-selector-exists-values --once ns/web $T
rs web replicas=3 sel='{"matchExpressions":[{"key":"app","operator":"Exists","values":["web"]}]}'
synced
expect "Exists with values is an invalid selector: end only" <<'EOF'
ops == ["end"]
EOF

case_ invalid-selector-label-value --once ns/web $T
rs web replicas=3 sel='{"matchLabels":{"app":"web app"}}'
synced
expect "a matchLabels value that is not a valid label value is an invalid selector: end only" <<'EOF'
ops == ["end"]
EOF

case_ selector-match-expressions --once ns/web $T
rs web replicas=2 sel='{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["fe","edge"]},{"key":"canary","operator":"DoesNotExist"}]}' tmpl='{"app":"web","tier":"fe"}'
pod web-a labels='{"app":"web","tier":"fe"}'
pod web-b labels='{"app":"web","tier":"edge"}'
pod web-c labels='{"app":"web","tier":"fe","canary":"1"}'
pod web-o orphan=1 labels='{"app":"web","tier":"be"}'
synced
expect "matchLabels and matchExpressions together: web-c (canary) no longer matches and is released; web-o (tier be) is not adopted" <<'EOF'
ops == ["release", "status", "end"]
and released == ["web-c"]
and status.replicas == 2 and status.fullyLabeledReplicas == 1
and untouched("web-o")
EOF

### pods: active, terminating, owned by others ##################################

case_ inactive-pods-ignored --once ns/web $T
rs web replicas=3
pod web-a
pod web-s phase=Succeeded ready=no
pod web-f phase=Failed ready=no
pod web-t1 deleted=-5
pod web-t2 phase=Pending ready=no deleted=-5
pod web-tf phase=Failed ready=no deleted=-5
pod web-tx labels='{"app":"other"}' deleted=-5
pod web-to orphan=1 deleted=-5
synced
expect "Succeeded, Failed and deleting pods are not active: 1 active of 3, create 2; terminatingReplicas counts owned, matching, deleting, non-terminal pods (2)" <<'EOF'
ops == ["create", "status", "end"]
and count == 2
and status.replicas == 1
and status.terminatingReplicas == 2
and untouched("web-tx") and untouched("web-to")
EOF

case_ other-controller-pod --once ns/web $T
rs web replicas=2
pod web-a
pod db-0 ctl=StatefulSet/db/uid-ss-db
synced
expect "a matching pod controlled by a StatefulSet is never counted, adopted or released" <<'EOF'
ops == ["create", "status", "end"]
and count == 1 and status.replicas == 1
and untouched("db-0")
EOF

case_ same-name-other-uid --once ns/web $T
rs web replicas=2
pod web-a
pod web-old ctl=ReplicaSet/web/uid-rs-web-previous
synced
expect "a pod owned by an earlier ReplicaSet of the same name (other UID) is not ours: not counted, not released" <<'EOF'
ops == ["create", "status", "end"]
and count == 1 and status.replicas == 1
and untouched("web-old")
EOF

case_ owned-pod-other-namespace --once ns/web $T
rs web replicas=1
pod web-a
pod web-x ns=other ctl=ReplicaSet/web/uid-rs-web
synced
expect "the controller lists pods of its own namespace only: a pod elsewhere whose controllerRef carries our UID is not counted (nothing to delete)" <<'EOF'
ops == ["status", "end"]
and status.replicas == 1
and untouched("web-x")
EOF

### claim: adopt and release ###################################################

case_ adopt-orphan --once ns/web $T
rs web replicas=3
pod web-a
pod web-o orphan=1
pod web-n orphan=1 labels='{"app":"other"}'
synced
expect "a matching orphan is adopted; a round with adoptions emits only adopt (and release) then end: no create, no status" <<'EOF'
ops == ["adopt", "end"]
and adopted == ["web-o"]
and one("adopt").pod == {name: "web-o", uid: "uid-web-o"}
and one("adopt").owner.uid == "uid-rs-web"
and untouched("web-n")
and no_requeue
EOF

case_ adopt-non-controller-ref --once ns/web $T
rs web replicas=1
pod web-o orphan=1 nonctl=ConfigMap/cfg/uid-cm-cfg
synced
expect "an ownerReference without controller: true is not a controllerRef: the pod is an orphan and adopted" <<'EOF'
ops == ["adopt", "end"] and adopted == ["web-o"]
EOF

case_ adopt-several --once ns/web $T
rs web replicas=2
pod web-o1 orphan=1
pod web-o2 orphan=1
pod web-o3 orphan=1
synced
expect "every matching orphan is adopted, even beyond replicas (the next round scales down)" <<'EOF'
ops == ["adopt", "adopt", "adopt", "end"] and adopted == ["web-o1", "web-o2", "web-o3"]
EOF

case_ orphan-inactive-not-adopted --once ns/web $T
rs web replicas=2
pod web-o1 orphan=1 deleted=-5
pod web-o2 orphan=1 phase=Succeeded ready=no
pod web-o3 orphan=1 phase=Failed ready=no
synced
expect "orphans being deleted, Succeeded or Failed are not adopted; scaling goes on: create 2" <<'EOF'
ops == ["create", "status", "end"]
and count == 2
and untouched("web-o1") and untouched("web-o2") and untouched("web-o3")
and status.terminatingReplicas == 0
EOF

case_ orphan-other-namespace --once ns/web $T
rs web replicas=2
pod web-o ns=other orphan=1
synced
expect "an orphan in another namespace is not adopted: create 2" <<'EOF'
ops == ["create", "status", "end"] and count == 2 and untouched("web-o")
EOF

case_ adopt-and-release --once ns/web $T
rs web replicas=3
pod web-a
pod web-b labels='{"app":"web-old"}'
pod web-o orphan=1
synced
expect "release and adopt in one round: both emitted, then end only" <<'EOF'
(ops | sort) == ["adopt", "end", "release"] and ops[-1] == "end"
and adopted == ["web-o"] and released == ["web-b"]
EOF

case_ release-and-scale --once ns/web $T
rs web replicas=2
pod web-a
pod web-b labels='{"app":"web-old"}'
synced
expect "an owned pod that stopped matching is released, and scaling proceeds in the same round (1 left of 2: create 1)" <<'EOF'
ops == ["release", "create", "status", "end"]
and released == ["web-b"]
and one("release").pod == {name: "web-b", uid: "uid-web-b"}
and count == 1
and status.replicas == 1
EOF

case_ release-then-delete --once ns/web $T
rs web replicas=1
pod web-a created=-100
pod web-c created=-3000 ready=-3000
pod web-b labels='{"app":"canary"}'
synced
expect "release the non-matching pod, then scale down the matching ones (newest first)" <<'EOF'
ops == ["release", "delete", "status", "end"]
and released == ["web-b"]
and deleted == ["web-a"]
and status.replicas == 2
EOF

### expectations ###############################################################

case_ exp-pending --once ns/web $T --expectations @EXP@
setup <<'EOF'
"$EXP_TOOL" "$EXP" create
"$EXP_TOOL" "$EXP" expect-creations ns/web 2
EOF
rs web replicas=3
pod web-a
synced
expect "2 creations expected, 1 observed (web-a): not satisfied, so no create; status is still computed and written" <<'EOF'
ops == ["status", "end"]
and status.replicas == 1
EOF

case_ exp-observed-creations --once ns/web $T --expectations @EXP@
setup <<'EOF'
"$EXP_TOOL" "$EXP" create
"$EXP_TOOL" "$EXP" expect-creations ns/web 2
EOF
rs web replicas=4
pod web-a
pod web-b
synced
expect "2 creations expected and both pods arrived in the stream: satisfied, create the 2 still missing" <<'EOF'
ops == ["create", "status", "end"] and count == 2
EOF

case_ exp-observed-deletion --once ns/web $T --expectations @EXP@
setup <<'EOF'
"$EXP_TOOL" "$EXP" create
"$EXP_TOOL" "$EXP" expect-deletions ns/web ns/web-a
EOF
rs web replicas=3
pod web-a
pod web-b
pod web-c
synced
pod web-a ev=MODIFIED rv=201 deleted=0
expect "the awaited deletion is observed from the deletionTimestamp update: satisfied, replace it (create 1)" <<'EOF'
ops == ["create", "status", "end"]
and count == 1
and status.replicas == 2 and status.terminatingReplicas == 1
EOF

case_ exp-pending-deletion --once ns/web $T --expectations @EXP@
setup <<'EOF'
"$EXP_TOOL" "$EXP" create
"$EXP_TOOL" "$EXP" expect-deletions ns/web ns/web-a ns/web-z
EOF
rs web replicas=3
pod web-a
pod web-b
pod web-c
synced
pod web-a ev=DELETED
expect "one of two awaited deletions observed: not satisfied, no create; status still written" <<'EOF'
ops == ["status", "end"] and status.replicas == 2
EOF

case_ exp-pending-adopts --once ns/web $T --expectations @EXP@
setup <<'EOF'
"$EXP_TOOL" "$EXP" create
"$EXP_TOOL" "$EXP" expect-creations ns/web 5
EOF
rs web replicas=3
pod web-o orphan=1
synced
expect "claiming does not wait for expectations: a matching orphan is adopted while creations are pending" <<'EOF'
ops == ["adopt", "end"] and adopted == ["web-o"]
EOF

### deletion ranking (ActivePodsWithRanks.Less) #################################

case_ rank-unassigned-first --once ns/web $T
rs web replicas=1
pod web-u node= created=-3000 ready=-3000
pod web-n phase=Pending ready=no created=-100
synced
expect "rule 1: an unassigned pod goes before an assigned one, even a Running ready older one before a Pending newer one" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-u"]
EOF

case_ rank-phase-order --once ns/web $T
rs web replicas=1
pod web-p phase=Pending ready=no created=-3000
pod web-u phase=Unknown ready=no created=-2000
pod web-r phase=Running ready=no created=-100
synced
expect "rule 2: Pending before Unknown before Running, whatever the ages" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-p", "web-u"]
EOF

case_ rank-not-ready-first --once ns/web $T
rs web replicas=1
pod web-a ready=no created=-3000
pod web-b ready=-100 created=-100 restarts=5
synced
expect "rule 3: not ready before ready (the ready one is newer and restarted more)" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-a"]
EOF

case_ rank-deletion-cost --once ns/web $T
rs web replicas=1
pod web-a cost=10 ready=-100 created=-100
pod web-b cost=-5 ready=-3000 created=-3000
pod web-c ready=-2000 created=-2000
synced
expect "rule 4: lower controller.kubernetes.io/pod-deletion-cost first (-5, then none = 0), before readiness age" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-b", "web-c"]
EOF

case_ rank-deletion-cost-invalid --once ns/web $T
rs web replicas=1
pod web-a cost=abc ready=-3000 created=-3000
pod web-b cost=1 ready=-100 created=-100
pod web-c cost=99999999999 ready=-2000 created=-2000
synced
expect "an invalid deletion cost (not a number, beyond int32) counts as 0: both go before cost 1, then by readiness age" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-c", "web-a"]
EOF

case_ rank-deletion-cost-strict --once ns/web $T
rs web replicas=1
pod web-a 'cost=+5' ready=-3000 created=-3000
pod web-b cost=007 ready=-2900 created=-2900
pod web-d 'cost= 3' ready=-2800 created=-2800
pod web-c cost=1 ready=-100 created=-100
synced
expect "upstream rejects a deletion cost with a plus sign, leading zeros or blanks (validFirstDigit + ParseInt): +5, 007 and ' 3' count as 0, so those three go before cost 1" <<'EOF'
ops == ["delete", "status", "end"] and (deleted | sort) == ["web-a", "web-b", "web-d"]
EOF

case_ rank-colocated-siblings --once ns/web-1 $T
rs web-1 owner=uid-dep replicas=1 sel='{"matchLabels":{"app":"web","hash":"1"}}' tmpl='{"app":"web","hash":"1"}'
rs web-2 owner=uid-dep replicas=2 sel='{"matchLabels":{"app":"web","hash":"2"}}' tmpl='{"app":"web","hash":"2"}'
pod web-1-a own=web-1 labels='{"app":"web","hash":"1"}' node=n1 created=-3000 ready=-3000
pod web-1-b own=web-1 labels='{"app":"web","hash":"1"}' node=n2 created=-100 ready=-100
pod web-2-c own=web-2 labels='{"app":"web","hash":"2"}' node=n1
pod web-2-d own=web-2 labels='{"app":"web","hash":"2"}' node=n1
synced
expect "rule 5: the pod on the node with more active pods of sibling ReplicaSets (same Deployment) goes first: n1 has 3, n2 has 1" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-1-a"]
EOF

case_ rank-colocated-non-sibling --once ns/web-1 $T
rs web-1 owner=uid-dep replicas=1 sel='{"matchLabels":{"app":"web","hash":"1"}}' tmpl='{"app":"web","hash":"1"}'
rs web-2 owner=uid-dep-other replicas=2 sel='{"matchLabels":{"app":"web","hash":"2"}}' tmpl='{"app":"web","hash":"2"}'
pod web-1-a own=web-1 labels='{"app":"web","hash":"1"}' node=n1 created=-3000 ready=-3000
pod web-1-b own=web-1 labels='{"app":"web","hash":"1"}' node=n2 created=-100 ready=-100
pod web-2-c own=web-2 labels='{"app":"web","hash":"2"}' node=n1
pod web-2-d own=web-2 labels='{"app":"web","hash":"2"}' node=n1
synced
expect "pods of a ReplicaSet under another Deployment do not count: equal rank, the pod ready for less time goes" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-1-b"]
EOF

case_ rank-colocated-needs-owner --once ns/web $T
rs web replicas=2
pod web-a node=n1 created=-3000 ready=-3000
pod web-c node=n1 created=-2000 ready=-2000
pod web-b node=n2 created=-100 ready=-100
synced
expect "a ReplicaSet without controllerRef has no related pods (getReplicaSetsWithSameController): every rank 0, the doubled-up node does not matter" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-b"]
EOF

case_ rank-colocated-inactive --once ns/web-1 $T
rs web-1 owner=uid-dep replicas=1 sel='{"matchLabels":{"app":"web","hash":"1"}}' tmpl='{"app":"web","hash":"1"}'
rs web-2 owner=uid-dep replicas=0 sel='{"matchLabels":{"app":"web","hash":"2"}}' tmpl='{"app":"web","hash":"2"}'
pod web-1-a own=web-1 labels='{"app":"web","hash":"1"}' node=n1 created=-3000 ready=-3000
pod web-1-b own=web-1 labels='{"app":"web","hash":"1"}' node=n2 created=-100 ready=-100
pod web-2-c own=web-2 labels='{"app":"web","hash":"2"}' node=n1 deleted=-5
pod web-2-d own=web-2 labels='{"app":"web","hash":"2"}' node=n1 phase=Succeeded ready=no
synced
expect "only active sibling pods count for co-location: terminating and Succeeded ones on n1 do not" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-1-b"]
EOF

case_ rank-colocated-orphans --once ns/web-1 $T
rs web-1 owner=uid-dep replicas=1 sel='{"matchLabels":{"app":"web","hash":"1"}}' tmpl='{"app":"web","hash":"1"}'
rs web-2 owner=uid-dep replicas=0 sel='{"matchLabels":{"app":"web","hash":"2"}}' tmpl='{"app":"web","hash":"2"}'
pod web-1-a own=web-1 labels='{"app":"web","hash":"1"}' node=n1 created=-3000 ready=-3000
pod web-1-b own=web-1 labels='{"app":"web","hash":"1"}' node=n2 created=-100 ready=-100
pod stray-1 orphan=1 labels='{"app":"web","hash":"2"}' node=n1
pod stray-2 orphan=1 labels='{"app":"web","hash":"2"}' node=n1
synced
expect "related pods are listed by the siblings' selectors: orphans matching a sibling count on their node (n1: 3, n2: 1)" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-1-a"]
EOF

case_ rank-ready-time --once ns/web $T
rs web replicas=1
pod web-a ready=-100 created=-3000
pod web-b ready=-3000 created=-100 restarts=3
synced
expect "rule 6: ready for less time goes first, before restarts (rule 7) and creation time (rule 8) that favour the other" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-a"]
EOF

case_ rank-ready-bucket-uid --once ns/web $T
rs web replicas=1
pod web-old uid=uid-0-old ready=-500 created=-3000
pod web-new uid=uid-9-new ready=-300 created=-310
synced
expect "LogarithmicScaleDown on readiness: ready 300 s and 500 s ago fall in the same log2 bucket of nanoseconds (2^38), so the lower UID goes first (the longer-ready pod)" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-old"]
EOF

case_ rank-ready-no-transition-first --once ns/web $T
rs web replicas=1
pod web-a ready=-100 created=-100
pod web-b ready=nolt created=-3000
synced
expect "rule 6: a ready pod without Ready lastTransitionTime counts as ready for the least time (afterOrZero): it goes first" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-b"]
EOF

case_ rank-log-bucket-same --once ns/web $T
rs web replicas=1
pod web-old uid=uid-0-old ready=no created=-500
pod web-new uid=uid-9-new ready=no created=-300
synced
expect "LogarithmicScaleDown: created 300 s and 500 s ago, same bucket (2^38 ns = 274.9 s .. 549.8 s): ordered by UID, so the older pod with the lower UID goes" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-old"]
EOF

case_ rank-log-bucket-different --once ns/web $T
rs web replicas=1
pod web-old uid=uid-0-old ready=no created=-200
pod web-new uid=uid-9-new ready=no created=-100
synced
expect "LogarithmicScaleDown: created 100 s (bucket 36) and 200 s (bucket 37) ago: different buckets, the newer goes despite its higher UID" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-new"]
EOF

case_ rank-log-bucket-nanoseconds --once ns/web $T
rs web replicas=1
pod web-old uid=uid-0-old ready=no created=-280
pod web-new uid=uid-9-new ready=no created=-260
synced
expect "buckets are log2 of NANOSECONDS: 260 s is bucket 37 and 280 s bucket 38 (2^38 ns = 274.88 s), so the newer goes; in seconds both would be bucket 8 and the UID would pick the older" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-new"]
EOF

case_ rank-restarts --once ns/web $T
rs web replicas=1
pod web-a restarts=5 created=-3000 ready=-3000
pod web-b restarts=0 created=-100 ready=-3000
synced
expect "rule 7: more container restarts first (same readiness time), before the newer creation" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-a"]
EOF

case_ rank-sidecar-restarts --once ns/web $T
rs web replicas=2
pod web-a sidecar_restarts=3 created=-3000 ready=-50
pod web-b init_restarts=9 created=-100 ready=-50
pod web-c created=-2000 ready=-50
synced
expect "rule 7 with equal regular restarts compares restartable init containers (sidecars) only: web-a (sidecar 3 restarts) goes; web-b's plain init container restarts do not count" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-a"]
EOF

case_ rank-newer-first --once ns/web $T
rs web replicas=1
pod web-a created=-100 ready=-50
pod web-b created=-3000 ready=-50
synced
expect "rule 8: the newer pod goes first" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-a"]
EOF

case_ rank-empty-creation-first --once ns/web $T
rs web replicas=1
pod web-a created= ready=-50
pod web-b created=-10 ready=-50
synced
expect "rule 8: a pod without creationTimestamp goes before any dated one (afterOrZero)" <<'EOF'
ops == ["delete", "status", "end"] and deleted == ["web-a"]
EOF

### ReplicationController ######################################################

case_ rc-scale-up --once ns/web $T --kind ReplicationController
OWNOPT=ownrc
rc web replicas=3
pod web-a
synced replicationcontrollers
expect "ReplicationController: map selector, owner apiVersion v1, create 2; status without terminatingReplicas" <<'EOF'
ops == ["create", "status", "end"]
and count == 2
and one("create").owner == {apiVersion: "v1", kind: "ReplicationController", namespace: "ns", name: "web", uid: "uid-rc-web", resourceVersion: "100"}
and owner_is("ReplicationController"; "uid-rc-web")
and status == {replicas: 1, fullyLabeledReplicas: 1, readyReplicas: 1, availableReplicas: 1, observedGeneration: 1}
EOF

case_ rc-scale-down --once ns/web $T --kind ReplicationController
OWNOPT=ownrc
rc web replicas=1
pod web-a created=-100 ready=-50
pod web-b created=-3000 ready=-50
pod web-t deleted=-5
synced replicationcontrollers
expect "ReplicationController scale down with a terminating pod: delete the newer, status has no terminatingReplicas" <<'EOF'
ops == ["delete", "status", "end"]
and deleted == ["web-a"]
and status.replicas == 2
and (status | has("terminatingReplicas") | not)
EOF

case_ rc-adopt --once ns/web $T --kind ReplicationController
OWNOPT=ownrc
rc web replicas=2 sel='{"app":"web","tier":"fe"}' tmpl='{"app":"web","tier":"fe"}'
rs web replicas=9
pod web-o orphan=1 labels='{"app":"web","tier":"fe"}'
pod web-n orphan=1 labels='{"app":"web"}'
synced replicationcontrollers
expect "ReplicationController adopts an orphan matching every selector label (not one with a subset); replicasets events are ignored in this mode" <<'EOF'
ops == ["adopt", "end"]
and adopted == ["web-o"]
and one("adopt").owner.kind == "ReplicationController"
and untouched("web-n")
EOF

case_ rc-claims-by-uid --once ns/web $T --kind ReplicationController
OWNOPT=ownrc
rc web replicas=2
pod web-a
pod web-r ctl=ReplicaSet/web/uid-rc-web
synced replicationcontrollers
expect "a pod whose controllerRef has our UID but kind ReplicaSet: upstream claims by UID (ClaimObject compares controllerRef.UID only), so it counts as ours" <<'EOF'
ops == ["status", "end"] and status.replicas == 2
EOF

### the event stream ###########################################################

case_ malformed-lines --once ns/web $T
raw 'this is not JSON'
raw '{"type":"ADDED","resource":"pods","object":{"metadata":'
rs web replicas=3
raw ''
raw '[]'
raw '"string"'
raw '{"type":"ADDED","object":{"metadata":{"name":"web-x","namespace":"ns"}}}'
raw '{"type":"BOGUS","resource":"pods","object":{"metadata":{"name":"web-x","namespace":"ns"}}}'
raw '{"type":"ADDED","resource":"pods"}'
raw '{"type":"ADDED","resource":"pods","object":[]}'
raw '{"type":"ADDED","resource":"pods","object":{"metadata":{"name":"web-nons","labels":{"app":"web"}}}}'
raw '{"type":"ADDED","resource":"replicasets","object":{"metadata":{"namespace":"ns"}}}'
pod web-a
raw '{"type":"MODIFIED","resource":"replicasets","object":{"metadata":{"name":"web","namespace":"ns","uid":"uid-rs-web"'
synced
expect "malformed lines (not JSON, truncated, no type/resource/object, unknown type, object without name or namespace) are skipped and the rest of the stream is used: 1 pod of 3, create 2" <<'EOF'
ops == ["create", "status", "end"] and count == 2 and status.replicas == 1
and one("create").owner.resourceVersion == "100"
EOF

case_ oversized-line --once ns/web $T --max-line 2048
rs web replicas=2
pod web-a
pod web-big merge="{\"metadata\":{\"annotations\":{\"note\":\"$(printf '%04096d' 0)\"}}}"
synced
expect "a line longer than --max-line is skipped (the big pod is never seen), the next lines still read: create 1" <<'EOF'
ops == ["create", "status", "end"] and count == 1 and status.replicas == 1
EOF

case_ unknown-resource --once ns/web $T
rs web replicas=2
pod web-a
raw '{"type":"ADDED","resource":"deployments","object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ns","uid":"uid-dep-web","resourceVersion":"5"},"spec":{"replicas":9,"selector":{"matchLabels":{"app":"web"}}}}}'
rc web replicas=9
raw '{"type":"DELETED","resource":"configmaps","object":{"metadata":{"name":"web","namespace":"ns","uid":"uid-cm"}}}'
raw '{"type":"SYNCED","resource":"deployments"}'
synced
expect "events of other resources (deployments, replicationcontrollers in ReplicaSet mode, configmaps) are ignored, even under the same name" <<'EOF'
ops == ["create", "status", "end"] and count == 1 and owner_is("ReplicaSet"; "uid-rs-web")
EOF

case_ pod-modified-new-uid --once ns/web $T
rs web replicas=1
pod web-a created=-3000 ready=-3000
pod web-b created=-2000 ready=-2000
synced
pod web-a ev=MODIFIED uid=uid-web-a-2 rv=300 created=-100 ready=-50
expect "a pod recreated under the same name (MODIFIED with a new UID) replaces the old one: the delete names the new UID" <<'EOF'
ops == ["delete", "status", "end"]
and one("delete").pods == [{name: "web-a", uid: "uid-web-a-2"}]
EOF

case_ pod-modified-orphaned --once ns/web $T
rs web replicas=2
pod web-a
pod web-b
synced
pod web-b ev=MODIFIED rv=300 orphan=1 labels='{"app":"other"}'
expect "a pod whose controllerRef was removed and labels changed is neither ours nor adoptable: create 1" <<'EOF'
ops == ["create", "status", "end"] and count == 1 and untouched("web-b")
EOF

case_ pod-deleted --once ns/web $T
rs web replicas=3 status="$FULL3"
pod web-a
pod web-b
pod web-c
synced
pod web-c ev=DELETED
expect "a DELETED pod leaves the cache: create 1" <<'EOF'
ops == ["create", "status", "end"] and count == 1 and status.replicas == 2
EOF

case_ pod-deleted-final-state-unknown --once ns/web $T
rs web replicas=3 status="$FULL3"
pod web-a
pod web-b
pod web-c
synced
pod web-b ev=DELETED unknown=1 labels='{"app":"stale"}' rv=150
pod web-zz ev=DELETED unknown=1
expect "DELETED with final_state_unknown (a relist tombstone, object possibly stale) removes the pod all the same; one for an unknown pod is harmless" <<'EOF'
ops == ["create", "status", "end"] and count == 1 and status.replicas == 2
EOF

case_ watch-after-synced --once ns/web $T
synced
rs web replicas=2
pod web-a
pod web-a ev=MODIFIED rv=201 ready=no
expect "events after SYNCED update the cache like listed ones: the pod's MODIFIED readiness is what status reports" <<'EOF'
ops == ["create", "status", "end"] and count == 1
and status.replicas == 1 and (status | has("readyReplicas") | not)
EOF

case_ bookmarks-change-nothing --once ns/web $T
rs web replicas=5
raw '{"type":"BOOKMARK","resource":"pods","at":1767225590.5,"resourceVersion":"150"}'
pod web-a
pod web-b
raw '{"type":"SYNCED","resource":"pods","at":1767225591.5,"resourceVersion":"210"}'
raw '{"type":"SYNCED","resource":"replicasets","resourceVersion":"205"}'
raw '{"type":"BOOKMARK","resource":"replicasets","at":1767225592.5,"resourceVersion":"300"}'
raw '{"type":"BOOKMARK","resource":"pods","resourceVersion":"301"}'
raw '{"type":"BOOKMARK","resource":"deployments","resourceVersion":"302"}'
raw '{"type":"BOOKMARK","resource":"pods"}'
pod web-c ev=MODIFIED rv=303 deleted=-1
raw '{"type":"BOOKMARK","resource":"pods","resourceVersion":"304"}'
expect "BOOKMARK lines (rs-watch's read position; before and after SYNCED, of other resources, without resourceVersion) and SYNCED lines with a resourceVersion change no object and queue nothing: 2 of 5 as without them, create 3; a terminating pod after them still counts" <<'EOF'
ops == ["create", "status", "end"]
and count == 3
and status == {replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2, terminatingReplicas: 1, observedGeneration: 1}
EOF

### event times (doc/intents.md, end) ##########################################

case_ event-at-earliest --once ns/web $T
rs web replicas=2
pod other-a ctl=ReplicaSet/other/uid-rs-other at=-40
pod web-a at=-19.5
pod web-b at=-10
synced
expect "the end carries the \"at\" of the earliest event that queued the key (web-a's, fraction kept), not of an event for another controller, nor of one without \"at\"; sent_at is --now" <<'EOF'
ops == ["status", "end"]
and fin.event_at == ("2026-01-01T00:09:40Z" | fromdateiso8601) + 0.5
and fin.sent_at == ("2026-01-01T00:10:00Z" | fromdateiso8601)
EOF

case_ event-at-absent --once ns/web $T
rs web replicas=2
pod web-a
pod web-b
synced
expect "events without \"at\" (a recording older than it): no event_at on the end, sent_at all the same" <<'EOF'
ops == ["status", "end"]
and (fin | has("event_at") | not)
and fin.sent_at == ("2026-01-01T00:10:00Z" | fromdateiso8601)
EOF

case_ event-at-deleted --once ns/web $T
rs web replicas=2 at=-30
synced
rs web ev=DELETED at=-5
expect "a deleted controller's last end carries the earliest event not acted on: its ADDED" <<'EOF'
ops == ["end"] and (fin | has("owner") | not)
and fin.event_at == ("2026-01-01T00:09:30Z" | fromdateiso8601)
EOF

flush
