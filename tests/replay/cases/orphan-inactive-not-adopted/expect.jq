# orphans being deleted, Succeeded or Failed are not adopted; scaling goes on: create 2
include "replay";
ops == ["create", "status", "end"]
and count == 2
and untouched("web-o1") and untouched("web-o2") and untouched("web-o3")
and status.terminatingReplicas == 0
