# minReadySeconds 0: every ready pod is available at once (even without lastTransitionTime); no requeue
include "replay";
ops == ["status", "end"]
and status.readyReplicas == 2 and status.availableReplicas == 2
and no_requeue
