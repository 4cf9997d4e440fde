# rule 6: ready for less time goes first, before restarts (rule 7) and creation time (rule 8) that favour the other
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-a"]
