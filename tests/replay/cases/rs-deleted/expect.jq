# the ReplicaSet was deleted: end only, without owner
include "replay";
ops == ["end"] and (fin | has("owner") | not) and fin.key == "ns/web" and no_requeue
