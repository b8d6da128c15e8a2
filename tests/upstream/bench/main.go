// upstream-allocator-bench: Kubernetes' own structured allocator
// (k8s.io/dynamic-resource-allocation/structured, every DRA feature on) timed in-process on the
// case folders allocator-bench-cases writes (DIR/<case>/input.json and case.json), the very
// files allocator_files_bench times our allocator on (scripts/bench-vs-upstream.sh runs both).
//
//	upstream-allocator-bench --cases DIR [--timeout 20s] [--reps 5] [--min-time 500ms] [--max-time 90s]
//
// DIR is one case folder (it has case.json) or a folder of them. For each case, one JSON line on
// standard output: the median (and every repetition) of the time per operation, warm and cold,
// in nanoseconds of wall time:
//   - warm: the CEL cache and the allocator are created once (with the held claims' devices in
//     the allocated state); one operation = Allocate on every node of the case. Upstream keeps
//     compiled CEL programs across calls, nothing else: every Allocate converts the node's slices
//     again and evaluates the selectors again on the devices its search visits.
//   - cold: a new CEL cache (every expression compiled again), the allocated state and
//     NewAllocator, then the operation.
//   - "sequence" cases (1,000 claims in turn): each claim gets a new allocator over the state
//     the earlier answers left (as each pod does in the scheduler); warm shares one CEL cache
//     across operations, cold makes one per operation.
//
// Each operation is first run once with a --timeout context and every answer checked against
// case.json's expect. Upstream's search is exhaustive on infeasible claims; a case that does not
// finish within the timeout is reported as "gave up" with the time it was given, not timed.
// A repetition runs the operation n times (n from the time of one run, so a repetition lasts
// about --min-time), after a runtime.GC(); repetitions are cut below --reps when they would take
// longer than --max-time.
//
// Exit status: 0 every case ran or gave up, 1 a wrong outcome, 2 the harness could not run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"numadra.dev/tests/upstream/internal/oracle"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

var (
	timeout = flag.Duration("timeout", 20*time.Second, "give up on a case whose first run takes longer")
	reps    = flag.Int("reps", 5, "repetitions; the median is reported")
	minTime = flag.Duration("min-time", 500*time.Millisecond, "length of one repetition")
	maxTime = flag.Duration("max-time", 90*time.Second, "at most this long for the repetitions of a case and mode")
)

// benchCase is case.json with its inputs.
type benchCase struct {
	Name    string   `json:"name"`
	Title   string   `json:"title"`
	Mirrors string   `json:"mirrors"`
	Nodes   []string `json:"nodes"`
	Claims  []string `json:"claims"`
	Mode    string   `json:"mode"`
	Expect  string   `json:"expect"`

	in     *oracle.Inputs
	nodes  []*v1.Node
	claims []*resourceapi.ResourceClaim
	held   []*resourceapi.AllocationResult
}

type timing struct {
	MedianNs   float64   `json:"median_ns"`
	RepsNs     []float64 `json:"reps_ns"`
	Iterations int       `json:"iterations"` // operations per repetition
}

type report struct {
	Case         string  `json:"case"`
	Mode         string  `json:"mode"` // always in-process
	Expect       string  `json:"expect"`
	Outcome      string  `json:"outcome"` // expect, "gave up" or "error"
	FirstNs      float64 `json:"first_ns,omitempty"`
	GaveUpAfterS float64 `json:"gave_up_after_s,omitempty"`
	Warm         *timing `json:"warm,omitempty"`
	Cold         *timing `json:"cold,omitempty"`
	Error        string  `json:"error,omitempty"`
}

func main() {
	cases := flag.String("cases", "", "a case folder, or a folder of them (allocator-bench-cases DIR)")
	flag.Parse()
	if *cases == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: upstream-allocator-bench --cases DIR [flags]")
		os.Exit(2)
	}
	folders, err := caseFolders(*cases)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-allocator-bench:", err)
		os.Exit(2)
	}
	status := 0
	for _, folder := range folders {
		c, err := loadCase(folder)
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstream-allocator-bench:", err)
			os.Exit(2)
		}
		r := run(c)
		line, err := json.Marshal(r)
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstream-allocator-bench:", err)
			os.Exit(2)
		}
		fmt.Println(string(line))
		if r.Outcome == "error" {
			status = 1
		}
	}
	os.Exit(status)
}

func caseFolders(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "case.json")); err == nil {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var folders []string
	for _, entry := range entries {
		folder := filepath.Join(dir, entry.Name())
		if _, err := os.Stat(filepath.Join(folder, "case.json")); entry.IsDir() && err == nil {
			folders = append(folders, folder)
		}
	}
	sort.Strings(folders)
	if len(folders) == 0 {
		return nil, fmt.Errorf("no case folder in %s", dir)
	}
	return folders, nil
}

func loadCase(folder string) (*benchCase, error) {
	data, err := os.ReadFile(filepath.Join(folder, "case.json"))
	if err != nil {
		return nil, err
	}
	c := &benchCase{}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("%s/case.json: %w", folder, err)
	}
	if c.Mode != "together" && c.Mode != "sequence" {
		return nil, fmt.Errorf("%s/case.json: mode %q", folder, c.Mode)
	}
	if c.Expect != "allocated" && c.Expect != "unsatisfiable" {
		return nil, fmt.Errorf("%s/case.json: expect %q", folder, c.Expect)
	}
	if c.in, err = oracle.LoadInputs([]string{filepath.Join(folder, "input.json")}); err != nil {
		return nil, err
	}
	for _, name := range c.Nodes {
		c.nodes = append(c.nodes, findNode(c.in, name))
	}
	for _, claim := range c.in.Claims {
		if claim.Status.Allocation != nil {
			c.held = append(c.held, claim.Status.Allocation)
		}
	}
	for _, key := range c.Claims {
		found := false
		for _, claim := range c.in.Claims {
			if claim.Namespace+"/"+claim.Name == key && claim.Status.Allocation == nil {
				c.claims = append(c.claims, claim)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: claim %s is not an unallocated claim of the input", folder, key)
		}
	}
	if len(c.nodes) == 0 || len(c.claims) == 0 {
		return nil, fmt.Errorf("%s/case.json: no nodes or no claims", folder)
	}
	return c, nil
}

// operation is one timed unit of work, given the context to allocate under.
type operation func(ctx context.Context) error

func run(c *benchCase) report {
	r := report{Case: c.Name, Mode: "in-process", Expect: c.Expect}
	// Timed runs get a cancellable context, as the scheduler's calls do (Allocate checks it at
	// every search step), without a timer per call.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var warm, cold operation
	var warmFirst operation // the first call on the warm state, checked
	switch c.Mode {
	case "together":
		allocator, err := c.newAllocator(ctx, allocatedState(c.held), oracle.NewCELCache())
		if err != nil {
			return failed(r, err)
		}
		warmFirst = func(ctx context.Context) error { return c.together(ctx, allocator, true) }
		warm = func(ctx context.Context) error { return c.together(ctx, allocator, false) }
		cold = func(ctx context.Context) error {
			allocator, err := c.newAllocator(ctx, allocatedState(c.held), oracle.NewCELCache())
			if err != nil {
				return err
			}
			return c.together(ctx, allocator, false)
		}
	case "sequence":
		cache := oracle.NewCELCache()
		warmFirst = func(ctx context.Context) error { return c.sequence(ctx, cache) }
		warm = warmFirst
		cold = func(ctx context.Context) error { return c.sequence(ctx, oracle.NewCELCache()) }
	}

	first, err := checked(warmFirst)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			r.Outcome = "gave up"
			r.GaveUpAfterS = timeout.Seconds()
			return r
		}
		return failed(r, err)
	}
	r.FirstNs = float64(first.Nanoseconds())
	// The repetitions are sized by one more untimed warm run (the first one compiled the CEL
	// expressions), unless the first took so long that compiling does not matter.
	estimate := first
	if first < time.Second {
		start := time.Now()
		if err := warm(ctx); err != nil {
			return failed(r, err)
		}
		estimate = time.Since(start)
	}
	if r.Warm, err = measure(ctx, warm, estimate); err != nil {
		return failed(r, err)
	}

	// Cold: the first run checked (a fresh state must give the same answers), then timed.
	coldChecked := cold
	if c.Mode == "together" {
		coldChecked = func(ctx context.Context) error {
			allocator, err := c.newAllocator(ctx, allocatedState(c.held), oracle.NewCELCache())
			if err != nil {
				return err
			}
			return c.together(ctx, allocator, true)
		}
	}
	coldFirst, err := checked(coldChecked)
	if err != nil {
		return failed(r, fmt.Errorf("cold: %w", err))
	}
	if r.Cold, err = measure(ctx, cold, coldFirst); err != nil {
		return failed(r, err)
	}
	r.Outcome = c.Expect
	return r
}

// checked runs op once under the timeout and returns how long it took.
func checked(op operation) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	err := op(ctx)
	return time.Since(start), err
}

func failed(r report, err error) report {
	r.Outcome = "error"
	r.Error = err.Error()
	return r
}

func measure(ctx context.Context, op operation, estimate time.Duration) (*timing, error) {
	n := 1
	if estimate > 0 && estimate < *minTime {
		n = int(*minTime / estimate)
	}
	repetitions := *reps
	if perRep := estimate * time.Duration(n); perRep > 0 && perRep*time.Duration(repetitions) > *maxTime {
		repetitions = max(1, int(*maxTime/perRep))
	}
	t := &timing{Iterations: n}
	for range repetitions {
		runtime.GC() // as testing.B does before a run: no garbage of the previous one
		start := time.Now()
		for range n {
			if err := op(ctx); err != nil {
				return nil, err
			}
		}
		t.RepsNs = append(t.RepsNs, float64(time.Since(start).Nanoseconds())/float64(n))
	}
	sorted := append([]float64(nil), t.RepsNs...)
	sort.Float64s(sorted)
	if len(sorted)%2 == 1 {
		t.MedianNs = sorted[len(sorted)/2]
	} else {
		t.MedianNs = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	return t, nil
}
