# the controller lists pods of its own namespace only: a pod elsewhere whose controllerRef carries our UID is not counted (nothing to delete)
include "replay";
ops == ["status", "end"]
and status.replicas == 1
and untouched("web-x")
