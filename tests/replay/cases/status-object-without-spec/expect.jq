# the status intent carries the cached object (labels, annotations, resourceVersion: the metadata whole) minus managedFields and minus spec (a /status write keeps the stored spec), with the new status
include "replay";
one("status").object as $o
| ops == ["status", "end"]
and ($o.metadata | has("managedFields") | not)
and $o.metadata.labels == {team: "a"} and $o.metadata.annotations == {note: "keep"}
and $o.metadata.resourceVersion == "777" and $o.metadata.uid == "uid-rs-web"
and ($o | has("spec") | not) and $o.kind == "ReplicaSet" and $o.apiVersion == "apps/v1"
and $o.status.readyReplicas == 2
and one("status").owner.resourceVersion == "777"
