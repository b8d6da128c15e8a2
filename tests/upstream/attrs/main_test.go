package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A one-device tree: 0000:01:00.0 under root complex pci0000:00 on node 1 of two nodes of one
// socket (SLIT 10/11).
func smallTree(t *testing.T) *tree {
	t.Helper()
	root := t.TempDir()
	write := func(path, content string) {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("devices/pci0000:00/0000:00:01.0/0000:01:00.0/numa_node", "1\n")
	write("devices/system/node/online", "0-1\n")
	write("devices/system/node/node0/distance", "10 11\n")
	write("devices/system/node/node1/distance", "11 10\n")
	write("devices/system/node/node0/cpulist", "0\n")
	write("devices/system/node/node1/cpulist", "1\n")
	write("devices/system/cpu/cpu0/topology/physical_package_id", "0\n")
	write("devices/system/cpu/cpu1/topology/physical_package_id", "0\n")
	if err := os.MkdirAll(filepath.Join(root, "bus/pci/devices"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0", filepath.Join(root, "bus/pci/devices/0000:01:00.0")); err != nil {
		t.Fatal(err)
	}
	return newTree(root)
}

func gpu(numa attribute, root string) device {
	busID := "0000:01:00.0"
	return device{Name: "gpu-0000-01-00-0", Attributes: map[string]attribute{
		pciBusIDName: {String: &busID},
		pcieRootName: {String: &root},
		numaNodeName: numa,
	}}
}

func scalar(v int64) attribute  { return attribute{Int: &v} }
func list(v ...int64) attribute { return attribute{Ints: v} }

func TestAgreementHasNoDifference(t *testing.T) {
	tr := smallTree(t)
	r := compare(tr, []device{gpu(scalar(1), "pci0000:00")}, false)
	if len(r.unexplained)+len(r.explained) != 0 {
		t.Fatalf("differences: %+v %+v", r.unexplained, r.explained)
	}
	r = compare(tr, []device{gpu(list(1, 0), "pci0000:00")}, true)
	if len(r.unexplained)+len(r.explained) != 0 {
		t.Fatalf("list: differences: %+v %+v", r.unexplained, r.explained)
	}
}

func TestAWrongNodeIsUnexplained(t *testing.T) {
	r := compare(smallTree(t), []device{gpu(scalar(0), "pci0000:00")}, false)
	if len(r.unexplained) != 1 || !strings.Contains(r.unexplained[0].detail, "we publish 0, upstream 1") {
		t.Fatalf("got %+v", r.unexplained)
	}
}

func TestAWrongListIsUnexplained(t *testing.T) {
	r := compare(smallTree(t), []device{gpu(list(1), "pci0000:00")}, true)
	if len(r.unexplained) != 1 || !strings.Contains(r.unexplained[0].detail, "upstream [1,0]") {
		t.Fatalf("got %+v", r.unexplained)
	}
}

func TestAWrongRootIsUnexplained(t *testing.T) {
	r := compare(smallTree(t), []device{gpu(scalar(1), "pci0000:80")}, false)
	if len(r.unexplained) != 1 || r.unexplained[0].what != "gpu-0000-01-00-0 pcieRoot" {
		t.Fatalf("got %+v", r.unexplained)
	}
}

func TestSparseNodeIdsExplainAListDifference(t *testing.T) {
	tr := smallTree(t)
	if err := os.WriteFile(filepath.Join(tr.root, "devices/system/node/online"), []byte("0,8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := tr.listDivergence(1); got != "sparse-node-ids" {
		t.Fatalf("listDivergence = %q", got)
	}
}

func TestANonSLITRowExplainsAListDifference(t *testing.T) {
	tr := smallTree(t)
	// A BIOS that prints 10 for every pair: upstream takes node 0 as "at the minimum distance".
	for _, node := range []string{"node0", "node1"} {
		if err := os.WriteFile(filepath.Join(tr.root, "devices/system/node", node, "distance"), []byte("10 10\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := compare(tr, []device{gpu(list(1), "pci0000:00")}, true)
	if len(r.unexplained) != 0 || len(r.explained) != 1 || r.explained[0].divergence != "non-slit-rows" {
		t.Fatalf("unexplained %+v, explained %+v", r.unexplained, r.explained)
	}
}

func TestExpectationsNameOnlyKnownDivergences(t *testing.T) {
	path := filepath.Join(t.TempDir(), "expected.txt")
	if err := os.WriteFile(path, []byte("m | list | cpu-scalar-numa,made-up\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readExpectations(path); err == nil || !strings.Contains(err.Error(), "made-up") {
		t.Fatalf("err = %v", err)
	}
}

// A stand-in for numa-probe that prints one slice with the small tree's GPU on node 1 (the list
// [1,0] with --numa-list).
func fakeProbe(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "numa-probe")
	script := `#!/bin/sh
numa='{"int":1}'
case "$*" in *--numa-list*) numa='{"ints":[1,0]}' ;; esac
echo '{"items":[{"spec":{"devices":[{"name":"gpu-0000-01-00-0","attributes":{` +
		`"resource.kubernetes.io/pciBusID":{"string":"0000:01:00.0"},` +
		`"resource.kubernetes.io/pcieRoot":{"string":"pci0000:00"},` +
		`"resource.kubernetes.io/numaNode":'"$numa"'}}]}}]}'
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestASuitePassesWhereTheExpectationsHold(t *testing.T) {
	var out strings.Builder
	if status := runSuite(fakeProbe(t), map[string]string{"m": smallTree(t).root}, expectedDivergences{}, &out); status != 0 {
		t.Fatalf("status %d: %s", status, out.String())
	}
}

func TestASuiteFailsWhenAnExpectedDivergenceDoesNotShow(t *testing.T) {
	var out strings.Builder
	expected := expectedDivergences{"m scalar": {"sparse-node-ids"}}
	status := runSuite(fakeProbe(t), map[string]string{"m": smallTree(t).root}, expected, &out)
	if status != 1 || !strings.Contains(out.String(), "(expected: sparse-node-ids)") {
		t.Fatalf("status %d: %s", status, out.String())
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := parseCPUList("0-2,8")
	if err != nil || len(got) != 4 || got[3] != 8 {
		t.Fatalf("got %v %v", got, err)
	}
	if _, err := parseCPUList("3-1"); err == nil {
		t.Fatal("a descending range must be refused")
	}
}

// The committed list reads (its format is checked here, not only when the judge runs).
func TestTheCommittedDivergencesRead(t *testing.T) {
	expected, err := readExpectations("expected-divergences.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(expected) == 0 {
		t.Fatal("expected-divergences.txt lists nothing")
	}
}
