// Command etcd is the etcd server of the release that k8s.io/kubernetes pins,
// built from go.etcd.io/etcd/server/v3 so that the test environment needs
// nothing but the Go module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
