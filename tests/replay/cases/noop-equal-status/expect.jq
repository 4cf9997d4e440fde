# nothing to do and the cached status equals the computed one: end only
include "replay";
ops == ["end"] and no_requeue and fin.owner.uid == "uid-rs-web"
