# one of two awaited deletions observed: not satisfied, no create; status still written
include "replay";
ops == ["status", "end"] and status.replicas == 2
