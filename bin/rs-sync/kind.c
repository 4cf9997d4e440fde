#include "kind.h"

const struct kind kind_replicaset = {
	"ReplicaSet", "apps/v1", "replicasets", 0, 1,
};

const struct kind kind_replicationcontroller = {
	"ReplicationController", "v1", "replicationcontrollers", 1, 0,
};
