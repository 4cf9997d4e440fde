# a matching pod controlled by a StatefulSet is never counted, adopted or released
include "replay";
ops == ["create", "status", "end"]
and count == 1 and status.replicas == 1
and untouched("db-0")
