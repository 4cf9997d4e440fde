# no pods, replicas 3: one create of 3 from the template, then status (replicas 0, zero counts omitted, terminatingReplicas 0) and end
include "replay";
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
