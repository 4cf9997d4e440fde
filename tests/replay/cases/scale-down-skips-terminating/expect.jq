# a terminating pod is not active: it is neither counted nor chosen; 3 active of 2, the newest active goes
include "replay";
ops == ["delete", "status", "end"]
and deleted == ["web-c"]
and status.replicas == 3 and status.terminatingReplicas == 1
