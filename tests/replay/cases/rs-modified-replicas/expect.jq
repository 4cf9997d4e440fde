# the latest MODIFIED wins: replicas 3 then 1, delete 2 (newest first); observedGeneration follows generation 2
include "replay";
ops == ["delete", "status", "end"]
and deleted == ["web-a", "web-b"]
and status.observedGeneration == 2
and one("delete").owner.resourceVersion == "101"
