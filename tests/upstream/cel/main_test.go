package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestTheSameSeedGivesTheSameExpression(t *testing.T) {
	if newExprGenerator(9).expression() != newExprGenerator(9).expression() {
		t.Fatal("seed 9 gave two expressions")
	}
	distinct := map[string]bool{}
	for seed := uint64(1); seed <= 200; seed++ {
		distinct[newExprGenerator(seed).expression()] = true
	}
	if len(distinct) < 120 {
		t.Fatalf("200 seeds gave only %d distinct expressions", len(distinct))
	}
}

func TestExpectationsNeedAReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "expected.txt")
	if err := os.WriteFile(path, []byte("selector | 1 == 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readExpectations(path); err == nil {
		t.Fatal("a line without its reason was accepted")
	}
}

func cost(n uint64) *uint64 { return &n }

// Values are compared exactly: integers above 2^53 (int64 and uint64) that differ are different
// answers, and so are a double's -0 and 0.
func TestValuesAreComparedExactly(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`{"int":9007199254740993}`, `{"int":9007199254740992}`, false},
		{`{"int":9223372036854775807}`, `{"int":9223372036854775806}`, false},
		{`{"int":-9223372036854775808}`, `{"int":-9223372036854775807}`, false},
		{`18446744073709551615`, `18446744073709551614`, false},
		{`{"int":9223372036854775807}`, `{"int":9223372036854775807}`, true},
		{`{"ints":[1,9007199254740993]}`, `{"ints":[1,9007199254740993]}`, true},
		{`{"ints":[1,9007199254740993]}`, `{"ints":[1,9007199254740992]}`, false},
		{`-0`, `0`, false},
		{`-0.0`, `0.0`, false},
		{`-0`, `-0.0`, true},
		{`1`, `1.0`, true}, // Go writes the double 1.0 as 1
		{`0.1`, `0.1000000000000000055511151231257827`, true},
		{`0.1`, `0.10000000000000002`, false},
		{`{"string":"a"}`, `{"string":"b"}`, false},
		{`{"string":"a"}`, `{"version":"a"}`, false},
		{`true`, `true`, true},
		{`true`, `false`, false},
	} {
		a := answer{Value: json.RawMessage(c.a), MaxCost: cost(1)}
		b := answer{Value: json.RawMessage(c.b), MaxCost: cost(1)}
		if got := sameAnswer(a, b); got != c.same {
			t.Errorf("%s against %s: same %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// The static cost estimate is compared whenever either side gives one.
func TestACostOnOneSideOnlyIsADifference(t *testing.T) {
	value := json.RawMessage(`true`)
	for _, c := range []struct {
		name string
		a, b answer
		same bool
	}{
		{"ours lacks it", answer{Value: value, MaxCost: cost(3)}, answer{Value: value}, false},
		{"upstream lacks it", answer{Value: value}, answer{Value: value, MaxCost: cost(3)}, false},
		{"the costs differ", answer{Value: value, MaxCost: cost(3)}, answer{Value: value, MaxCost: cost(4)}, false},
		{"the same cost", answer{Value: value, MaxCost: cost(3)}, answer{Value: value, MaxCost: cost(3)}, true},
		{"both refuse when read", answer{CompileError: "a"}, answer{CompileError: "b"}, true},
		{"a runtime error with its cost", answer{Error: "x", MaxCost: cost(2)}, answer{Error: "y"}, false},
		{"a harness error", answer{InputError: "x"}, answer{InputError: "x"}, false},
	} {
		if got := sameAnswer(c.a, c.b); got != c.same {
			t.Errorf("%s: same %v, want %v", c.name, got, c.same)
		}
	}
}

// The committed lists read (their format is checked here, not only when the judge runs).
func TestTheCommittedExpectationsRead(t *testing.T) {
	for _, path := range []string{"expected-differences.txt", "upstream-tests-expected-differences.txt"} {
		if _, err := readExpectations(path); err != nil {
			t.Error(err)
		}
	}
}
