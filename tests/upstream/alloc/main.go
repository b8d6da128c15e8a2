// upstream-allocate: Kubernetes' own code as the judge of dra-allocate, on the same files:
// the API server's validation (k8s.io/kubernetes pkg/apis/resource/validation, validate.go)
// decides whether an input is valid, and the structured allocator
// (k8s.io/dynamic-resource-allocation/structured, every DRA feature on), asked per pod and
// per node as the scheduler's DRA plugin asks it (upstream.go), what each pod or claim gets.
//
//	upstream-allocate --dra-allocate BIN [--node N] FILE_OR_DIR...  compare on these inputs
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

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// inputs: the objects a run reads (shared with the other judges).
type inputs = oracle.Inputs

// ctx carries the upstream allocator's logger (-log).
var ctx = context.Background()

func runtimeRaw(text string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(text)} }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	flags := flag.NewFlagSet("upstream-allocate", flag.ContinueOnError)
	draAllocate := flags.String("dra-allocate", "", "the dra-allocate binary to judge")
	node := flags.String("node", "", "the node to allocate on (default: every node, as dra-allocate)")
	seeds := flags.Int("seeds", 0, "compare on this many generated inputs")
	first := flags.Uint64("first", 1, "the first seed")
	scratch := flags.String("scratch", "", "folder for the generated inputs")
	failures := flags.String("failures", "", "folder to keep the input of each difference in")
	generateSeed := flags.Int64("generate", -1, "print the input of this seed and exit")
	verbose := flags.Bool("v", false, "print every claim's answer")
	scenarios := flags.String("scenarios", "", "replay every scenario folder under this folder")
	expectations := flags.String("expectations", "", "the scenarios that are not the same, with why")
	logLevel := flags.Int("log", 0, "upstream allocator's log verbosity (7: every step)")
	countsPath := flags.String("counts", "", "write what was counted here (\"key value\" lines, for the documentation's numbers)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
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
		return runScenarios(*draAllocate, *scenarios, *expectations, *countsPath)
	}
	if *seeds > 0 {
		return runSeeds(*draAllocate, *first, *seeds, *scratch, *failures, *countsPath)
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

// tally counts what was judged, to tell how varied the inputs were.
type tally struct {
	inputs, invalid                 int
	pods, claims                    int // units: pods, and claims no pod uses
	placed, unplaced, refused       int
	nodeAnswers                     map[nodeKind]int
	multiNodeUnits, multiClaimUnits int
}

func newTally() *tally { return &tally{nodeAnswers: map[nodeKind]int{}} }

func (t *tally) add(other *tally) {
	t.inputs += other.inputs
	t.invalid += other.invalid
	t.pods += other.pods
	t.claims += other.claims
	t.placed += other.placed
	t.unplaced += other.unplaced
	t.refused += other.refused
	t.multiNodeUnits += other.multiNodeUnits
	t.multiClaimUnits += other.multiClaimUnits
	for kind, count := range other.nodeAnswers {
		t.nodeAnswers[kind] += count
	}
}

func (t *tally) count(u *unit, answer unitAnswer) {
	if u.pod != nil {
		t.pods++
	} else {
		t.claims++
	}
	if len(answer.nodes) > 1 {
		t.multiNodeUnits++
	}
	if len(answer.toAllocate) > 1 {
		t.multiClaimUnits++
	}
	switch {
	case answer.refused:
		t.refused++
	case answer.unschedulable != "" || len(answer.fitting()) == 0:
		t.unplaced++
	default:
		t.placed++
	}
	for _, node := range answer.nodes {
		t.nodeAnswers[node.kind]++
	}
}

// documented: the numbers the documentation states about a run of generated inputs.
func (t *tally) documented(differing int) map[string]int {
	return map[string]int{
		"upstream-allocate.inputs":            t.inputs,
		"upstream-allocate.inputs-invalid":    t.invalid,
		"upstream-allocate.pods":              t.pods,
		"upstream-allocate.claims-alone":      t.claims,
		"upstream-allocate.multi-claim-units": t.multiClaimUnits,
		"upstream-allocate.multi-node-units":  t.multiNodeUnits,
		"upstream-allocate.differ":            differing,
	}
}

func (t *tally) String() string {
	return fmt.Sprintf("%d inputs (%d refused by upstream's validation), %d pods and %d claims alone "+
		"(%d with several claims, %d asked on several nodes): %d placed, %d placed nowhere, %d refused; "+
		"node answers: %d fit, %d do not, %d fail the node (invalid pools), %d lack an allocated claim, %d errors",
		t.inputs, t.invalid, t.pods, t.claims, t.multiClaimUnits, t.multiNodeUnits, t.placed, t.unplaced, t.refused,
		t.nodeAnswers[nodeFits], t.nodeAnswers[nodeNoFit], t.nodeAnswers[nodeFailed], t.nodeAnswers[nodeUnavailable],
		t.nodeAnswers[nodeError])
}

// compare judges dra-allocate on one input: upstream's validation first (an input it refuses
// must be refused as invalid, exit 2, and one it accepts must not be), then every unit
// (a pod's claims, a claim alone) in input order, as the scheduler asks upstream's allocator
// (see upstream.go), each placement counting for the next. It returns the first difference
// ("" when none): later units depend on the earlier ones' devices.
func compare(draAllocate string, paths []string, node string, in *inputs, verbose bool) (string, *tally, error) {
	counts := newTally()
	counts.inputs++
	pending := startOurs(draAllocate, paths, node) // runs while upstream validates
	refusedObjects, err := validateInputs(in)
	ours, waitErr := pending.wait()
	if err != nil {
		return "", nil, err
	}
	if waitErr != nil {
		return "", nil, waitErr
	}
	if len(refusedObjects) > 0 {
		counts.invalid++
		if ours.exitCode == 2 {
			return "", counts, nil
		}
		var lines []string
		for _, object := range refusedObjects {
			lines = append(lines, "    "+object.String())
		}
		return fmt.Sprintf("upstream's validation refuses the input, dra-allocate does not (exit %d):\n%s",
			ours.exitCode, strings.Join(lines, "\n")), counts, nil
	}
	if ours.exitCode == 2 {
		return "dra-allocate refuses the input as invalid (exit 2), upstream's validation accepts every object:\n    " +
			strings.TrimSpace(ours.stderr), counts, nil
	}
	list, err := units(in)
	if err != nil {
		return "", nil, err
	}
	state := newCluster(in)
	for _, u := range list {
		answer := state.ask(ctx, u, candidateNodes(in, node, u))
		counts.count(u, answer)
		verdict, err := ours.verdict(u, answer.toAllocate)
		if err != nil {
			return "", nil, err
		}
		if verbose {
			fmt.Printf("%s\n    dra-allocate: %s\n%s\n", u.label, verdict, answer.describe())
		}
		diff, chosen := compareUnit(u, answer, verdict)
		if diff != "" {
			return diff + "\n  dra-allocate said: " + strings.TrimSpace(ours.stderr), counts, nil
		}
		if chosen != nil {
			state.commit(answer.toAllocate, chosen.allocations)
		}
	}
	return "", counts, nil
}

func runSeeds(draAllocate string, first uint64, count int, scratch, failures, countsPath string) int {
	if scratch == "" {
		fmt.Fprintln(os.Stderr, "upstream-allocate: --seeds needs --scratch")
		return 2
	}
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-allocate:", err)
		return 2
	}
	counts := newTally()
	differing := 0
	minimised := map[string]bool{} // kinds of difference (signature) already minimised
	for seed := first; seed < first+uint64(count); seed++ {
		in := generate(seed)
		path := filepath.Join(scratch, fmt.Sprintf("seed-%d.json", seed))
		if err := writeInputsFile(path, in); err != nil {
			fmt.Fprintln(os.Stderr, "upstream-allocate:", err)
			return 2
		}
		diff, judged, err := compare(draAllocate, []string{path}, "", in, false)
		if err != nil {
			fmt.Fprintf(os.Stderr, "upstream-allocate: seed %d: %v\n", seed, err)
			return 2
		}
		counts.add(judged)
		if diff == "" {
			os.Remove(path)
			continue
		}
		differing++
		fmt.Printf("seed %d (%s): dra-allocate and upstream differ (input: %s)\n%s\n", seed, familyOf(seed), path, diff)
		// Minimising costs hundreds of runs of dra-allocate: the first difference of each kind
		// is minimised, a few kinds at most; the others' inputs stay where they were written.
		if kind := signature(diff); failures != "" && !minimised[kind] && len(minimised) < maxMinimised {
			minimised[kind] = true
			keepFailure(draAllocate, scratch, failures, seed, in)
		}
	}
	fmt.Printf("upstream-allocate: seeds %d-%d: %s; %d differ\n", first, first+uint64(count)-1, counts, differing)
	if err := oracle.WriteCounts(countsPath, counts.documented(differing)); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-allocate:", err)
		return 2
	}
	if differing > 0 {
		return 1
	}
	return 0
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
	for _, ref := range in.Order {
		switch ref.Kind {
		case oracle.ClaimRef:
			items = append(items, in.Claims[ref.Index])
		case oracle.TemplateRef:
			items = append(items, in.Templates[ref.Index])
		case oracle.PodRef:
			items = append(items, in.Pods[ref.Index])
		}
	}
	encoder := json.NewEncoder(out)
	encoder.SetIndent("", "  ")
	return encoder.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}

// maxMinimised: how many kinds of difference a run minimises.
const maxMinimised = 8

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
	diff, _, _ := compare(draAllocate, []string{kept}, "", small, false)
	fmt.Printf("  minimised to %s (%d nodes, %d slices, %d claims, %d pods):\n%s\n", kept, len(small.Nodes),
		len(small.Slices), len(small.Claims), len(small.Pods), diff)
}
