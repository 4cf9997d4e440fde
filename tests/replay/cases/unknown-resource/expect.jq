# events of other resources (deployments, replicationcontrollers in ReplicaSet mode, configmaps) are ignored, even under the same name
include "replay";
ops == ["create", "status", "end"] and count == 1 and owner_is("ReplicaSet"; "uid-rs-web")
