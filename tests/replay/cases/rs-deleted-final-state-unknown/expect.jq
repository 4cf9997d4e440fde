# a ReplicaSet tombstone (DELETED, final_state_unknown) deletes it all the same: end only, without owner
include "replay";
ops == ["end"] and (fin | has("owner") | not)
