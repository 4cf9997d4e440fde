# status only: one pod lost readiness, readyReplicas/availableReplicas 3 -> 2, no create or delete
include "replay";
ops == ["status", "end"]
and status == {replicas: 3, fullyLabeledReplicas: 3, readyReplicas: 2, availableReplicas: 2, terminatingReplicas: 0, observedGeneration: 1}
and old_status.readyReplicas == 3
