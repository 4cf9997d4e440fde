# burstReplicas (500) caps one round: replicas 1200 from 0 creates 500
include "replay";
ops == ["create", "status", "end"] and count == 500
