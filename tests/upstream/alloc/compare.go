package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// outcome is one claim's allocation in the form both allocators are compared in: which
// devices each request got (in result order, which upstream defines: requests in spec
// order, devices in the order found), their consumed capacity, whether they are shared,
// and the node selector. Whether a unit was refused with an error or not placed is judged
// per unit (compareUnit); the messages are shown but not compared: ours often say more (the
// pool's missing slices, the field path).
type outcome struct {
	Claim        string          `json:"claim"`
	Allocated    bool            `json:"allocated"`
	Results      []resultOutcome `json:"results,omitempty"`
	NodeSelector string          `json:"nodeSelector,omitempty"`
}

type resultOutcome struct {
	Request          string            `json:"request"`
	Device           string            `json:"device"` // driver/pool/device
	AdminAccess      bool              `json:"adminAccess,omitempty"`
	Shared           bool              `json:"shared,omitempty"` // has a shareID (its value is random)
	ConsumedCapacity map[string]string `json:"consumedCapacity,omitempty"`
	Tolerations      int               `json:"tolerations,omitempty"`
	BindingConds     []string          `json:"bindingConditions,omitempty"`
	SkipNodeOps      []string          `json:"skipNodeOperations,omitempty"`
}

func claimKey(claim *resourceapi.ResourceClaim) string {
	return claim.Namespace + "/" + claim.Name
}

func outcomeOf(claim *resourceapi.ResourceClaim, allocation *resourceapi.AllocationResult) outcome {
	o := outcome{Claim: claimKey(claim), Allocated: allocation != nil}
	if allocation == nil {
		return o
	}
	for _, result := range allocation.Devices.Results {
		r := resultOutcome{
			Request:      result.Request,
			Device:       result.Driver + "/" + result.Pool + "/" + result.Device,
			AdminAccess:  ptr.Deref(result.AdminAccess, false),
			Shared:       result.ShareID != nil,
			Tolerations:  len(result.Tolerations),
			BindingConds: result.BindingConditions,
		}
		for _, operation := range result.SkipNodeOperations {
			r.SkipNodeOps = append(r.SkipNodeOps, string(operation))
		}
		if len(result.ConsumedCapacity) > 0 {
			r.ConsumedCapacity = map[string]string{}
			for name, quantity := range result.ConsumedCapacity {
				r.ConsumedCapacity[string(name)] = quantity.String()
			}
		}
		o.Results = append(o.Results, r)
	}
	if allocation.NodeSelector != nil {
		text, _ := json.Marshal(allocation.NodeSelector)
		o.NodeSelector = string(text)
	}
	return o
}

// ourRun is what dra-allocate answered for a whole input.
type ourRun struct {
	exitCode int
	stderr   string
	claims   map[string]*resourceapi.ResourceClaim // printed, by claim key
	failures map[string]string                     // unit label -> what follows "LABEL: " on stderr
}

// pendingRun is dra-allocate running on an input, while the judge validates it.
type pendingRun struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	startErr       error
}

// startOurs starts dra-allocate on the files (on one node when node is not "").
func startOurs(draAllocate string, paths []string, node string) *pendingRun {
	args := []string{"--output", "json", "--time-budget", "0"}
	if node != "" {
		args = append(args, "--node", node)
	}
	pending := &pendingRun{name: draAllocate, cmd: exec.Command(draAllocate, append(args, paths...)...)}
	pending.cmd.Stdout, pending.cmd.Stderr = &pending.stdout, &pending.stderr
	pending.startErr = pending.cmd.Start()
	return pending
}

// runOurs runs dra-allocate on the files and reads its answer.
func runOurs(draAllocate string, paths []string, node string) (*ourRun, error) {
	return startOurs(draAllocate, paths, node).wait()
}

// wait reads dra-allocate's answer when it is done.
func (p *pendingRun) wait() (*ourRun, error) {
	if p.startErr != nil {
		return nil, fmt.Errorf("running %s: %w", p.name, p.startErr)
	}
	run := &ourRun{}
	if err := p.cmd.Wait(); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return nil, fmt.Errorf("running %s: %w", p.name, err)
		}
		run.exitCode = exitErr.ExitCode()
	}
	stdout, stderr := &p.stdout, &p.stderr
	run.stderr = stderr.String()
	switch run.exitCode {
	case 0, 1:
	case 2:
		return run, nil // invalid input: nothing printed
	default:
		return nil, fmt.Errorf("dra-allocate exited with %d: %s", run.exitCode, run.stderr)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil {
		return nil, fmt.Errorf("dra-allocate's output is not a List: %w", err)
	}
	run.claims = map[string]*resourceapi.ResourceClaim{}
	for _, item := range list.Items {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(item, &meta); err != nil || meta.Kind != "ResourceClaim" {
			continue
		}
		var claim resourceapi.ResourceClaim
		if err := json.Unmarshal(item, &claim); err != nil {
			return nil, fmt.Errorf("dra-allocate printed a claim upstream cannot read: %w", err)
		}
		run.claims[claimKey(&claim)] = &claim
	}
	run.failures = failureLines(run.stderr)
	return run, nil
}

// failureLines reads dra-allocate's "claim NS/NAME: ..." and "pod NS/NAME: ..." lines: a unit
// it did not allocate ("not allocated: ERROR" when its allocator refused with an error, as
// upstream's Allocate returns one; "not allocated on ..." when it fits no node).
func failureLines(stderr string) map[string]string {
	failures := map[string]string{}
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(line, "claim ") && !strings.HasPrefix(line, "pod ") {
			continue
		}
		label, message, ok := strings.Cut(line, ": ")
		if ok && strings.Count(label, " ") == 1 {
			if _, seen := failures[label]; !seen {
				failures[label] = message
			}
		}
	}
	return failures
}

// ourVerdict is dra-allocate's answer for one unit.
type ourVerdict struct {
	refused  bool
	unplaced bool
	// silent: no line says the unit is not allocated, yet a claim it asks is not allocated.
	silent   bool
	message  string    // its failure line
	outcomes []outcome // per claim to allocate, as printed
}

func (v ourVerdict) String() string {
	switch {
	case v.refused:
		return "refused: " + v.message
	case v.unplaced:
		return "not placed: " + v.message
	case v.silent:
		return "no line says it is not allocated, yet it is not: " + outcomesText(v.outcomes)
	}
	return "placed: " + outcomesText(v.outcomes)
}

func (run *ourRun) verdict(u *unit, toAllocate []*resourceapi.ResourceClaim) (ourVerdict, error) {
	if message, failed := run.failures[u.label]; failed {
		if rest, ok := strings.CutPrefix(message, "not allocated: "); ok {
			return ourVerdict{refused: true, message: rest}, nil
		}
		return ourVerdict{unplaced: true, message: message}, nil
	}
	var verdict ourVerdict
	for _, claim := range toAllocate {
		got, ok := run.claims[claimKey(claim)]
		if !ok {
			return verdict, fmt.Errorf("dra-allocate did not print claim %s", claimKey(claim))
		}
		verdict.outcomes = append(verdict.outcomes, outcomeOf(got, got.Status.Allocation))
		verdict.silent = verdict.silent || got.Status.Allocation == nil
	}
	return verdict, nil
}

func outcomesText(outcomes []outcome) string {
	text, _ := json.Marshal(outcomes)
	return string(text)
}

func upstreamOutcomes(claims []*resourceapi.ResourceClaim, allocations []*resourceapi.AllocationResult) []outcome {
	var outcomes []outcome
	for i, claim := range claims {
		outcomes = append(outcomes, outcomeOf(claim, allocations[i]))
	}
	return outcomes
}

// compareUnit judges dra-allocate's answer for a unit against upstream's answers on every
// node. It returns the difference ("" when none) and the node answer dra-allocate's placement is
// (nil when the unit is not placed).
//
//   - upstream refuses (an error on any node fails the scheduling attempt): dra-allocate must
//     refuse it with an error too;
//   - no node passes: dra-allocate must not place it, and not call it an error;
//   - else dra-allocate must place it, and its allocations must be upstream's on one of the
//     nodes that pass (each claim allocated or not, its devices, consumed capacity, node
//     selector... see outcome). dra-allocate prints no node for a pod: its allocations are all
//     it states. Where a device is local to a node the node selector names it, so the node
//     matches too; where every device is reachable from several nodes, the allocations are the
//     same on each of them, and dra-allocate's answer is the scheduler's on any of them.
func compareUnit(u *unit, upstream unitAnswer, ours ourVerdict) (string, *nodeAnswer) {
	difference := func(what string) string {
		return fmt.Sprintf("%s: %s\n    dra-allocate: %s\n%s", u.label, what, ours, upstream.describe())
	}
	fits := upstream.fitting()
	switch {
	case upstream.refused:
		if ours.refused {
			return "", nil
		}
		return difference("upstream refuses it with an error (the scheduler's attempt fails)"), nil
	case upstream.unschedulable != "" || len(fits) == 0:
		if ours.unplaced {
			return "", nil
		}
		return difference("upstream places it on no node"), nil
	case ours.refused || ours.unplaced || ours.silent:
		return difference(fmt.Sprintf("upstream places it on %d of %d nodes", len(fits), len(upstream.nodes))), nil
	}
	oursText := outcomesText(ours.outcomes)
	for i := range fits {
		if outcomesText(upstreamOutcomes(upstream.toAllocate, fits[i].allocations)) == oursText {
			return "", &fits[i]
		}
	}
	return difference("dra-allocate's allocations are upstream's on none of the nodes that fit"), nil
}

// describe lists upstream's answer on every node, for a difference's report.
func (a *unitAnswer) describe() string {
	var lines []string
	switch {
	case a.unschedulable != "":
		lines = append(lines, "    upstream: unschedulable before any node is tried: "+a.unschedulable)
	case a.refused:
		lines = append(lines, "    upstream: refused: "+a.err)
	}
	for _, node := range a.nodes {
		line := fmt.Sprintf("    upstream on %s: %s", node.node, node.kind)
		switch {
		case node.kind == nodeFits:
			line += ": " + outcomesText(upstreamOutcomes(a.toAllocate, node.allocations))
		case node.err != "":
			line += ": " + node.err
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
