# a sync without manage error removes the ReplicaFailure condition: status written without it, old_status keeps it
include "replay";
ops == ["status", "end"]
and ([status.conditions // [] | .[] | select(.type == "ReplicaFailure")] | length) == 0
and old_status.conditions[0].type == "ReplicaFailure"
and status.readyReplicas == 3
