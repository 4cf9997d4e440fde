# fullyLabeledReplicas counts pods carrying every template label (extra labels allowed): 2 of 4
include "replay";
ops == ["status", "end"]
and status.replicas == 4 and status.fullyLabeledReplicas == 2 and status.readyReplicas == 4
