# only active sibling pods count for co-location: terminating and Succeeded ones on n1 do not
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-1-b"]
