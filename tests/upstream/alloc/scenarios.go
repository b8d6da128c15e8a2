package main

import (
	"errors"
	"fmt"
	"numadra.dev/tests/upstream/internal/expectations"
	"numadra.dev/tests/upstream/internal/oracle"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The scenarios of testdata/allocator, replayed against upstream. Each ends in one status:
//
//	same        upstream gives every claim the same answer
//	differs     it does not (a bug, unless listed with its reason)
//	unreadable  upstream's API types refuse an input field: a feature upstream does not have
//	skipped     inputs no judge here takes: a kind neither dra-allocate nor the scheduler
//	            places, flags not replayed, or pods that other scheduler plugins place
//	            (extended resources, Node allocatable resources: schedulerPluginsDecide)
//
// Every scenario not "same" must be listed in the expectations file with that status and
// why; a listed scenario whose status changed fails too, so the list stays true.
type scenarioResult struct {
	name, status, detail string
}

func runScenarios(draAllocate, dir, expectationsPath, countsPath string) int {
	expected, err := readExpectations(expectationsPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-allocate:", err)
		return 2
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-allocate:", err)
		return 2
	}
	counts := map[string]int{}
	failed := 0
	seen := map[string]bool{}
	for _, entry := range entries {
		if !entry.IsDir() {
			continue
		}
		result := replayScenario(draAllocate, filepath.Join(dir, entry.Name()))
		seen[result.name] = true
		counts[result.status]++
		want, listed := expected[result.name]
		if !listed {
			want = "same"
		}
		verdict := "ok"
		if result.status != want {
			verdict = "FAIL (expected " + want + ")"
			failed++
		}
		fmt.Printf("%-60s %-10s %s\n", result.name, result.status, verdict)
		if result.status != "same" && (verdict != "ok" || result.status == "differs") {
			fmt.Printf("    %s\n", strings.ReplaceAll(result.detail, "\n", "\n    "))
		}
	}
	for name := range expected {
		if !seen[name] {
			fmt.Printf("%-60s listed in %s but there is no such scenario: FAIL\n", name, expectationsPath)
			failed++
		}
	}
	var summary []string
	for _, status := range []string{"same", "differs", "unreadable", "skipped"} {
		summary = append(summary, fmt.Sprintf("%d %s", counts[status], status))
	}
	fmt.Printf("upstream-allocate: %d scenarios: %s; %d not as expected\n", len(seen), strings.Join(summary, ", "), failed)
	documented := map[string]int{"scenarios.judged": len(seen), "scenarios.listed": len(seen) - counts["same"]}
	for _, status := range []string{"same", "differs", "unreadable", "skipped"} {
		documented["scenarios."+status] = counts[status]
	}
	if err := oracle.WriteCounts(countsPath, documented); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-allocate:", err)
		return 2
	}
	if failed > 0 {
		return 1
	}
	return 0
}

func replayScenario(draAllocate, folder string) scenarioResult {
	result := scenarioResult{name: filepath.Base(folder)}
	files, node, err := scenarioInputs(folder)
	if err != nil {
		result.status, result.detail = "skipped", err.Error()
		return result
	}
	in, err := oracle.LoadInputs(files)
	if err != nil {
		var unsupported oracle.UnsupportedKindError
		if errors.As(err, &unsupported) {
			result.status, result.detail = "skipped", err.Error()
		} else {
			result.status, result.detail = "unreadable", err.Error()
		}
		return result
	}
	if why := schedulerPluginsDecide(in); why != "" {
		result.status, result.detail = "skipped", why
		return result
	}
	diff, _, err := compare(draAllocate, files, node, in, false)
	switch {
	case err != nil:
		result.status, result.detail = "differs", err.Error()
	case diff != "":
		result.status, result.detail = "differs", diff
	default:
		result.status = "same"
	}
	return result
}

// schedulerPluginsDecide says why the library cannot judge an input whose pods other scheduler
// plugins place, else "": a pod's extended resources (the DynamicResources plugin builds their
// claim from the node's DeviceClass mapping in unexported code, KEP-5004) and the Nodes'
// allocatable resources (NodeResourcesFit and DRANodeAllocatableResources decide which node
// holds a pod). tests/e2e runs such scenarios against the real kube-scheduler.
func schedulerPluginsDecide(in *inputs) string {
	if len(in.Pods) == 0 {
		return ""
	}
	for _, pod := range in.Pods {
		for _, container := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
			for _, list := range []v1.ResourceList{container.Resources.Requests, container.Resources.Limits} {
				for name := range list {
					if extendedResource(name) {
						return fmt.Sprintf("pod %s/%s asks for the extended resource %s: the scheduler plugin builds "+
							"its claim (KEP-5004), not the library", pod.Namespace, pod.Name, name)
					}
				}
			}
		}
	}
	for _, node := range in.Nodes {
		if len(node.Status.Allocatable) > 0 {
			return fmt.Sprintf("Node %s has allocatable resources: NodeResourcesFit and DRANodeAllocatableResources "+
				"decide where pods go, not the library", node.Name)
		}
	}
	return ""
}

// extendedResource: a resource name outside kubernetes.io's (cpu, memory, hugepages-*...),
// as v1helper.IsExtendedResourceName tells it.
func extendedResource(name v1.ResourceName) bool {
	text := string(name)
	if !strings.Contains(text, "/") {
		return false
	}
	return !strings.HasPrefix(text, "kubernetes.io/") && !strings.Contains(text, ".kubernetes.io/") ||
		strings.HasPrefix(text, "deviceclass.resource.kubernetes.io/")
}

// scenarioInputs lists a scenario's input files as the scenario test gives them to
// dra-allocate, and the node its args name.
func scenarioInputs(folder string) ([]string, string, error) {
	node := ""
	var named []string
	if args, err := os.ReadFile(filepath.Join(folder, "args")); err == nil {
		fields := strings.Fields(string(args))
		for i := 0; i < len(fields); i++ {
			switch {
			case fields[i] == "--node" && i+1 < len(fields):
				node = fields[i+1]
				i++
			case fields[i] == "--explain":
			case (fields[i] == "--output" || fields[i] == "-o") && i+1 < len(fields) && fields[i+1] == "json":
				i++ // the harness always asks for JSON
			case strings.HasPrefix(fields[i], "--"):
				return nil, "", fmt.Errorf("args flag %s is not replayed", fields[i])
			default:
				named = append(named, filepath.Join(folder, fields[i]))
			}
		}
	}
	if len(named) > 0 {
		return named, node, nil
	}
	entries, err := os.ReadDir(folder)
	if err != nil {
		return nil, "", err
	}
	var files []string
	for _, entry := range entries {
		name := entry.Name()
		if strings.HasPrefix(name, "expected") || name == "args" {
			continue
		}
		if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".json") {
			files = append(files, filepath.Join(folder, name))
		}
	}
	sort.Strings(files)
	return files, node, nil
}

// scenarioExpectations is the layout of scenario-expectations.txt.
var scenarioExpectations = expectations.Format{Fields: []string{"scenario", "status", "reason"}, KeyFields: 1}

// readExpectations reads the status each listed scenario must get, by scenario.
func readExpectations(path string) (map[string]string, error) {
	entries, err := scenarioExpectations.Read(path)
	if err != nil {
		return nil, err
	}
	expected := map[string]string{}
	for _, entry := range entries {
		switch status := entry.Fields[1]; status {
		case "differs", "unreadable", "skipped":
			expected[entry.Fields[0]] = status
		default:
			return nil, entry.Errorf("status %q is not differs, unreadable or skipped", status)
		}
	}
	return expected, nil
}
