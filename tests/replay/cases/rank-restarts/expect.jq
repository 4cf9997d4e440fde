# rule 7: more container restarts first (same readiness time), before the newer creation
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-a"]
