package oracle

import (
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// NewCELCache is the compiled-expression cache the scheduler's DRA plugin keeps for its
// lifetime (compiled programs only, no per-device verdicts), with the features it enables.
func NewCELCache() *cel.Cache {
	return cel.NewCache(100, cel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})
}

// AllFeatures is what the scheduler enables with every DRA feature gate on; it selects
// upstream's "experimental" allocator, the one dra-allocate follows.
var AllFeatures = structured.Features{
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

// ClassLister lists the classes of the input, as the scheduler's informer does.
type ClassLister []*resourceapi.DeviceClass

func (l ClassLister) List() ([]*resourceapi.DeviceClass, error) { return l, nil }

func (l ClassLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, class := range l {
		if class.Name == name {
			return class, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "deviceclasses"}, name)
}

// Tracker is the scheduler's view of what earlier claims hold, built from their allocation
// results as the scheduler's DRA plugin builds it.
type Tracker struct {
	State structured.AllocatedState
}

func NewTracker() *Tracker {
	return &Tracker{State: structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}}
}

// Add counts an allocation's devices, shares and consumed capacity as held.
func (t *Tracker) Add(allocation *resourceapi.AllocationResult) {
	for _, result := range allocation.Devices.Results {
		if ptr.Deref(result.AdminAccess, false) {
			continue
		}
		id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
		if result.ShareID == nil {
			t.State.AllocatedDevices.Insert(id)
			continue
		}
		t.State.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, result.ShareID))
		if result.ConsumedCapacity != nil {
			t.State.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity))
		}
	}
}
