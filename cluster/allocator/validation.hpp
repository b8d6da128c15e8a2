#pragma once
// The API server's checks of resource.k8s.io objects that the decoders (decode_*.cpp) apply
// once a field is read, so that dra-allocate refuses what the cluster would refuse. Each names
// the rule it mirrors: a function of k8s.io/kubernetes pkg/apis/resource/validation/
// validation.go unless said otherwise (core: pkg/apis/core/validation; the version is the one
// tests/upstream/go.mod pins). An error names the field as upstream's field path does.

#include <string>
#include <string_view>
#include <vector>

#include "numadra/allocator/model.hpp"
#include "numadra/documents/reader.hpp"

namespace numadra::allocator::validation {

using documents::Reader;

// --- names and lists --------------------------------------------------------------------------

// v1helper.IsExtendedResourceName (pkg/apis/core/v1/helper): a DeviceClass's
// extendedResourceName.
bool isExtendedResourceName(std::string_view s);
// validateFullyQualifiedName: a constraint's attribute, a derived attribute's name (`field` of
// `r`).
Status checkFullyQualifiedName(const Reader& r, std::string_view field, const std::string& name);
// validateSet's uniqueness: a list the API types as a set has each value once.
Status rejectDuplicates(const Reader& r, std::string_view name,
                        const std::vector<std::string>& values);
// validateCELExpression's length limit (compiling is the caller's).
Status checkExpression(const Reader& r, std::string_view name, const std::string& expression);

// --- node selection ---------------------------------------------------------------------------

// core ValidateNodeSelectorRequirement (`item`); `fields` for matchFields.
Status checkNodeSelectorRequirement(const Reader& item, const NodeSelectorRequirement& requirement,
                                    bool fields);
// validateResourceSliceSpec: one node selection of a slice (`spec`).
Status checkSliceNodeSelection(const Reader& spec, const Slice& slice);
// validateDevice: a device (`r`) selects its nodes when, and only when, its slice says
// perDeviceNodeSelection.
Status checkDeviceNodeSelection(const Reader& r, const Device& device, bool perDeviceNodeSelection);

// --- ResourceSlice ----------------------------------------------------------------------------

// validateResourceSliceSpec: ResourceSliceMaxDevices, fewer with advanced features.
Status checkSliceDeviceCount(const Reader& spec, const Slice& slice);
// validateSkipNodeOperations, with the declarative enum and set checks (`r` holds the list).
Status checkSkipNodeOperations(const Reader& r, const std::vector<std::string>& operations);
// Declarative DeviceCounterConsumption.compatibilityGroups (`r` holds the list).
Status checkCompatibilityGroups(const Reader& r, const std::vector<std::string>& groups);
// validateRequestPolicy (`r` is the requestPolicy) of a capacity of a device that allows
// multiple allocations.
Status checkRequestPolicy(const Reader& r, const Quantity& capacity, const RequestPolicy& policy);
// corehelper.IsNodeAllocatableResourceName (pkg/apis/core/helper): cpu, memory, hugepages-*.
bool isNodeAllocatableResourceName(const std::string& name);
// validateNodeAllocatableMapping, after capacityKey (`r` is the mapping).
Status checkNodeAllocatableMapping(const Reader& r, const NodeAllocatableResource& resource);
// validateNodeAllocatableOverheadMapping (`r` is the overhead).
Status checkNodeAllocatableOverhead(const Reader& r, const NodeAllocatableResource& resource);
// validateDeviceTaint and validateDeviceToleration: the effect (`r` holds it).
Status checkTaintEffect(const Reader& r, const std::string& effect);
// validateDeviceBindingParameters (`r` is the device).
Status checkBindingConditions(const Reader& r, const Device& device);

// --- ResourceClaim ----------------------------------------------------------------------------

// validateDeviceDerivedAttribute with isAttributeUsedByConstraint: a derived attribute no
// constraint targeting its request uses is refused (`devices` is spec.devices).
Status checkDerivedAttributesUsed(const Reader& devices, const Claim& claim);

}  // namespace numadra::allocator::validation
