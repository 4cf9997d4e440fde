# LogarithmicScaleDown on readiness: ready 300 s and 500 s ago fall in the same log2 bucket of nanoseconds (2^38), so the lower UID goes first (the longer-ready pod)
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-old"]
