// upstream-table: upstream's own allocator test table
// (k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting, some 400 cases)
// put to dra-allocate. Go allows only code inside that module to import the table, so the
// program copies the pinned module out of the module cache into a scratch folder, adds one
// test file (oracle_test.go.in) to its experimental allocator package, and runs that
// package's tests with this module's go.mod and go.sum plus a replace pointing at the copy.
// The added test wraps the allocator the table constructs: each Allocate call is also asked
// of upstream's allocator with every feature on and of dra-allocate, and the two answers
// are printed. This program collects them per table case and compares with
// table-expectations.txt: every case where dra-allocate does not give the same answer must
// be listed there with why.
//
//	upstream-table --dra-allocate BIN --go GO --module DIR --scratch DIR --expectations FILE
//	               --min-cases N
//
// A judge that stops half-way must not pass: a non-zero exit of `go test` (a panic, a timeout,
// a build failure) fails the run whatever verdicts were printed before it, and so does a table
// that judged fewer cases than --min-cases (the count the table had when the floor was set).
package main

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"numadra.dev/tests/upstream/internal/expectations"
	"numadra.dev/tests/upstream/internal/oracle"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

//go:embed oracle_test.go.in
var oracleTest []byte

const (
	draModule  = "k8s.io/dynamic-resource-allocation"
	experiment = draModule + "/structured/internal/experimental"
	marker     = "NUMADRA-ORACLE "
)

func main() {
	os.Exit(run())
}

func run() int {
	draAllocate := flag.String("dra-allocate", "", "the dra-allocate binary to judge")
	goCommand := flag.String("go", "go", "the go command")
	module := flag.String("module", ".", "tests/upstream (its go.mod and go.sum pin everything)")
	scratch := flag.String("scratch", "", "folder for the module copy (emptied first)")
	expectationsPath := flag.String("expectations", "", "table cases that may differ, with why")
	verbose := flag.Bool("v", false, "print every case's verdict")
	minCases := flag.Int("min-cases", 0, "fail when fewer table cases than this are judged")
	countsPath := flag.String("counts", "", "write what was counted here (\"key value\" lines)")
	flag.Parse()
	if *draAllocate == "" || *scratch == "" {
		fmt.Fprintln(os.Stderr, "upstream-table: --dra-allocate and --scratch are required")
		return 2
	}
	expected, err := readExpectations(*expectationsPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-table:", err)
		return 2
	}
	modfile, err := prepare(*goCommand, *module, *scratch)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-table:", err)
		return 2
	}
	verdicts, failures, err := runTable(*goCommand, *module, modfile, *draAllocate)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-table:", err)
		return 2
	}
	status := report(verdicts, failures, expected, *verbose, *minCases)
	if err := oracle.WriteCounts(*countsPath, tableCounts(verdicts)); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-table:", err)
		return 2
	}
	return status
}

// tableCounts: the numbers the documentation states about this judge.
func tableCounts(verdicts map[string][]verdict) map[string]int {
	counts := map[string]int{"upstream-table.cases": len(verdicts)}
	for _, status := range []string{"same", "differs", "refused-by-dra-allocate"} {
		counts["upstream-table."+status] = 0
	}
	for _, caseVerdicts := range verdicts {
		counts["upstream-table."+caseStatus(caseVerdicts)]++
	}
	return counts
}

// prepare copies the pinned module and writes the go.mod that replaces it with the copy.
func prepare(goCommand, module, scratch string) (string, error) {
	out, err := exec.Command(goCommand, "-C", module, "list", "-mod=readonly", "-m", "-f", "{{.Dir}}", draModule).Output()
	if err != nil {
		return "", fmt.Errorf("finding %s in the module cache: %w", draModule, err)
	}
	source := strings.TrimSpace(string(out))
	if err := os.RemoveAll(scratch); err != nil {
		return "", err
	}
	copyDir := filepath.Join(scratch, "dynamic-resource-allocation")
	if err := copyTree(source, copyDir); err != nil {
		return "", fmt.Errorf("copying %s: %w", source, err)
	}
	added := filepath.Join(copyDir, "structured", "internal", "experimental", "zz_numadra_oracle_test.go")
	if err := os.WriteFile(added, oracleTest, 0o644); err != nil {
		return "", err
	}
	goMod, err := os.ReadFile(filepath.Join(module, "go.mod"))
	if err != nil {
		return "", err
	}
	goSum, err := os.ReadFile(filepath.Join(module, "go.sum"))
	if err != nil {
		return "", err
	}
	absolute, err := filepath.Abs(copyDir)
	if err != nil {
		return "", err
	}
	modfile := filepath.Join(scratch, "go.mod")
	goMod = append(goMod, []byte(fmt.Sprintf("\nreplace %s => %s\n", draModule, absolute))...)
	if err := os.WriteFile(modfile, goMod, 0o644); err != nil {
		return "", err
	}
	return modfile, os.WriteFile(filepath.Join(scratch, "go.sum"), goSum, 0o644)
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		relative, _ := filepath.Rel(from, path)
		target := filepath.Join(to, relative)
		if entry.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !entry.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

type testEvent struct {
	Action string `json:"Action"`
	Test   string `json:"Test"`
	Output string `json:"Output"`
}

type verdict struct {
	Verdict  string `json:"verdict"`
	Features string `json:"features"`
	Upstream string `json:"upstream"`
	Ours     string `json:"ours"`
	Detail   string `json:"detail"`
	Input    string `json:"input"`
}

// runTable runs the table and returns, per case, the verdicts of its Allocate calls, and
// the cases whose own assertions failed (upstream against its own table: never expected).
func runTable(goCommand, module, modfile, draAllocate string) (map[string][]verdict, []string, error) {
	cmd := exec.Command(goCommand, "-C", module, "test", "-modfile", modfile, "-mod=readonly", "-json", "-count=1",
		"-run", "^TestNumadraOracle$", experiment)
	inputs := filepath.Join(filepath.Dir(modfile), "inputs")
	if err := os.MkdirAll(inputs, 0o755); err != nil {
		return nil, nil, err
	}
	cmd.Env = append(os.Environ(), "NUMADRA_DRA_ALLOCATE="+draAllocate, "NUMADRA_TABLE_INPUTS="+inputs)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	verdicts := map[string][]verdict{}
	var failures []string
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for scanner.Scan() {
		var event testEvent
		if json.Unmarshal(scanner.Bytes(), &event) != nil {
			continue
		}
		name := strings.TrimPrefix(event.Test, "TestNumadraOracle/")
		switch {
		case event.Action == "output" && strings.HasPrefix(event.Output, marker):
			var v verdict
			if err := json.Unmarshal([]byte(strings.TrimPrefix(event.Output, marker)), &v); err == nil {
				verdicts[name] = append(verdicts[name], v)
			}
		case event.Action == "fail" && strings.Contains(event.Test, "/"):
			failures = append(failures, name)
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading go test's output: %w", err)
	}
	waitErr := cmd.Wait()
	if len(verdicts) == 0 {
		return nil, nil, fmt.Errorf("the table printed no verdicts (go test: %v)", waitErr)
	}
	// Any non-zero exit fails the run: besides the table's own failing assertions (reported per
	// case) it means the table did not run to its end (a panic, a timeout, a build failure),
	// so the verdicts seen so far judge only part of it.
	if waitErr != nil {
		failures = append(failures, fmt.Sprintf("go test exited with %v after %d cases (its output is above)", waitErr, len(verdicts)))
	}
	return verdicts, failures, nil
}

func report(verdicts map[string][]verdict, failures []string, expected map[string]string, verbose bool, minCases int) int {
	names := make([]string, 0, len(verdicts))
	for name := range verdicts {
		names = append(names, name)
	}
	sort.Strings(names)
	counts := map[string]int{}
	unexpected := 0
	for _, name := range names {
		status := caseStatus(verdicts[name])
		counts[status]++
		want, listed := expected[name]
		if !listed {
			want = "same"
		}
		ok := status == want
		if !ok {
			unexpected++
		}
		if ok && !verbose {
			continue
		}
		mark := "ok"
		if !ok {
			mark = "FAIL (expected " + want + ")"
		}
		fmt.Printf("%-90s %-24s %s\n", name, status, mark)
		if status != "same" {
			for _, v := range verdicts[name] {
				if v.Verdict == "same" {
					continue
				}
				fmt.Printf("    upstream (all features): %s\n    dra-allocate:            %s\n", v.Upstream, v.Ours)
				if v.Input != "" {
					fmt.Printf("    input: %s\n", v.Input)
				}
				if v.Features != "" {
					fmt.Printf("    the case's own features: %s\n", v.Features)
				}
				if detail := strings.TrimSpace(v.Detail); detail != "" {
					fmt.Printf("    dra-allocate said: %s\n", strings.ReplaceAll(detail, "\n", "\n      "))
				}
			}
		}
	}
	for name := range expected {
		if _, ran := verdicts[name]; !ran {
			fmt.Printf("%-90s listed, but the table has no such case that allocates: FAIL\n", name)
			unexpected++
		}
	}
	for _, failure := range failures {
		fmt.Printf("%s: FAIL (the table's own assertion, or the table cut short)\n", failure)
	}
	fmt.Printf("upstream-table: %d table cases asked dra-allocate (floor %d): %d same, %d differ, %d refused by dra-allocate; %d not as expected; %d table failures\n",
		len(names), minCases, counts["same"], counts["differs"], counts["refused-by-dra-allocate"], unexpected, len(failures))
	if len(names) < minCases {
		fmt.Printf("upstream-table: FAIL: only %d table cases were judged, fewer than the floor of %d (a case that stopped allocating, or a table cut short)\n", len(names), minCases)
		return 1
	}
	if unexpected > 0 || len(failures) > 0 {
		return 1
	}
	return 0
}

// caseStatus: the worst verdict of a case's Allocate calls.
func caseStatus(verdicts []verdict) string {
	status := "same"
	for _, v := range verdicts {
		switch v.Verdict {
		case "differs":
			return "differs"
		case "refused-by-dra-allocate":
			status = v.Verdict
		}
	}
	return status
}

// tableExpectations is the layout of table-expectations.txt.
var tableExpectations = expectations.Format{Fields: []string{"case", "status", "reason"}, KeyFields: 1}

// readExpectations reads the status each listed case must get, by case.
func readExpectations(path string) (map[string]string, error) {
	entries, err := tableExpectations.Read(path)
	if err != nil {
		return nil, err
	}
	expected := map[string]string{}
	for _, entry := range entries {
		status := entry.Fields[1]
		if status != "differs" && status != "refused-by-dra-allocate" {
			return nil, entry.Errorf("status %q is not differs or refused-by-dra-allocate", status)
		}
		expected[entry.Fields[0]] = status
	}
	return expected, nil
}
