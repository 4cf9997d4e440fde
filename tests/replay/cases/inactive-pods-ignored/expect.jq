# Succeeded, Failed and deleting pods are not active: 1 active of 3, create 2; terminatingReplicas counts owned, matching, deleting, non-terminal pods (2)
include "replay";
ops == ["create", "status", "end"]
and count == 2
and status.replicas == 1
and status.terminatingReplicas == 2
and untouched("web-tx") and untouched("web-to")
