# same name, new UID (deleted and recreated): the old incarnation's pods are not counted nor adopted; create 2 for the new UID
include "replay";
ops == ["create", "status", "end"]
and count == 2
and owner_is("ReplicaSet"; "uid-rs-web-2")
and status.replicas == 0
