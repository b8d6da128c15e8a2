package main

import (
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

func TestOnlyUpstreamCompileTimeRefusalsAreKnownGaps(t *testing.T) {
	cases := map[string]string{
		"device d: upstream compile error (too complex, exceeds cost limit), ours value true":                          "static cost estimation",
		"device d: upstream compile error (found no matching overload for 'f'), ours runtime error (no such overload)": "type checking: overloads",
		"device d: upstream compile error (expected type 'bool' but found 'int'), ours value false":                    "type checking: operand and element types",
		"device d: upstream value true, ours value false":                                                              "",
		"device d: upstream compile error (found no matching overload), ours compile error (something else)":           "",
		"device d: upstream runtime error (no such key: x), ours value false":                                          "",
	}
	for difference, want := range cases {
		if got := knownGap([]string{difference}); got != want {
			t.Errorf("knownGap(%q) = %q, want %q", difference, got, want)
		}
	}
}

func TestExpectationsNeedAReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "expected.txt")
	if err := os.WriteFile(path, []byte("selector\t1 == 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readExpectations(path); err == nil {
		t.Fatal("a line without its reason was accepted")
	}
}
