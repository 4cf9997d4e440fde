# generation 5, observedGeneration 4, counts equal: status written with observedGeneration 5
include "replay";
ops == ["status", "end"] and status.observedGeneration == 5 and status.replicas == 3
