# ready without lastTransitionTime is not available when minReadySeconds > 0; no pod gives a next check, so the fallback is minReadySeconds
include "replay";
ops == ["status", "end"]
and status.readyReplicas == 2 and status.availableReplicas == 1
and requeue >= 10 and requeue <= 10.1
