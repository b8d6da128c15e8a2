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

func TestExpectationsNeedAReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "expected.txt")
	if err := os.WriteFile(path, []byte("selector\t1 == 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readExpectations(path); err == nil {
		t.Fatal("a line without its reason was accepted")
	}
}
