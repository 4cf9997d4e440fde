# a ReplicaSet without controllerRef has no related pods (getReplicaSetsWithSameController): every rank 0, the doubled-up node does not matter
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-b"]
