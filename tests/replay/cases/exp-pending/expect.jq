# 2 creations expected, 1 observed (web-a): not satisfied, so no create; status is still computed and written
include "replay";
ops == ["status", "end"]
and status.replicas == 1
