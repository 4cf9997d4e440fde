# --burst-replicas 2 caps deletions too: the 2 first-ranked (newest) of 5
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-a", "web-b"]
