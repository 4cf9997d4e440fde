# malformed lines (not JSON, truncated, no type/resource/object, unknown type, object without name or namespace) are skipped and the rest of the stream is used: 1 pod of 3, create 2
include "replay";
ops == ["create", "status", "end"] and count == 2 and status.replicas == 1
and one("create").owner.resourceVersion == "100"
