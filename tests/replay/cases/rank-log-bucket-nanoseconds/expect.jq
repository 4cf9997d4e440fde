# buckets are log2 of NANOSECONDS: 260 s is bucket 37 and 280 s bucket 38 (2^38 ns = 274.88 s), so the newer goes; in seconds both would be bucket 8 and the UID would pick the older
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-new"]
