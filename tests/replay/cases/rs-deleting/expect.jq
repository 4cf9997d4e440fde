# ReplicaSet with deletionTimestamp: no create for the missing 2, no adopt of the matching orphan; status still written
include "replay";
ops == ["status", "end"]
and status.replicas == 1
and untouched("web-o")
