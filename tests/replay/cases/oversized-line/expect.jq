# a line longer than --max-line is skipped (the big pod is never seen), the next lines still read: create 1
include "replay";
ops == ["create", "status", "end"] and count == 1 and status.replicas == 1
