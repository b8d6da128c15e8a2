package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// testdata/allocator's scenarios as the control-plane tier reads them (issue 23 §2): every input
// document with the file and the number dra-allocate names it by, the flags of its args file and
// the exit status it expects. scheduler_scenarios_test.go runs those with Pods through the real
// scheduler, invalid_scenarios_test.go gives the invalid ones to the real API server.

// scenarioDocument is one input object of a scenario.
type scenarioDocument struct {
	file   string // the file's name in the scenario folder
	number int    // 1-based, counted as dra-allocate counts them (empty YAML documents too)
	object map[string]any
}

func (d scenarioDocument) kind() string { s, _ := d.object["kind"].(string); return s }

func (d scenarioDocument) apiVersion() string { s, _ := d.object["apiVersion"].(string); return s }

func (d scenarioDocument) metadata() map[string]any {
	m, _ := d.object["metadata"].(map[string]any)
	return m
}

func (d scenarioDocument) name() string { s, _ := d.metadata()["name"].(string); return s }

func (d scenarioDocument) namespace() string { s, _ := d.metadata()["namespace"].(string); return s }

// where is how dra-allocate names the document: "claims.yaml, document 2".
func (d scenarioDocument) where() string { return fmt.Sprintf("%s, document %d", d.file, d.number) }

// decode converts the document into a typed API object (not strictly: the scenarios run here are
// the valid ones, which dra-allocate read strictly).
func (d scenarioDocument) decode(t testing.TB, into any) {
	t.Helper()
	data, err := json.Marshal(d.object)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", d.where(), err)
	}
}

type scenario struct {
	name, dir string
	documents []scenarioDocument
	flags     []string // the args file without the input files it names
	exit      int      // expected-exit, 0 when absent
}

func (s scenario) has(kind string) bool {
	for _, d := range s.documents {
		if d.kind() == kind {
			return true
		}
	}
	return false
}

// flag is the value of --name in the args file, "" when absent.
func (s scenario) flag(name string) string {
	for i, arg := range s.flags {
		if arg == name && i+1 < len(s.flags) {
			return s.flags[i+1]
		}
		if value, found := strings.CutPrefix(arg, name+"="); found {
			return value
		}
	}
	return ""
}

func scenariosDir(t testing.TB) string {
	return filepath.Join(sourceDir(t), "testdata", "allocator")
}

// allScenarios reads every folder of testdata/allocator, by name.
func allScenarios(t testing.TB) []scenario {
	t.Helper()
	entries, err := os.ReadDir(scenariosDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []scenario
	for _, entry := range entries {
		if entry.IsDir() {
			out = append(out, readScenario(t, filepath.Join(scenariosDir(t), entry.Name())))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no scenarios in %s", scenariosDir(t))
	}
	return out
}

// readScenario reads a scenario folder as testdata/allocator/README.md describes it: every
// *.yaml, *.yml and *.json file but the expected* ones, in name order, or only the files its
// args name.
func readScenario(t testing.TB, dir string) scenario {
	t.Helper()
	s := scenario{name: filepath.Base(dir), dir: dir}
	var named []string
	if data, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
		for _, arg := range strings.Fields(string(data)) {
			if info, err := os.Stat(filepath.Join(dir, arg)); err == nil && !info.IsDir() {
				named = append(named, arg)
				continue
			}
			s.flags = append(s.flags, arg)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "expected-exit")); err == nil {
		if s.exit, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
			t.Fatalf("%s/expected-exit: %v", s.name, err)
		}
	}
	files := named
	if files == nil {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, entry := range entries {
			name := entry.Name()
			input := strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".json")
			if input && !strings.HasPrefix(name, "expected") {
				files = append(files, name)
			}
		}
		sort.Strings(files)
	}
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		documents, err := splitDocuments(file, data)
		if err != nil {
			t.Fatalf("%s/%s: %v", s.name, file, err)
		}
		s.documents = append(s.documents, documents...)
	}
	return s
}

// splitDocuments decodes a file's documents: a JSON stream's values, or YAML's "---" documents,
// empty ones counted but left out (a comment before the first "---" is no document). A List's
// items are documents of the List's number.
func splitDocuments(file string, data []byte) ([]scenarioDocument, error) {
	var chunks [][]byte
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		decoder := json.NewDecoder(bytes.NewReader(data))
		for {
			var raw json.RawMessage
			if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, err
			}
			chunks = append(chunks, raw)
		}
	} else {
		var current []string
		separated := false
		for _, line := range strings.Split(string(data), "\n") {
			if line == "---" || strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "---\t") {
				if separated || !onlyComments(current) {
					chunks = append(chunks, []byte(strings.Join(current, "\n")))
				}
				current, separated = nil, true
				continue
			}
			current = append(current, line)
		}
		chunks = append(chunks, []byte(strings.Join(current, "\n")))
	}
	var out []scenarioDocument
	for i, chunk := range chunks {
		data, err := yaml.YAMLToJSON(chunk)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		var object map[string]any
		if err := json.Unmarshal(data, &object); err != nil || object == nil {
			continue // empty, or no object: dra-allocate says so, the tests here read objects
		}
		items, isList := object["items"].([]any)
		if kind, _ := object["kind"].(string); !isList || !strings.HasSuffix(kind, "List") {
			out = append(out, scenarioDocument{file, i + 1, object})
			continue
		}
		for _, item := range items {
			if item, ok := item.(map[string]any); ok {
				out = append(out, scenarioDocument{file, i + 1, item})
			}
		}
	}
	return out, nil
}

func onlyComments(lines []string) bool {
	for _, line := range lines {
		if trimmed := strings.TrimSpace(line); trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			return false
		}
	}
	return true
}

// scenarioExpectation is an entry of tests/upstream/alloc/scenario-expectations.txt: a scenario
// upstream's allocator does not answer the same way, and why. The file is read in full by
// tests/upstream/internal/expectations (the upstream judges' module, which this one cannot
// import); here only its entries' fields are needed.
type scenarioExpectation struct{ status, reason string }

func scenarioExpectations(t testing.TB) map[string]scenarioExpectation {
	t.Helper()
	path := filepath.Join(sourceDir(t), "tests", "upstream", "alloc", "scenario-expectations.txt")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]scenarioExpectation{}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " | ", 3)
		if len(fields) < 3 {
			t.Fatalf("%s: %q: want \"scenario | status | reason\"", path, line)
		}
		out[strings.TrimSpace(fields[0])] = scenarioExpectation{strings.TrimSpace(fields[1]), strings.TrimSpace(fields[2])}
	}
	return out
}

// draAllocateRun is one run of dra-allocate: its exit status and what it printed.
type draAllocateRun struct {
	exit           int
	stdout, stderr string
}

// runDraAllocateOn runs dra-allocate with the arguments, whatever its exit status.
func runDraAllocateOn(t testing.TB, args ...string) draAllocateRun {
	t.Helper()
	cmd := exec.Command(filepath.Join(buildDir(t), "bin", "dra-allocate"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := draAllocateRun{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.exit = exit.ExitCode()
	case err != nil:
		t.Fatalf("dra-allocate %v: %v", args, err)
	}
	return run
}
