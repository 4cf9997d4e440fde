# rule 8: the newer pod goes first
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-a"]
