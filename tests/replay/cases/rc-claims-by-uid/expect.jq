# a pod whose controllerRef has our UID but kind ReplicaSet: upstream claims by UID (ClaimObject compares controllerRef.UID only), so it counts as ours
include "replay";
ops == ["status", "end"] and status.replicas == 2
