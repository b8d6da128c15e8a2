//go:build upstreamsources

package main

// Modules whose _test.go files upstream-cel reads (upstreamtests.go) without linking any of their
// code: this file, never built (the build tag is never set), keeps them required in go.mod, so
// `go mod tidy` does not drop them and `go mod download` fetches exactly the pinned version, its
// checksum in go.sum. k8s.io/apiextensions-apiserver: the CRD validation and cost-stability tests.
import _ "k8s.io/apiextensions-apiserver/pkg/features"
