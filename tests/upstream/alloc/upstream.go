package main

import (
	"context"
	"errors"
	"fmt"
	"numadra.dev/tests/upstream/internal/oracle"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
)

// How the scheduler asks upstream's allocator (k8s.io/kubernetes v1.37.2,
// pkg/scheduler/framework/plugins/dynamicresources), one pod at a time:
//
//   - PreFilter: the pod's claims in pod.spec.resourceClaims order. An allocated claim is not
//     allocated again: its allocation's nodeSelector limits the nodes (and it must be reservable
//     for the pod); the others are "to allocate", every class they name must exist (else the pod
//     is unschedulable). One allocator (structured.NewAllocator) is made for the pod with every
//     claim allocated in the cluster as allocated state.
//   - Filter, on every node (all of them: under 100 nodes the scheduler looks at every node, in
//     parallel, so their order does not matter): Allocate(ctx, node, claims to allocate), then
//     the allocated claims' nodeSelectors. An error wrapping ErrFailedAllocationOnNode (invalid
//     pools) fails that node only; any other error fails the whole scheduling attempt of the pod,
//     whichever node it came from; no result or an allocated claim not available there fails the
//     node.
//   - The pod goes to one of the nodes that passed (the scores decide, ties at random), its
//     claims get that node's allocations, and the next pod sees them as allocated.
//
// A claim no pod uses is asked the same way, as the claims of a pod of its own (the scheduler
// only allocates claims for pods; dra-allocate allocates such a claim alone).

// unit is what is allocated together: a pod's claims, or a claim no pod uses.
type unit struct {
	label string  // "pod NS/NAME" or "claim NS/NAME", as dra-allocate reports it
	pod   *v1.Pod // nil for a claim alone
	// The pod's claims in pod order (those made from templates too); nil entries for claims
	// missing from the input.
	claims  []*resourceapi.ResourceClaim
	missing string // a claim or template the pod names that is not in the input
}

// nodeKind is upstream's answer for one unit on one node.
type nodeKind string

const (
	nodeFits        nodeKind = "fits"
	nodeNoFit       nodeKind = "does not fit"
	nodeFailed      nodeKind = "fails this node" // ErrFailedAllocationOnNode
	nodeUnavailable nodeKind = "an allocated claim is not available here"
	nodeError       nodeKind = "error"
)

type nodeAnswer struct {
	node        string
	kind        nodeKind
	allocations []*resourceapi.AllocationResult // per claim to allocate, when it fits
	err         string
}

// unitAnswer is upstream's verdict for a unit: refused (the scheduling attempt fails with an
// error), unschedulable (no node passes), or the nodes where it fits with their allocations.
type unitAnswer struct {
	toAllocate    []*resourceapi.ResourceClaim
	refused       bool
	unschedulable string // why no node was tried at all (PreFilter)
	err           string
	nodes         []nodeAnswer // every candidate node, by name
}

func (a *unitAnswer) fitting() []nodeAnswer {
	var fits []nodeAnswer
	for _, answer := range a.nodes {
		if answer.kind == nodeFits {
			fits = append(fits, answer)
		}
	}
	return fits
}

// cluster is the state the scheduler sees: the allocation of every claim so far.
type cluster struct {
	in          *inputs
	allocations map[string]*resourceapi.AllocationResult // by claim key
	cache       *cel.Cache
}

func newCluster(in *inputs) *cluster {
	c := &cluster{in: in, allocations: map[string]*resourceapi.AllocationResult{}, cache: oracle.NewCELCache()}
	for _, claim := range in.Claims {
		if claim.Status.Allocation != nil {
			c.allocations[claimKey(claim)] = claim.Status.Allocation
		}
	}
	return c
}

func (c *cluster) tracker() *oracle.Tracker {
	tracker := oracle.NewTracker()
	keys := make([]string, 0, len(c.allocations))
	for key := range c.allocations {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		tracker.Add(c.allocations[key])
	}
	return tracker
}

// withAllocation is the claim as the scheduler's informer holds it now.
func (c *cluster) withAllocation(claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	allocation := c.allocations[claimKey(claim)]
	if allocation == claim.Status.Allocation {
		return claim
	}
	copied := claim.DeepCopy()
	copied.Status.Allocation = allocation
	return copied
}

// ask answers one unit on the candidate nodes, as the scheduler's DRA plugin does.
func (c *cluster) ask(ctx context.Context, u *unit, nodes []*v1.Node) unitAnswer {
	var answer unitAnswer
	if u.missing != "" {
		answer.unschedulable = u.missing
		return answer
	}
	type allocated struct {
		claim    *resourceapi.ResourceClaim
		selector *nodeaffinity.NodeSelector
	}
	var held []allocated
	for _, original := range u.claims {
		claim := c.withAllocation(original)
		if claim.Status.Allocation == nil {
			answer.toAllocate = append(answer.toAllocate, claim)
			continue
		}
		if u.pod != nil && !resourceclaim.CanBeReserved(claim) && !resourceclaim.IsReservedForPod(u.pod, claim, false) {
			answer.unschedulable = "resourceclaim in use: " + claimKey(claim)
			return answer
		}
		entry := allocated{claim: claim}
		if claim.Status.Allocation.NodeSelector != nil {
			selector, err := nodeaffinity.NewNodeSelector(claim.Status.Allocation.NodeSelector)
			if err != nil {
				answer.refused, answer.err = true, fmt.Sprintf("claim %s: %v", claimKey(claim), err)
				return answer
			}
			entry.selector = selector
		}
		held = append(held, entry)
	}
	for _, claim := range answer.toAllocate {
		if why := missingClass(c.in, claim); why != "" {
			answer.unschedulable = why
			return answer
		}
	}
	var allocator structured.Allocator
	if len(answer.toAllocate) > 0 {
		var err error
		allocator, err = structured.NewAllocator(ctx, oracle.AllFeatures, c.tracker().State,
			oracle.ClassLister(c.in.Classes), c.in.Slices, c.cache)
		if err != nil {
			answer.refused, answer.err = true, "creating the allocator: "+err.Error()
			return answer
		}
	}
	for _, node := range nodes {
		result := nodeAnswer{node: node.Name, kind: nodeFits}
		if allocator != nil {
			results, err := allocator.Allocate(ctx, node, answer.toAllocate)
			switch {
			case errors.Is(err, structured.ErrFailedAllocationOnNode):
				result.kind, result.err = nodeFailed, err.Error()
			case err != nil:
				result.kind, result.err = nodeError, err.Error()
			case len(results) != len(answer.toAllocate):
				result.kind = nodeNoFit
			default:
				for i := range results {
					result.allocations = append(result.allocations, &results[i])
				}
			}
		}
		if result.kind == nodeFits {
			for _, entry := range held {
				if entry.selector != nil && !entry.selector.Match(node) ||
					requiresOptionalNodeOperations(entry.claim.Status.Allocation) &&
						!slices.Contains(node.Status.DeclaredFeatures, "DRAOptionalNodeOperations") {
					result.kind, result.allocations = nodeUnavailable, nil
					result.err = "claim " + claimKey(entry.claim)
					break
				}
			}
		}
		if result.kind == nodeError && !answer.refused {
			// The first error (by node name) is the one reported; any fails the attempt.
			answer.refused, answer.err = true, fmt.Sprintf("node %s: %s", node.Name, result.err)
		}
		answer.nodes = append(answer.nodes, result)
	}
	return answer
}

// missingClass: the scheduler's PreFilter leaves a pod unschedulable when a class its claims
// name does not exist.
func missingClass(in *inputs, claim *resourceapi.ResourceClaim) string {
	exists := func(name string) bool {
		_, err := oracle.ClassLister(in.Classes).Get(name)
		return !apierrors.IsNotFound(err)
	}
	for _, request := range claim.Spec.Devices.Requests {
		if request.Exactly != nil && !exists(request.Exactly.DeviceClassName) {
			return fmt.Sprintf("request %s: device class %s does not exist", request.Name, request.Exactly.DeviceClassName)
		}
		for _, sub := range request.FirstAvailable {
			if !exists(sub.DeviceClassName) {
				return fmt.Sprintf("request %s/%s: device class %s does not exist", request.Name, sub.Name, sub.DeviceClassName)
			}
		}
	}
	return ""
}

func requiresOptionalNodeOperations(allocation *resourceapi.AllocationResult) bool {
	for _, result := range allocation.Devices.Results {
		if len(result.SkipNodeOperations) > 0 {
			return true
		}
	}
	return false
}

// commit records a unit's allocations, as the scheduler's assume cache does after Reserve.
func (c *cluster) commit(claims []*resourceapi.ResourceClaim, allocations []*resourceapi.AllocationResult) {
	for i, claim := range claims {
		c.allocations[claimKey(claim)] = allocations[i]
	}
}

// candidateNodes are the nodes dra-allocate and the scheduler consider for a unit: the one
// given (--node, or a pod's spec.nodeName), else every Node of the input and every node a slice
// or device names (taken as a Node with that name and nothing else, as dra-allocate takes it).
func candidateNodes(in *inputs, fixed string, u *unit) []*v1.Node {
	known := map[string]*v1.Node{}
	for _, node := range in.Nodes {
		if _, seen := known[node.Name]; !seen {
			known[node.Name] = node
		}
	}
	bare := func(name string) *v1.Node {
		if node, ok := known[name]; ok {
			return node
		}
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	if fixed != "" {
		return []*v1.Node{bare(fixed)}
	}
	if u.pod != nil && u.pod.Spec.NodeName != "" {
		return []*v1.Node{bare(u.pod.Spec.NodeName)}
	}
	names := map[string]bool{}
	for name := range known {
		names[name] = true
	}
	for _, slice := range in.Slices {
		if slice.Spec.NodeName != nil {
			names[*slice.Spec.NodeName] = true
		}
		for _, device := range slice.Spec.Devices {
			if device.NodeName != nil {
				names[*device.NodeName] = true
			}
		}
	}
	sorted := make([]string, 0, len(names))
	for name := range names {
		sorted = append(sorted, name)
	}
	sort.Strings(sorted)
	nodes := make([]*v1.Node, 0, len(sorted))
	for _, name := range sorted {
		nodes = append(nodes, bare(name))
	}
	return nodes
}

// units lists what is allocated together, in input order as dra-allocate takes it: each pod
// (where it is listed) with its claims, and each claim no pod uses that is not allocated yet. A
// template no pod uses is no claim for any component: it is an error here.
func units(in *inputs) ([]*unit, error) {
	claimsByName := map[string]*resourceapi.ResourceClaim{}
	for _, claim := range in.Claims {
		claimsByName[claimKey(claim)] = claim
	}
	templatesByName := map[string]*resourceapi.ResourceClaimTemplate{}
	for _, template := range in.Templates {
		templatesByName[template.Namespace+"/"+template.Name] = template
	}
	usedClaims, usedTemplates := map[string]bool{}, map[string]bool{}
	var out []*unit
	podUnits := map[int]*unit{}
	for p, pod := range in.Pods {
		u := &unit{label: "pod " + pod.Namespace + "/" + pod.Name, pod: pod}
		for _, podClaim := range pod.Spec.ResourceClaims {
			switch {
			case podClaim.ResourceClaimName != nil:
				key := pod.Namespace + "/" + *podClaim.ResourceClaimName
				usedClaims[key] = true
				if claim, ok := claimsByName[key]; ok {
					u.claims = append(u.claims, claim)
				} else if u.missing == "" {
					u.missing = "resource claim " + key + " is not in the input"
				}
			case podClaim.ResourceClaimTemplateName != nil:
				key := pod.Namespace + "/" + *podClaim.ResourceClaimTemplateName
				usedTemplates[key] = true
				if template, ok := templatesByName[key]; ok {
					u.claims = append(u.claims, claimFromTemplate(pod, podClaim.Name, template))
				} else if u.missing == "" {
					u.missing = "resource claim template " + key + " is not in the input"
				}
			}
		}
		podUnits[p] = u
	}
	for _, ref := range in.Order {
		switch ref.Kind {
		case oracle.PodRef:
			out = append(out, podUnits[ref.Index])
		case oracle.ClaimRef:
			claim := in.Claims[ref.Index]
			if usedClaims[claimKey(claim)] || claim.Status.Allocation != nil {
				continue
			}
			out = append(out, &unit{label: "claim " + claimKey(claim), claims: []*resourceapi.ResourceClaim{claim}})
		case oracle.TemplateRef:
			template := in.Templates[ref.Index]
			if !usedTemplates[template.Namespace+"/"+template.Name] {
				return nil, fmt.Errorf("ResourceClaimTemplate %s/%s: no Pod uses it, so no component makes a claim of it",
					template.Namespace, template.Name)
			}
		}
	}
	return out, nil
}

// claimFromTemplate is the claim the resource claim controller makes for a pod from a template:
// the template's spec (and labels, annotations), owned by the pod, annotated with the pod's
// claim name; named as dra-allocate names it (the controller adds a random suffix).
func claimFromTemplate(pod *v1.Pod, podClaimName string, template *resourceapi.ResourceClaimTemplate) *resourceapi.ResourceClaim {
	claim := &resourceapi.ResourceClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        pod.Name + "-" + podClaimName,
			Namespace:   pod.Namespace,
			Labels:      template.Spec.Labels,
			Annotations: map[string]string{"resource.kubernetes.io/pod-claim-name": podClaimName},
		},
		Spec: *template.Spec.Spec.DeepCopy(),
	}
	for key, value := range template.Spec.Annotations {
		claim.Annotations[key] = value
	}
	return claim
}
