package main

// Upstream's side of tests/bench/cel_compile_bench.cpp: the same three selectors compiled as the API
// server compiles a new object (type check, output type, program, static cost estimate).
//
//	go test -run '^$' -bench UpstreamCompile ./cel   (docs/PERFORMANCE.md "Compiling a selector")

import (
	"fmt"
	"testing"
)

var benchSelectors = []string{
	`device.driver == "gpu.example.com"`,
	`device.attributes["gpu.example.com"].model == "h100" && ` +
		`device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`,
	`device.attributes["nic.example.com"].tags.exists(t, t.startsWith("rdma"))`,
}

func BenchmarkUpstreamCompile(b *testing.B) {
	for i, selector := range benchSelectors {
		b.Run(fmt.Sprint(i), func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				if result := upstreamCompile(selector, false); result.Error != nil {
					b.Fatal(result.Error)
				}
			}
		})
	}
}
