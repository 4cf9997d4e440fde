# unknown selector operator: the sync is skipped (end only, no status)
include "replay";
ops == ["end"] and fin.owner.uid == "uid-rs-web"
