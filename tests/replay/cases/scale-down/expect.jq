# 5 of 2: delete the 3 newest (same readiness, creation ages in different log2 buckets), newest first; status still counts 5
include "replay";
ops == ["delete", "status", "end"]
and deleted == ["web-a", "web-b", "web-c"]
and one("delete").pods[0] == {name: "web-a", uid: "uid-web-a"}
and status.replicas == 5
