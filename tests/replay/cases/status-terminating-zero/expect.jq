# terminatingReplicas is reported even when 0 (ReplicaSet): a cached status without it is written
include "replay";
ops == ["status", "end"]
and status.terminatingReplicas == 0
and (old_status | has("terminatingReplicas") | not)
and status.readyReplicas == 3
