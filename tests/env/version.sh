# The pinned Kubernetes release; go.mod must name the same versions.
K8S_VERSION=v1.36.3
K8S_MAJOR=1
K8S_MINOR=36
ETCD_VERSION=v3.6.8
