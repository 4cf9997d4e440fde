# rule 3: not ready before ready (the ready one is newer and restarted more)
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-a"]
