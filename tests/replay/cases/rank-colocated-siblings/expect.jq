# rule 5: the pod on the node with more active pods of sibling ReplicaSets (same Deployment) goes first: n1 has 3, n2 has 1
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-1-a"]
