# a pod whose controllerRef was removed and labels changed is neither ours nor adoptable: create 1
include "replay";
ops == ["create", "status", "end"] and count == 1 and untouched("web-b")
