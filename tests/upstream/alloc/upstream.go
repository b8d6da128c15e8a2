package main

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// allFeatures is what the scheduler enables with every DRA feature gate on; it selects
// upstream's "experimental" allocator, the one dra-allocate follows.
var allFeatures = structured.Features{
	AdminAccess:             true,
	CompatibilityGroups:     true,
	ConsumableCapacity:      true,
	DerivedAttributes:       true,
	DeviceBindingAndStatus:  true,
	DeviceTaints:            true,
	FractionalCapacityRange: true,
	ListTypeAttributes:      true,
	OptionalNodeOperations:  true,
	PartitionableDevices:    true,
	PrioritizedList:         true,
}

type classLister []*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l, nil }

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, class := range l {
		if class.Name == name {
			return class, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "deviceclasses"}, name)
}

// allocationTracker is the scheduler's view of what earlier claims hold, built from their
// allocation results as the scheduler's DRA plugin builds it.
type allocationTracker struct {
	state structured.AllocatedState
}

func newTracker() *allocationTracker {
	return &allocationTracker{state: structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}}
}

func (t *allocationTracker) add(allocation *resourceapi.AllocationResult) {
	for _, result := range allocation.Devices.Results {
		if ptr.Deref(result.AdminAccess, false) {
			continue
		}
		id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
		if result.ShareID == nil {
			t.state.AllocatedDevices.Insert(id)
			continue
		}
		t.state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, result.ShareID))
		if result.ConsumedCapacity != nil {
			t.state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity))
		}
	}
}

// claimAnswer is one claim's allocation, or why there is none.
type claimAnswer struct {
	claim      *resourceapi.ResourceClaim
	allocation *resourceapi.AllocationResult // nil: not allocated
	err        error                         // invalid input (upstream refused to allocate)
}

// allocateUpstream allocates the unallocated claims in input order on the node, each one
// counting against the next, with upstream's allocator.
func allocateUpstream(ctx context.Context, in *inputs, node *v1.Node) []claimAnswer {
	tracker := newTracker()
	for _, claim := range in.claims {
		if claim.Status.Allocation != nil {
			tracker.add(claim.Status.Allocation)
		}
	}
	cache := cel.NewCache(100, cel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})
	var answers []claimAnswer
	for _, claim := range in.claims {
		if claim.Status.Allocation != nil {
			continue
		}
		answer := claimAnswer{claim: claim}
		allocator, err := structured.NewAllocator(ctx, allFeatures, tracker.state, classLister(in.classes),
			in.slices, cache)
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
			tracker.add(answer.allocation)
		}
		answers = append(answers, answer)
	}
	return answers
}
