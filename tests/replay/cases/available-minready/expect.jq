# minReadySeconds 10: ready 60 s is available, ready 5 s is not; requeue when the next one becomes available: 5 s + 0.1
include "replay";
ops == ["status", "end"]
and status.readyReplicas == 2 and status.availableReplicas == 1 and status.replicas == 3
and near(requeue; 5.1)
