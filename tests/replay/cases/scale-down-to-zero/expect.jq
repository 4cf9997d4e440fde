# replicas 0: every pod deleted
include "replay";
ops == ["delete", "status", "end"]
and (deleted | sort) == ["web-a", "web-b", "web-c"]
and status.replicas == 3
