# every matching orphan is adopted, even beyond replicas (the next round scales down)
include "replay";
ops == ["adopt", "adopt", "adopt", "end"] and adopted == ["web-o1", "web-o2", "web-o3"]
