# release and adopt in one round: both emitted, then end only
include "replay";
(ops | sort) == ["adopt", "end", "release"] and ops[-1] == "end"
and adopted == ["web-o"] and released == ["web-b"]
