package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// testModuleDir finds a module of this program in the module cache with `go list -m`, as a test
// binary may not carry the dependencies' versions.
func testModuleDir(t *testing.T) func(module string) (string, error) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	return func(module string) (string, error) {
		out, err := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}", module).Output()
		if err != nil {
			t.Fatalf("go list -m %s: %v", module, err)
		}
		return strings.TrimSpace(string(out)), nil
	}
}

// Every source file is there and yields expressions; the counts are those of the pinned versions
// (tests/upstream/README.md repeats them): a change means upstream's tables moved.
func TestUpstreamTestTablesAreFound(t *testing.T) {
	reports, err := extractUpstreamTests(testModuleDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != len(upstreamSources) {
		t.Fatalf("%d sources read, %d listed", len(reports), len(upstreamSources))
	}
	want := map[string]int{
		"k8s.io/dynamic-resource-allocation/cel/compile_test.go":   111,
		"k8s.io/apiserver/pkg/cel/library/quantity_test.go":        34,
		"k8s.io/apiserver/pkg/cel/library/semver_test.go":          33,
		"k8s.io/apiserver/pkg/cel/library/ip_test.go":              38,
		"k8s.io/apiserver/pkg/cel/library/cidr_test.go":            32,
		"k8s.io/apiserver/pkg/cel/library/format_test.go":          31,
		"k8s.io/apiserver/pkg/cel/library/cost_test.go":            242,
		"k8s.io/apiserver/pkg/cel/environment/environment_test.go": 25,
		"github.com/google/cel-go/ext/strings_test.go":             159,
		"github.com/google/cel-go/ext/lists_test.go":               78,
		"github.com/google/cel-go/ext/sets_test.go":                53,
		"github.com/google/cel-go/ext/bindings_test.go":            11,
		"github.com/google/cel-go/ext/comprehensions_test.go":      92,
	}
	for _, r := range reports {
		label := r.Source.Module + "/" + r.Source.File
		if got := len(r.Cases); got != want[label] {
			t.Errorf("%s: %d expressions, want %d", label, got, want[label])
		}
	}
}

// The DRA table's cases come with their own device, decoded from the table.
func TestTheDRATableKeepsItsDevices(t *testing.T) {
	reports, err := extractUpstreamTests(testModuleDir(t))
	if err != nil {
		t.Fatal(err)
	}
	withDevice := 0
	var all *upstreamCase
	for i, c := range reports[0].Cases {
		if c.Device != nil {
			withDevice++
		}
		if c.Device != nil && c.Device.Name == "table:all" {
			all = &reports[0].Cases[i]
		}
	}
	// Every case of the `testcases` table (69 of 70 decoded: "expensive" builds its attributes in a
	// function) and of TestEvaluateDerivedAttributes (23).
	if withDevice != 69+23 {
		t.Errorf("%d of %d DRA table cases have their device, want %d", withDevice, len(reports[0].Cases), 69+23)
	}
	if all == nil {
		t.Fatal(`the "all" case was not found with its device`)
	}
	d := all.Device
	quantity := d.Capacity["quantity"].Value
	if all.Kind != "selector" || d.Driver != "dra.example.com" || len(d.Attributes) != 4 ||
		*d.Attributes["int"].IntValue != 1 || *d.Attributes["version"].VersionValue != "1.0.0" ||
		quantity.String() != "1Mi" {
		t.Errorf(`the "all" case: %+v`, *all)
	}
}

// The per-file rules, on a file of known shape.
func TestFieldRuleTakesOnlyItsFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x_test.go")
	source := "package x\n" +
		"const base = \"[1, 2]\"\n" +
		"var cases = []struct{ name, expr string }{\n" +
		"\t{name: \"not an expression\", expr: `1 + 1 == 2`},\n" +
		"\t{name: \"folded\", expr: base + \".size() == 2\"},\n" +
		"\t{name: \"not constant\", expr: fmt.Sprintf(\"%d\", 1)},\n" +
		"}\n" +
		"var versions = struct{ supportedFunctions map[string]string }{supportedFunctions: map[string]string{\"f\": \"'a'.size() == 1\"}}\n"
	if err := os.WriteFile(path, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := parseGoFile(path, "x_test.go")
	if err != nil {
		t.Fatal(err)
	}
	cases, skipped := fieldRule("expr", "supportedFunctions")(f)
	var got []string
	for _, c := range cases {
		got = append(got, c.Expression)
	}
	if strings.Join(got, "|") != "1 + 1 == 2|[1, 2].size() == 2|'a'.size() == 1" || skipped != 1 {
		t.Fatalf("got %q, %d skipped", got, skipped)
	}
}

// A library table's expression is asked so that its value is compared.
func TestAskedAsComparesValues(t *testing.T) {
	env := upstreamCompile("true", false).Environment
	for expression, want := range map[string]string{
		`1 + 1 == 2`:            "selector\t1 + 1 == 2",
		`'abc'.size()`:          "derived\t'abc'.size()",
		`ip("10.0.0.1")`:        "derived\tstring((ip(\"10.0.0.1\")))",
		`{'a': 1}`:              "derived\tcel.bind(m0_, ({'a': 1}), m0_.map(k0_, k0_ + \"=\" + string(m0_[k0_])).sort())",
		`nosuch == 1`:           "selector\tnosuch == 1",
		`[1.5].map(x, x * 2.0)`: "derived\t([1.5].map(x, x * 2.0)).map(v0_, string(v0_))",
	} {
		entry, _, _ := askedAs(env, expression)
		if entry.key() != want {
			t.Errorf("%s: asked as %q, want %q", expression, entry.key(), want)
		}
	}
	if _, _, refusal := askedAs(env, `nosuch == 1`); refusal != "unknown variable" {
		t.Errorf("nosuch == 1: refusal %q", refusal)
	}
	if _, _, refusal := askedAs(env, `nosuch(1)`); refusal != "unknown function" {
		t.Errorf("nosuch(1): refusal %q", refusal)
	}
}
