# zero ready and available counts are omitted (omitempty), not written as 0
include "replay";
ops == ["status", "end"]
and status == {replicas: 2, fullyLabeledReplicas: 2, terminatingReplicas: 0, observedGeneration: 1}
