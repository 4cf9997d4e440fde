# DELETED with final_state_unknown (a relist tombstone, object possibly stale) removes the pod all the same; one for an unknown pod is harmless
include "replay";
ops == ["create", "status", "end"] and count == 1 and status.replicas == 2
