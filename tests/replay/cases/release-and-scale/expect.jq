# an owned pod that stopped matching is released, and scaling proceeds in the same round (1 left of 2: create 1)
include "replay";
ops == ["release", "create", "status", "end"]
and released == ["web-b"]
and one("release").pod == {name: "web-b", uid: "uid-web-b"}
and count == 1
and status.replicas == 1
