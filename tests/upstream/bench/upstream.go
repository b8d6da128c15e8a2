package main

import (
	"context"
	"fmt"
	"numadra.dev/tests/upstream/internal/oracle"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// allocatedState is what earlier claims hold, as the scheduler's DRA plugin counts it.
func allocatedState(held []*resourceapi.AllocationResult) structured.AllocatedState {
	tracker := oracle.NewTracker()
	for _, allocation := range held {
		tracker.Add(allocation)
	}
	return tracker.State
}

// outcome names an answer of Allocate: "allocated" (one result per claim) or "unsatisfiable"
// (no result).
func outcome(results []resourceapi.AllocationResult, claims int) string {
	switch len(results) {
	case claims:
		return "allocated"
	case 0:
		return "unsatisfiable"
	}
	return fmt.Sprintf("%d results for %d claims", len(results), claims)
}

// together is one operation of a "together" case: the claims allocated together on every node
// in turn with one allocator, as the scheduler's Filter tries a pod on each node with the
// allocator its PreFilter created. With verify, every answer must be the expected one.
func (c *benchCase) together(ctx context.Context, allocator structured.Allocator, verify bool) error {
	for _, node := range c.nodes {
		results, err := allocator.Allocate(ctx, node, c.claims)
		if err != nil {
			return fmt.Errorf("node %s: %w", node.Name, err)
		}
		if verify {
			if got := outcome(results, len(c.claims)); got != c.Expect {
				return fmt.Errorf("node %s: expected %s, got %s", node.Name, c.Expect, got)
			}
		}
	}
	return nil
}

// newAllocator is what the scheduler's PreFilter does for a pod: an allocator over the
// cluster's slices and classes, with what the held claims have allocated.
func (c *benchCase) newAllocator(ctx context.Context, state structured.AllocatedState, cache *cel.Cache) (structured.Allocator, error) {
	return structured.NewAllocator(ctx, oracle.AllFeatures, state, oracle.ClassLister(c.in.Classes), c.in.Slices, cache)
}

// sequence is one operation of a "sequence" case: each claim allocated alone on the first node,
// its answer added to the allocated state before the next, starting from the held claims. The
// allocated state is fixed when an allocator is created, so each claim gets a new allocator, as
// each pod does in the scheduler; the CEL cache is the one given.
func (c *benchCase) sequence(ctx context.Context, cache *cel.Cache) error {
	tracker := oracle.NewTracker()
	for _, allocation := range c.held {
		tracker.Add(allocation)
	}
	node := c.nodes[0]
	for _, claim := range c.claims {
		allocator, err := c.newAllocator(ctx, tracker.State, cache)
		if err != nil {
			return err
		}
		results, err := allocator.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
		if err != nil {
			return fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		if got := outcome(results, 1); got != c.Expect {
			return fmt.Errorf("claim %s/%s: expected %s, got %s", claim.Namespace, claim.Name, c.Expect, got)
		}
		if len(results) == 1 {
			tracker.Add(&results[0])
		}
	}
	return nil
}

// findNode is the case's Node object, or a bare one with the name (slices name their node).
func findNode(in *oracle.Inputs, name string) *v1.Node {
	for _, node := range in.Nodes {
		if node.Name == name {
			return node
		}
	}
	node := &v1.Node{}
	node.Name = name
	return node
}
