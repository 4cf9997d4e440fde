# ready exactly minReadySeconds ago: not yet available (IsPodAvailable wants lastTransitionTime + minReadySeconds strictly before now)
include "replay";
ops == ["status", "end"]
and status.readyReplicas == 1 and (status | has("availableReplicas") | not)
