// etcd is the etcd server Kubernetes v1.37.2 pins (go.etcd.io/etcd/server/v3), built from the
// module proxy like the control plane; etcd's own command is only this call.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
