# claiming does not wait for expectations: a matching orphan is adopted while creations are pending
include "replay";
ops == ["adopt", "end"] and adopted == ["web-o"]
