# 2 of 5: create 3; status counts the 2 (ready, available, fully labeled)
include "replay";
ops == ["create", "status", "end"]
and count == 3
and status == {replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2, terminatingReplicas: 0, observedGeneration: 1}
