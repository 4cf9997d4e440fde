# requeue_after is the soonest availability among pods (3 s left of 10), plus 0.1
include "replay";
ops == ["status", "end"]
and status.readyReplicas == 3 and status.availableReplicas == 1
and near(requeue; 3.1)
