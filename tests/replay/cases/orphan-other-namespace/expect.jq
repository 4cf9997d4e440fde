# an orphan in another namespace is not adopted: create 2
include "replay";
ops == ["create", "status", "end"] and count == 2 and untouched("web-o")
