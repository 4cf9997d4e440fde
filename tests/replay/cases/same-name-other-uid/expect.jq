# a pod owned by an earlier ReplicaSet of the same name (other UID) is not ours: not counted, not released
include "replay";
ops == ["create", "status", "end"]
and count == 1 and status.replicas == 1
and untouched("web-old")
