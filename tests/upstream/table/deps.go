//go:build numadra_table_deps

// The packages upstream's allocator test table imports, so that `go mod tidy` pins them in
// go.mod and go.sum: the table is compiled from a copy of the module (see main.go), with
// this module's go.sum, and must never fetch anything unpinned.
package main

import (
	_ "github.com/onsi/gomega"
	_ "github.com/onsi/gomega/gstruct"
	_ "k8s.io/component-helpers/nodedeclaredfeatures/features/draoptionalnodeoperations"
	_ "k8s.io/klog/v2/ktesting"
)
