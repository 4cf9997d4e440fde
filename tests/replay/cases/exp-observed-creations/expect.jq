# 2 creations expected and both pods arrived in the stream: satisfied, create the 2 still missing
include "replay";
ops == ["create", "status", "end"] and count == 2
