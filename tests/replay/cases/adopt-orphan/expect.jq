# a matching orphan is adopted; a round with adoptions emits only adopt (and release) then end: no create, no status
include "replay";
ops == ["adopt", "end"]
and adopted == ["web-o"]
and one("adopt").pod == {name: "web-o", uid: "uid-web-o"}
and one("adopt").owner.uid == "uid-rs-web"
and untouched("web-n")
and no_requeue
