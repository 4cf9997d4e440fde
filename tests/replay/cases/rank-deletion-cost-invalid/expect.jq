# an invalid deletion cost (not a number, beyond int32) counts as 0: both go before cost 1, then by readiness age
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-c", "web-a"]
