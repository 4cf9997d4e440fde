# pods of a ReplicaSet under another Deployment do not count: equal rank, the pod ready for less time goes
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-1-b"]
