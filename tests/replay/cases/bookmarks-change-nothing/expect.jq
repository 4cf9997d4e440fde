# BOOKMARK lines (rs-watch's read position; before and after SYNCED, of other resources, without resourceVersion) and SYNCED lines with a resourceVersion change no object and queue nothing: 2 of 5 as without them, create 3; a terminating pod after them still counts
include "replay";
ops == ["create", "status", "end"]
and count == 3
and status == {replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2, terminatingReplicas: 1, observedGeneration: 1}
