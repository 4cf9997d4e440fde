# LogarithmicScaleDown: created 100 s (bucket 36) and 200 s (bucket 37) ago: different buckets, the newer goes despite its higher UID
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-new"]
