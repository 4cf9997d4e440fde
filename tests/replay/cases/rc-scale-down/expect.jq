# ReplicationController scale down with a terminating pod: delete the newer, status has no terminatingReplicas
include "replay";
ops == ["delete", "status", "end"]
and deleted == ["web-a"]
and status.replicas == 2
and (status | has("terminatingReplicas") | not)
