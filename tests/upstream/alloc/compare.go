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

// outcome is one claim's answer in the form both allocators are compared in: which
// devices each request got (in result order, which upstream defines: requests in spec
// order, devices in the order found), their consumed capacity, whether they are shared,
// and the node selector.
type outcome struct {
	Claim     string `json:"claim"`
	Allocated bool   `json:"allocated"`
	// Refused: the allocator returned an error (invalid input, a runtime CEL error, an "All"
	// request a constraint cannot hold...) rather than "does not fit". Compared; the
	// messages are shown but not compared: ours often say more (the pool's missing slices,
	// the field path).
	Refused      bool            `json:"refused,omitempty"`
	Error        string          `json:"-"`
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

func upstreamOutcomes(answers []claimAnswer) []outcome {
	var outcomes []outcome
	for _, answer := range answers {
		o := outcomeOf(answer.claim, answer.allocation)
		if answer.err != nil {
			o.Refused, o.Error = true, answer.err.Error()
		}
		outcomes = append(outcomes, o)
	}
	return outcomes
}

// ourOutcomes runs dra-allocate on the same files and reads its answer for the claims
// that were not allocated in the input.
func ourOutcomes(draAllocate string, paths []string, node string, in *inputs) ([]outcome, string, error) {
	args := append([]string{"--output", "json", "--time-budget", "0", "--node", node}, paths...)
	cmd := exec.Command(draAllocate, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	exitCode := 0
	if err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return nil, "", fmt.Errorf("running %s: %w", draAllocate, err)
		}
		exitCode = exitErr.ExitCode()
	}
	if exitCode == 2 {
		// Invalid input: every claim is refused, as upstream would refuse the objects.
		var outcomes []outcome
		for _, claim := range in.Claims {
			if claim.Status.Allocation == nil {
				outcomes = append(outcomes, outcome{Claim: claimKey(claim), Refused: true, Error: "invalid input: " + strings.TrimSpace(stderr.String())})
			}
		}
		return outcomes, stderr.String(), nil
	}
	if exitCode != 0 && exitCode != 1 {
		return nil, stderr.String(), fmt.Errorf("dra-allocate exited with %d: %s", exitCode, stderr.String())
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil {
		return nil, stderr.String(), fmt.Errorf("dra-allocate's output is not a List: %w", err)
	}
	printed := map[string]*resourceapi.ResourceClaim{}
	for _, item := range list.Items {
		var claim resourceapi.ResourceClaim
		if err := json.Unmarshal(item, &claim); err != nil {
			return nil, stderr.String(), fmt.Errorf("dra-allocate printed a claim upstream cannot read: %w", err)
		}
		printed[claimKey(&claim)] = &claim
	}
	refusals := refusedClaims(stderr.String())
	var outcomes []outcome
	for _, claim := range in.Claims {
		if claim.Status.Allocation != nil {
			continue
		}
		got, ok := printed[claimKey(claim)]
		if !ok {
			return nil, stderr.String(), fmt.Errorf("dra-allocate did not print claim %s", claimKey(claim))
		}
		o := outcomeOf(got, got.Status.Allocation)
		o.Error = refusals[claimKey(claim)]
		o.Refused = o.Error != ""
		outcomes = append(outcomes, o)
	}
	return outcomes, stderr.String(), nil
}

// differences lists, one line each, where the two answers disagree.
func differences(upstream, ours []outcome) []string {
	var lines []string
	if len(upstream) != len(ours) {
		return []string{fmt.Sprintf("upstream answered %d claims, dra-allocate %d", len(upstream), len(ours))}
	}
	for i := range upstream {
		u, o := upstream[i], ours[i]
		uText, _ := json.Marshal(u)
		oText, _ := json.Marshal(o)
		if !bytes.Equal(uText, oText) {
			line := fmt.Sprintf("claim %s:\n    upstream:     %s\n    dra-allocate: %s", u.Claim, uText, oText)
			if u.Error != "" || o.Error != "" {
				line += fmt.Sprintf("\n    upstream's error:     %s\n    dra-allocate's error: %s", u.Error, o.Error)
			}
			lines = append(lines, line)
			// Later claims depend on this one's devices: the first difference is the one to read.
			break
		}
	}
	return lines
}

// refusedClaims reads dra-allocate's "claim NS/NAME: not allocated: ERROR" lines: the
// claims its allocator refused with an error, as upstream's Allocate returns one.
func refusedClaims(stderr string) map[string]string {
	refusals := map[string]string{}
	for _, line := range strings.Split(stderr, "\n") {
		rest, ok := strings.CutPrefix(line, "claim ")
		if !ok {
			continue
		}
		name, message, ok := strings.Cut(rest, ": not allocated: ")
		if ok {
			refusals[name] = message
		}
	}
	return refusals
}
