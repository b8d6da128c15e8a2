// upstream-attrs compares the topology attributes numa-probe publishes for a machine with what
// upstream's own helpers (k8s.io/dynamic-resource-allocation/deviceattribute) compute from the
// same sysfs tree: numaNode (scalar and list forms), pcieRoot and pciBusID of every PCI device,
// and the NUMA node of every CPU of every CPU device.
//
//	upstream-attrs --numa-probe build/bin/numa-probe --sysfs-root <tree>/sys [--list]
//	               [--expect NAME]...
//	upstream-attrs --numa-probe build/bin/numa-probe --machines build/testdata/sysfs
//	               --expectations tests/upstream/attrs/expected-divergences.txt
//	               [--gathered DIR --scratch DIR]
//
// The second form runs every machine folder (and every hwloc-gathered NAME.tar.bz2 of DIR,
// unpacked below --scratch) in both forms and checks that each shows exactly the divergences
// the expectations file names for it.
//
// It runs numa-probe (--output json, and --numa-list with --list) on the tree, then asks the
// helpers. Every difference must be one of the deliberate ones the README lists ("Where this
// differs from upstream's helpers, on purpose"), recognised from the tree itself; any other
// difference fails. --expect NAME asserts that divergence NAME shows on this tree (the mocked
// machines built to show it), so a divergence that silently disappears fails too.
//
// Exit status: 0 agreement (explained differences allowed), 1 an unexplained difference or a
// missing expected divergence, 2 bad usage or a broken input.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("upstream-attrs", flag.ContinueOnError)
	flags.SetOutput(stderr)
	probe := flags.String("numa-probe", "", "the numa-probe binary")
	root := flags.String("sysfs-root", "", "the machine's sysfs folder (the one with bus/ and devices/)")
	list := flags.Bool("list", false, "compare the list form of numaNode (numa-probe --numa-list)")
	machines := flags.String("machines", "", "a folder of machine folders, each with a sys/ folder")
	expectationsFile := flags.String("expectations", "", "with --machines: the divergences each tree shows")
	gathered := flags.String("gathered", "", "with --machines: hwloc's gathered NAME.tar.bz2 trees too")
	scratch := flags.String("scratch", "", "with --gathered: where to unpack them")
	var expected stringList
	flags.Var(&expected, "expect", "a divergence this tree must show (repeatable): "+strings.Join(divergenceNames(), ", "))
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *probe != "" && *machines != "" && *expectationsFile != "" && flags.NArg() == 0 {
		return suite(*probe, *machines, *expectationsFile, *gathered, *scratch, stdout, stderr)
	}
	if *probe == "" || *root == "" || flags.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: upstream-attrs --numa-probe BIN --sysfs-root DIR [--list] [--expect NAME]...")
		return 2
	}
	for _, name := range expected {
		if _, known := divergences[name]; !known {
			fmt.Fprintf(stderr, "upstream-attrs: --expect %s: not a divergence the README lists (%s)\n", name, strings.Join(divergenceNames(), ", "))
			return 2
		}
	}
	devices, err := publishedDevices(*probe, *root, *list)
	if err != nil {
		fmt.Fprintf(stderr, "upstream-attrs: %v\n", err)
		return 2
	}
	tree := newTree(*root)
	report := compare(tree, devices, *list)
	return printReport(report, expected, stdout)
}

func suite(probe, machines, expectationsFile, gathered, scratch string, stdout, stderr io.Writer) int {
	expected, err := readExpectations(expectationsFile)
	if err != nil {
		fmt.Fprintf(stderr, "upstream-attrs: %v\n", err)
		return 2
	}
	trees, err := machineTrees(machines)
	if err != nil {
		fmt.Fprintf(stderr, "upstream-attrs: %v\n", err)
		return 2
	}
	if gathered != "" {
		if scratch == "" {
			fmt.Fprintln(stderr, "upstream-attrs: --gathered needs --scratch")
			return 2
		}
		more, err := gatheredTrees(gathered, scratch)
		if err != nil {
			fmt.Fprintf(stderr, "upstream-attrs: %v\n", err)
			return 2
		}
		for name, sys := range more {
			trees["hwloc-gathered/"+name] = sys
		}
	}
	return runSuite(probe, trees, expected, stdout)
}

// publishedDevices runs numa-probe on the tree and returns the devices of its slices.
func publishedDevices(probe, root string, list bool) ([]device, error) {
	args := []string{"--sysfs-root", root, "--node-name", "upstream-check", "--output", "json"}
	if list {
		args = append(args, "--numa-list")
	}
	command := exec.Command(probe, args...)
	var out, errOut bytes.Buffer
	command.Stdout, command.Stderr = &out, &errOut
	if err := command.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", probe, strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	var answer struct {
		Items []struct {
			Spec struct {
				Devices []device `json:"devices"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out.Bytes(), &answer); err != nil {
		return nil, fmt.Errorf("numa-probe's JSON: %v", err)
	}
	var devices []device
	for _, item := range answer.Items {
		devices = append(devices, item.Spec.Devices...)
	}
	return devices, nil
}

func printReport(r report, expected []string, out io.Writer) int {
	status := 0
	for _, line := range r.agreed {
		fmt.Fprintf(out, "agree      %s\n", line)
	}
	for _, d := range r.explained {
		fmt.Fprintf(out, "deliberate %s [%s]: %s\n", d.what, d.divergence, d.detail)
	}
	for _, d := range r.unexplained {
		status = 1
		fmt.Fprintf(out, "DIFFERENT  %s: %s\n", d.what, d.detail)
	}
	shown := shownDivergences(r)
	for _, name := range expected {
		if !slices.Contains(shown, name) {
			status = 1
			fmt.Fprintf(out, "MISSING    divergence %s was expected on this tree and did not show\n", name)
		}
	}
	fmt.Fprintf(out, "summary: %d agree, %d deliberate (%s), %d unexplained\n", len(r.agreed), len(r.explained), strings.Join(shown, ", "), len(r.unexplained))
	return status
}
