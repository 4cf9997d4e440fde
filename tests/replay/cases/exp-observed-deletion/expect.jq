# the awaited deletion is observed from the deletionTimestamp update: satisfied, replace it (create 1)
include "replay";
ops == ["create", "status", "end"]
and count == 1
and status.replicas == 2 and status.terminatingReplicas == 1
