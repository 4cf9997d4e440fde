# gen.jq: the events of one case, for tests/replay/gen.sh. Run as
# jq -rR --arg now RFC3339 -f gen.jq over spec lines, one an event:
#   KIND<TAB>NAME<TAB>key=value<TAB>...   KIND rs, rc or pod: an event line
#   raw<TAB>TEXT                          TEXT as is
# The keys are the options of gen.sh's rs, rc and pod functions. A time is
# either seconds relative to $now ("-600", "5") or an RFC 3339 string.

split("\t") as $f
| $f[0] as $kind
| if $kind == "raw" then $f[1:] | join("\t") else

($f[2:] | map(capture("^(?<key>[^=]*)=(?<value>.*)$")) | from_entries
    + {name: $f[1]}) as $A
|
def opt($k): $A[$k];
def given($k): $A | has($k);
def json($k; $d): if given($k) then opt($k) | fromjson else $d end;
def t($v): if ($v | test("T")) then $v
	else ($now | fromdateiso8601) + ($v | tonumber) | todateiso8601 end;
def time_or($k; $d): if given($k) then t(opt($k)) else t($d) end;
def ns: opt("ns") // "ns";

# ownerReferences from own=NAME (ReplicaSet), ownrc=NAME, ctl=KIND/NAME/UID
# (controller), nonctl=KIND/NAME/UID (not a controller).
def ref($s; $ctl):
	($s | split("/")) as $p
	| {apiVersion: (if $p[0] == "ReplicaSet" then "apps/v1"
	      elif $p[0] == "ReplicationController" then "v1"
	      elif $p[0] == "StatefulSet" or $p[0] == "Deployment" then "apps/v1"
	      else "v1" end),
	   kind: $p[0], name: $p[1], uid: $p[2], controller: $ctl,
	   blockOwnerDeletion: $ctl};
def owner_refs:
	[ (if given("own") then ref("ReplicaSet/\(opt("own"))/uid-rs-\(opt("own"))"; true) else empty end),
	  (if given("ownrc") then ref("ReplicationController/\(opt("ownrc"))/uid-rc-\(opt("ownrc"))"; true) else empty end),
	  (if given("ctl") then ref(opt("ctl"); true) else empty end),
	  (if given("nonctl") then ref(opt("nonctl"); false) else empty end) ]
	| if length > 0 then {ownerReferences: .} else {} end;

def deletion:
	if given("deleted") then {deletionTimestamp: t(opt("deleted")),
	    deletionGracePeriodSeconds: 30} else {} end;

def created:
	if given("created") and opt("created") == "" then {}
	else {creationTimestamp: time_or("created"; "-1200")} end;

# ready=SECONDS|TIME (Ready since), ready=no, ready=none (no conditions),
# ready=nolt (Ready without lastTransitionTime). Default: ready 600 s ago.
def is_ready: (opt("ready") // "-600") | . != "no" and . != "none";
def conditions:
	(opt("ready") // "-600") as $r
	| if $r == "none" then []
	  elif $r == "no" then [{type: "Ready", status: "False",
	      lastTransitionTime: t(if (opt("created") // "") == "" then "-1200" else opt("created") end)}]
	  elif $r == "nolt" then [{type: "Ready", status: "True"}]
	  else [{type: "Ready", status: "True", lastTransitionTime: t($r)}] end;

def pod:
	(opt("name")) as $name
	| {apiVersion: "v1", kind: "Pod",
	   metadata: ({name: $name, namespace: ns,
	       uid: (opt("uid") // "uid-\($name)"),
	       resourceVersion: (opt("rv") // "200")}
	     + created
	     + {labels: json("labels"; {app: "web"})}
	     + (if given("cost") then {annotations:
	         {"controller.kubernetes.io/pod-deletion-cost": opt("cost")}} else {} end)
	     + owner_refs + deletion),
	   spec: ({containers: [{name: "c", image: "nginx"}]}
	     + (if given("sidecar_restarts") or given("init_restarts") then {initContainers: [
	         (if given("init_restarts") then {name: "init", image: "busybox"} else empty end),
	         (if given("sidecar_restarts") then {name: "side", image: "busybox", restartPolicy: "Always"} else empty end)
	       ]} else {} end)
	     + (if (opt("node") // "node-1") == "" then {} else {nodeName: (opt("node") // "node-1")} end)),
	   status: ({phase: (opt("phase") // "Running"),
	       conditions: conditions,
	       containerStatuses: [{name: "c", image: "nginx", ready: is_ready,
	           restartCount: ((opt("restarts") // "0") | tonumber)}]}
	     + (if given("sidecar_restarts") or given("init_restarts") then {initContainerStatuses: [
	         (if given("init_restarts") then {name: "init", image: "busybox", ready: false,
	             restartCount: (opt("init_restarts") | tonumber)} else empty end),
	         (if given("sidecar_restarts") then {name: "side", image: "busybox", ready: true,
	             restartCount: (opt("sidecar_restarts") | tonumber)} else empty end)
	       ]} else {} end))}
	| if (.status.conditions | length) == 0 then del(.status.conditions) else . end;

def template:
	{metadata: {labels: json("tmpl"; {app: "web"})},
	 spec: {containers: [{name: "c", image: "nginx"}]}};

# owner=UID: the controller's own controllerRef (a Deployment named dep).
def ctrl($apiv; $k; $sel):
	(opt("name")) as $name
	| {apiVersion: $apiv, kind: $k,
	   metadata: ({name: $name, namespace: ns,
	       uid: (opt("uid") // "uid-\(if $k == "ReplicaSet" then "rs" else "rc" end)-\($name)"),
	       resourceVersion: (opt("rv") // "100"),
	       generation: ((opt("gen") // "1") | tonumber)}
	     + created
	     + (if given("owner") then {ownerReferences: [ref("Deployment/dep/\(opt("owner"))"; true)]} else {} end)
	     + deletion),
	   spec: ({replicas: ((opt("replicas") // "3") | tonumber)}
	     + (if given("minready") then {minReadySeconds: (opt("minready") | tonumber)} else {} end)
	     + {selector: $sel, template: template}),
	   status: json("status"; {replicas: 0})};

def object:
	if $kind == "pod" then pod
	elif $kind == "rs" then ctrl("apps/v1"; "ReplicaSet"; json("sel"; {matchLabels: {app: "web"}}))
	else ctrl("v1"; "ReplicationController"; json("sel"; {app: "web"})) end
	| . * json("merge"; {});

# at=TIME: rs-watch's stamp of when it read the event, in Unix seconds
# (relative ones keep their fraction).
def at:
	opt("at") as $v
	| if ($v | test("T")) then $v | fromdateiso8601
	  else ($now | fromdateiso8601) + ($v | tonumber) end;
{type: (opt("ev") // "ADDED"),
 resource: ({pod: "pods", rs: "replicasets", rc: "replicationcontrollers"}[$kind])}
+ (if given("at") then {at: at} else {} end)
+ {object: object}
+ (if opt("unknown") == "1" then {final_state_unknown: true} else {} end)
| tojson end
