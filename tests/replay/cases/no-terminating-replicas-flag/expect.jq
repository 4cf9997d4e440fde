# --no-terminating-replicas (feature off): status has no terminatingReplicas field
include "replay";
ops == ["status", "end"]
and status == {replicas: 1, fullyLabeledReplicas: 1, readyReplicas: 1, availableReplicas: 1, observedGeneration: 1}
