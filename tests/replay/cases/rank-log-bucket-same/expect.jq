# LogarithmicScaleDown: created 300 s and 500 s ago, same bucket (2^38 ns = 274.9 s .. 549.8 s): ordered by UID, so the older pod with the lower UID goes
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-old"]
