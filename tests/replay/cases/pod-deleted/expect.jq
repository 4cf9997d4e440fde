# a DELETED pod leaves the cache: create 1
include "replay";
ops == ["create", "status", "end"] and count == 1 and status.replicas == 2
