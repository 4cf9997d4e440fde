# rule 8: a pod without creationTimestamp goes before any dated one (afterOrZero)
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-a"]
