# ReplicaSet with deletionTimestamp: owned pods that stopped matching are not released, extra pods not deleted
include "replay";
ops == ["status", "end"]
and status.replicas == 2
and untouched("web-x") and untouched("web-a") and untouched("web-b")
