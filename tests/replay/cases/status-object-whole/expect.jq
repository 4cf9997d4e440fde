# the status intent carries the whole cached object (labels, annotations, spec, resourceVersion) minus managedFields, with the new status
include "replay";
one("status").object as $o
| ops == ["status", "end"]
and ($o.metadata | has("managedFields") | not)
and $o.metadata.labels == {team: "a"} and $o.metadata.annotations == {note: "keep"}
and $o.metadata.resourceVersion == "777" and $o.metadata.uid == "uid-rs-web"
and $o.spec.replicas == 3 and $o.spec.selector == {matchLabels: {app: "web"}}
and $o.status.readyReplicas == 2
and one("status").owner.resourceVersion == "777"
