# ReplicationController: map selector, owner apiVersion v1, create 2; status without terminatingReplicas
include "replay";
ops == ["create", "status", "end"]
and count == 2
and one("create").owner == {apiVersion: "v1", kind: "ReplicationController", namespace: "ns", name: "web", uid: "uid-rc-web", resourceVersion: "100"}
and owner_is("ReplicationController"; "uid-rc-web")
and status == {replicas: 1, fullyLabeledReplicas: 1, readyReplicas: 1, availableReplicas: 1, observedGeneration: 1}
