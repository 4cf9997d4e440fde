# a Ready transition 5 s in the future (clock skew): not available; FindMinNextPodAvailabilityCheck gives 15 s (the only pod's check, not capped at minReadySeconds)
include "replay";
ops == ["status", "end"]
and status.readyReplicas == 1 and (status | has("availableReplicas") | not)
and requeue >= 15 and requeue <= 15.1
