# ready exactly minReadySeconds ago: nextPodAvailabilityCheck is 0, not positive, so no pod gives a check and upstream falls back to minReadySeconds
include "replay";
requeue >= 10 and requeue <= 10.1
