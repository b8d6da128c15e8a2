//go:build tools

// Package peers pins the peers' kubelet plugins that scripts/bench-peers.sh builds and runs
// beside ours (README.md). Nothing here is shipped or imported by the project.
package peers

import (
	_ "sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin"
)
