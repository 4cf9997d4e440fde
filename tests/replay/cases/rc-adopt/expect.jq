# ReplicationController adopts an orphan matching every selector label (not one with a subset); replicasets events are ignored in this mode
include "replay";
ops == ["adopt", "end"]
and adopted == ["web-o"]
and one("adopt").owner.kind == "ReplicationController"
and untouched("web-n")
