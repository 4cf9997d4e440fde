# --burst-replicas 7: 9 missing, 7 created
include "replay";
ops == ["create", "status", "end"] and count == 7 and status.replicas == 1
