# related pods are listed by the siblings' selectors: orphans matching a sibling count on their node (n1: 3, n2: 1)
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-1-a"]
