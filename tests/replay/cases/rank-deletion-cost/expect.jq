# rule 4: lower controller.kubernetes.io/pod-deletion-cost first (-5, then none = 0), before readiness age
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-b", "web-c"]
