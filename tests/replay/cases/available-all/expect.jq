# every ready pod available: no requeue_after
include "replay";
ops == ["status", "end"]
and status.readyReplicas == 2 and status.availableReplicas == 2
and no_requeue
