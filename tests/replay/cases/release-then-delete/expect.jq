# release the non-matching pod, then scale down the matching ones (newest first)
include "replay";
ops == ["release", "delete", "status", "end"]
and released == ["web-b"]
and deleted == ["web-a"]
and status.replicas == 2
