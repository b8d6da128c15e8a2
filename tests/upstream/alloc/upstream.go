package main

import (
	"context"
	"fmt"
	"numadra.dev/tests/upstream/internal/oracle"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
)

// claimAnswer is one claim's allocation, or why there is none.
type claimAnswer struct {
	claim      *resourceapi.ResourceClaim
	allocation *resourceapi.AllocationResult // nil: not allocated
	err        error                         // invalid input (upstream refused to allocate)
}

// allocateUpstream allocates the unallocated claims in input order on the node, each one
// counting against the next, with upstream's allocator.
func allocateUpstream(ctx context.Context, in *inputs, node *v1.Node) []claimAnswer {
	tracker := oracle.NewTracker()
	for _, claim := range in.Claims {
		if claim.Status.Allocation != nil {
			tracker.Add(claim.Status.Allocation)
		}
	}
	cache := oracle.NewCELCache()
	var answers []claimAnswer
	for _, claim := range in.Claims {
		if claim.Status.Allocation != nil {
			continue
		}
		answer := claimAnswer{claim: claim}
		allocator, err := structured.NewAllocator(ctx, oracle.AllFeatures, tracker.State, oracle.ClassLister(in.Classes),
			in.Slices, cache)
		if err != nil {
			answer.err = fmt.Errorf("creating the allocator: %w", err)
			answers = append(answers, answer)
			continue
		}
		results, err := allocator.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
		switch {
		case err != nil:
			answer.err = err
		case len(results) == 1:
			answer.allocation = &results[0]
			tracker.Add(answer.allocation)
		}
		answers = append(answers, answer)
	}
	return answers
}
