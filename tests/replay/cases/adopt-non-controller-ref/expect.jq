# an ownerReference without controller: true is not a controllerRef: the pod is an orphan and adopted
include "replay";
ops == ["adopt", "end"] and adopted == ["web-o"]
