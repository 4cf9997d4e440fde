# events after SYNCED update the cache like listed ones: the pod's MODIFIED readiness is what status reports
include "replay";
ops == ["create", "status", "end"] and count == 1
and status.replicas == 1 and (status | has("readyReplicas") | not)
