# rule 7 with equal regular restarts compares restartable init containers (sidecars) only: web-a (sidecar 3 restarts) goes; web-b's plain init container restarts do not count
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-a"]
