package main

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// testModuleDir finds a module of this program in the module cache with `go mod download`, as a
// test binary may not carry the dependencies' versions.
func testModuleDir(t *testing.T) func(module string) (string, error) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	return func(module string) (string, error) {
		dir, err := downloadedModuleDir(goTool, ".", module)
		if err != nil {
			t.Fatal(err)
		}
		return dir, nil
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
		"k8s.io/dynamic-resource-allocation/cel/compile_test.go":                           111,
		"k8s.io/apiserver/pkg/cel/library/quantity_test.go":                                34,
		"k8s.io/apiserver/pkg/cel/library/semver_test.go":                                  33,
		"k8s.io/apiserver/pkg/cel/library/ip_test.go":                                      38,
		"k8s.io/apiserver/pkg/cel/library/cidr_test.go":                                    32,
		"k8s.io/apiserver/pkg/cel/library/format_test.go":                                  31,
		"k8s.io/apiserver/pkg/cel/library/cost_test.go":                                    242,
		"k8s.io/apiserver/pkg/cel/environment/environment_test.go":                         25,
		"github.com/google/cel-go/ext/strings_test.go":                                     159,
		"github.com/google/cel-go/ext/lists_test.go":                                       78,
		"github.com/google/cel-go/ext/sets_test.go":                                        53,
		"github.com/google/cel-go/ext/bindings_test.go":                                    11,
		"github.com/google/cel-go/ext/comprehensions_test.go":                              92,
		"github.com/google/cel-go/ext/formatting_test.go":                                  73,
		"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation_test.go":       790,
		"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/celcoststability_test.go": 630,
		"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/compilation_test.go":      104,
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
		`1 + 1 == 2`:            "selector | 1 + 1 == 2",
		`'abc'.size()`:          "derived | 'abc'.size()",
		`ip("10.0.0.1")`:        "derived | string((ip(\"10.0.0.1\")))",
		`{'a': 1}`:              "derived | cel.bind(m0_, ({'a': 1}), m0_.map(k0_, k0_ + \"=\" + string(m0_[k0_])).sort())",
		`nosuch == 1`:           "selector | nosuch == 1",
		`[1.5].map(x, x * 2.0)`: "derived | ([1.5].map(x, x * 2.0)).map(v0_, string(v0_))",
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

// The CRD tables' expressions that read self or oldSelf where no exact literal is had are not
// asked; how many, per file and reason, is pinned (tests/upstream/README.md repeats them), so that
// a change of the binding rules or of upstream's tables shows.
func TestCRDExpressionsNotAskedArePinned(t *testing.T) {
	reports, err := extractUpstreamTests(testModuleDir(t))
	if err != nil {
		t.Fatal(err)
	}
	buildUpstreamTestCorpus(reports)
	got := map[string]map[string]int{}
	for _, r := range reports {
		if r.NotBound != nil {
			got[r.Source.File] = r.NotBound
		}
	}
	want := map[string]map[string]int{
		"pkg/apiserver/schema/cel/validation_test.go": {
			"inexact: upstream's DRA environment does not give the table's answer (error) for the bound rule": 9,
			"inexact: upstream's DRA environment does not give the table's answer (true) for the bound rule":  4,
			"oldSelf: data this reader does not fold (YAML, a function)":                                      1,
			"oldSelf: null where the schema is not nullable":                                                  3,
			"self: a root object, where apiVersion, kind and metadata are declared besides (isRoot)":          6,
			"self: data not of the schema's type":                                                             7,
			"self: unknown fields preserved or an embedded resource":                                          43,
			"self: x-kubernetes-list-type set or map (equality and + are not a list literal's)":               66,
		},
		"pkg/apiserver/schema/cel/celcoststability_test.go": {
			"inexact: upstream's DRA environment does not give the table's answer (true) for the bound rule": 6,
			"self: data this reader does not fold (YAML, a function)":                                        13,
			"self: the case has no data":                                                        280,
			"self: unknown fields preserved or an embedded resource":                            28,
			"self: x-kubernetes-list-type set or map (equality and + are not a list literal's)": 55,
		},
		"pkg/apiserver/schema/cel/compilation_test.go": {
			"oldSelf: the case has no data (a compile-time test, a schema without an object)": 19,
			"self: the case has no data (a compile-time test, a schema without an object)":    76,
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("not asked:\n%#v\nwant\n%#v", got, want)
	}
}
