# matchLabels and matchExpressions together: web-c (canary) no longer matches and is released; web-o (tier be) is not adopted
include "replay";
ops == ["release", "status", "end"]
and released == ["web-c"]
and status.replicas == 2 and status.fullyLabeledReplicas == 1
and untouched("web-o")
