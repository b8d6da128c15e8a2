// upstream-allocate: Kubernetes' own structured allocator
// (k8s.io/dynamic-resource-allocation/structured, every DRA feature on) as the judge of
// dra-allocate. Both read the same files; every claim must get the same answer.
//
//	upstream-allocate --dra-allocate BIN FILE_OR_DIR...      compare on these inputs
//	upstream-allocate --dra-allocate BIN --seeds N [--first S] --scratch DIR [--failures DIR]
//	                                                         compare on N generated inputs
//	upstream-allocate --dra-allocate BIN --scenarios DIR [--expectations FILE]
//	                                                         replay dra-allocate's scenarios
//	upstream-allocate --generate SEED                         print a generated input
//
// Exit status: 0 same answers, 1 a difference (the seed and the input's file are named),
// 2 the harness could not run.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"numadra.dev/tests/upstream/internal/oracle"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// inputs: the objects a run reads (shared with the other judges).
type inputs = oracle.Inputs

// ctx carries the upstream allocator's logger.
var ctx context.Context

func runtimeRaw(text string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(text)} }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	flags := flag.NewFlagSet("upstream-allocate", flag.ContinueOnError)
	draAllocate := flags.String("dra-allocate", "", "the dra-allocate binary to judge")
	node := flags.String("node", nodeName, "the node to allocate on")
	seeds := flags.Int("seeds", 0, "compare on this many generated inputs")
	first := flags.Uint64("first", 1, "the first seed")
	scratch := flags.String("scratch", "", "folder for the generated inputs")
	failures := flags.String("failures", "", "folder to keep the input of each difference in")
	generateSeed := flags.Int64("generate", -1, "print the input of this seed and exit")
	verbose := flags.Bool("v", false, "print every claim's answer")
	scenarios := flags.String("scenarios", "", "replay every scenario folder under this folder")
	expectations := flags.String("expectations", "", "the scenarios that are not the same, with why")
	logLevel := flags.Int("log", 0, "upstream allocator's log verbosity (7: every step)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	ctx = context.Background()
	if *logLevel > 0 {
		ctx = klog.NewContext(ctx, textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(*logLevel))))
	}
	if *generateSeed >= 0 {
		if err := writeInputs(os.Stdout, generate(uint64(*generateSeed))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	}
	if *draAllocate == "" {
		fmt.Fprintln(os.Stderr, "upstream-allocate: --dra-allocate is required")
		return 2
	}
	if *scenarios != "" {
		return runScenarios(*draAllocate, *scenarios, *expectations)
	}
	if *seeds > 0 {
		return runSeeds(*draAllocate, *first, *seeds, *scratch, *failures)
	}
	if flags.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "upstream-allocate: no inputs")
		return 2
	}
	return runFiles(*draAllocate, flags.Args(), *node, *verbose)
}

func runFiles(draAllocate string, paths []string, node string, verbose bool) int {
	in, err := oracle.LoadInputs(paths)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-allocate:", err)
		return 2
	}
	diff, _, err := compare(draAllocate, paths, node, in, verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-allocate:", err)
		return 2
	}
	if diff != "" {
		fmt.Printf("%s: dra-allocate and upstream differ\n%s\n", strings.Join(paths, " "), diff)
		return 1
	}
	fmt.Printf("%s: same answers\n", strings.Join(paths, " "))
	return 0
}

// compare returns the first difference ("" when none) and upstream's answers.
func compare(draAllocate string, paths []string, node string, in *inputs, verbose bool) (string, []outcome, error) {
	target := findNode(in, node)
	if target == nil {
		return "", nil, fmt.Errorf("no Node %q in the input", node)
	}
	upstream := upstreamOutcomes(allocateUpstream(ctx, in, target))
	ours, stderr, err := ourOutcomes(draAllocate, paths, node, in)
	if err != nil {
		return "", nil, err
	}
	if verbose {
		for _, o := range upstream {
			text, _ := json.Marshal(o)
			fmt.Printf("upstream: %s\n", text)
		}
	}
	lines := differences(upstream, ours)
	if len(lines) == 0 {
		return "", upstream, nil
	}
	return strings.Join(lines, "\n") + "\n  dra-allocate said: " + strings.TrimSpace(stderr), upstream, nil
}

func findNode(in *inputs, name string) *v1.Node {
	for _, node := range in.Nodes {
		if node.Name == name {
			return node
		}
	}
	return nil
}

func runSeeds(draAllocate string, first uint64, count int, scratch, failures string) int {
	if scratch == "" {
		fmt.Fprintln(os.Stderr, "upstream-allocate: --seeds needs --scratch")
		return 2
	}
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-allocate:", err)
		return 2
	}
	stats := map[string]int{}
	differing := 0
	for seed := first; seed < first+uint64(count); seed++ {
		in := generate(seed)
		path := filepath.Join(scratch, fmt.Sprintf("seed-%d.json", seed))
		if err := writeInputsFile(path, in); err != nil {
			fmt.Fprintln(os.Stderr, "upstream-allocate:", err)
			return 2
		}
		diff, upstream, err := compare(draAllocate, []string{path}, nodeName, in, false)
		if err != nil {
			fmt.Fprintf(os.Stderr, "upstream-allocate: seed %d: %v\n", seed, err)
			return 2
		}
		countOutcomes(stats, upstream)
		if diff == "" {
			os.Remove(path)
			continue
		}
		differing++
		fmt.Printf("seed %d: dra-allocate and upstream differ (input: %s)\n%s\n", seed, path, diff)
		if failures != "" {
			keepFailure(draAllocate, scratch, failures, seed, in)
		}
	}
	fmt.Printf("upstream-allocate: %d inputs (seeds %d-%d), %d claims: %d allocated, %d not, %d invalid; %d differ\n",
		count, first, first+uint64(count)-1, stats["claims"], stats["allocated"], stats["unallocated"], stats["invalid"], differing)
	if differing > 0 {
		return 1
	}
	return 0
}

// countOutcomes adds upstream's answers to the tally that tells how varied the inputs were.
func countOutcomes(counts map[string]int, upstream []outcome) {
	for _, o := range upstream {
		counts["claims"]++
		switch {
		case o.Refused:
			counts["invalid"]++
		case o.Allocated:
			counts["allocated"]++
		default:
			counts["unallocated"]++
		}
	}
}

func writeInputsFile(path string, in *inputs) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeInputs(file, in); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// writeInputs prints the input as one v1 List, in the order dra-allocate reads it.
func writeInputs(out *os.File, in *inputs) error {
	var items []any
	for _, node := range in.Nodes {
		items = append(items, node)
	}
	for _, class := range in.Classes {
		items = append(items, class)
	}
	for _, slice := range in.Slices {
		items = append(items, slice)
	}
	for _, claim := range in.Claims {
		items = append(items, claim)
	}
	encoder := json.NewEncoder(out)
	encoder.SetIndent("", "  ")
	return encoder.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}

// keepFailure writes the minimised input of a difference, to become a regression scenario.
func keepFailure(draAllocate, scratch, failures string, seed uint64, in *inputs) {
	small, err := minimize(draAllocate, scratch, in)
	if err != nil {
		fmt.Printf("  could not minimise: %v\n", err)
		small = in
	}
	if err := os.MkdirAll(failures, 0o755); err != nil {
		fmt.Printf("  could not keep it: %v\n", err)
		return
	}
	kept := filepath.Join(failures, fmt.Sprintf("seed-%d.json", seed))
	if err := writeInputsFile(kept, small); err != nil {
		fmt.Printf("  could not keep it: %v\n", err)
		return
	}
	diff, _, _ := compare(draAllocate, []string{kept}, nodeName, small, false)
	fmt.Printf("  minimised to %s (%d claims, %d slices):\n%s\n", kept, len(small.Claims), len(small.Slices), diff)
}
