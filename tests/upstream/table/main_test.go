package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo writes a script that stands for `go test -json`: it prints the given lines and exits
// with the given status, whatever its arguments.
func fakeGo(t *testing.T, lines []string, status int) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\ncat <<'EOF'\n" + strings.Join(lines, "\n") + "\nEOF\nexit " +
		string(rune('0'+status)) + "\n"
	path := filepath.Join(dir, "go")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func verdictEvent(test string) string {
	return `{"Action":"output","Test":"TestNumadraOracle/` + test +
		`","Output":"NUMADRA-ORACLE {\"verdict\":\"same\"}\n"}`
}

func TestATableCutShortByANonZeroExitFails(t *testing.T) {
	goCommand := fakeGo(t, []string{verdictEvent("a"), verdictEvent("b"),
		`{"Action":"output","Output":"panic: half-way\n"}`}, 2)
	verdicts, failures, err := runTable(goCommand, t.TempDir(), filepath.Join(t.TempDir(), "go.mod"), "dra-allocate")
	if err != nil {
		t.Fatal(err)
	}
	if len(verdicts) != 2 || len(failures) != 1 || !strings.Contains(failures[0], "after 2 cases") {
		t.Fatalf("verdicts %v failures %v: want 2 verdicts and the exit reported as a failure", verdicts, failures)
	}
	if status := report(verdicts, failures, nil, false, 0); status != 1 {
		t.Fatalf("report of a table cut short returned %d, want 1", status)
	}
}

func TestACompleteTableAboveTheFloorPasses(t *testing.T) {
	goCommand := fakeGo(t, []string{verdictEvent("a"), verdictEvent("b")}, 0)
	verdicts, failures, err := runTable(goCommand, t.TempDir(), filepath.Join(t.TempDir(), "go.mod"), "dra-allocate")
	if err != nil || len(failures) != 0 {
		t.Fatalf("err %v failures %v", err, failures)
	}
	if status := report(verdicts, failures, nil, false, 2); status != 0 {
		t.Fatalf("report returned %d, want 0", status)
	}
}

func TestFewerCasesThanTheFloorFail(t *testing.T) {
	goCommand := fakeGo(t, []string{verdictEvent("a")}, 0)
	verdicts, failures, err := runTable(goCommand, t.TempDir(), filepath.Join(t.TempDir(), "go.mod"), "dra-allocate")
	if err != nil || len(failures) != 0 {
		t.Fatalf("err %v failures %v", err, failures)
	}
	if status := report(verdicts, failures, nil, false, 2); status != 1 {
		t.Fatalf("report of 1 case under a floor of 2 returned %d, want 1", status)
	}
}

// The committed list reads (its format is checked here, not only when the judge runs).
func TestTheCommittedTableExpectationsRead(t *testing.T) {
	expected, err := readExpectations("table-expectations.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(expected) == 0 {
		t.Fatal("table-expectations.txt lists nothing")
	}
}
