// The API server's validation of resource.k8s.io objects, as far as the allocator's inputs
// need it (validation.hpp says which upstream rule each check mirrors).

#include "validation.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "numadra/allocator/allocator.hpp"
#include "numadra/dracel/device.hpp"

namespace numadra::allocator::validation {

namespace {

// IsDNS1123Label (k8s-short-name): at most 63 lowercase alphanumerics and '-', starting and
// ending with an alphanumeric.
bool isShortName(std::string_view s) {
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back()))
        return false;
    return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

// validateDriverName (core ValidateCSIDriverName's rules): at most 63 characters, dot-separated
// RFC 1123 labels of lowercase alphanumerics and '-'.
bool isDriverName(std::string_view s) {
    if (s.empty() || s.size() > 63)
        return false;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t dot = std::min(s.find('.', start), s.size());
        if (!isShortName(s.substr(start, dot - start)))
            return false;
        start = dot + 1;
    }
    return true;
}

// IsDNS1123Subdomain: at most 253 characters, dot-separated labels of lowercase alphanumerics
// and '-', each starting and ending with an alphanumeric.
bool isDnsSubdomain(std::string_view s) {
    if (s.empty() || s.size() > 253)
        return false;
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    size_t start = 0;
    while (start <= s.size()) {
        const size_t dot = std::min(s.find('.', start), s.size());
        const std::string_view label = s.substr(start, dot - start);
        if (label.empty() || !alnum(label.front()) || !alnum(label.back()) ||
            !std::all_of(label.begin(), label.end(), [&](char c) { return alnum(c) || c == '-'; }))
            return false;
        start = dot + 1;
    }
    return true;
}

// IsQualifiedName (validateQualifiedName, metav1validation.ValidateLabelName: label keys,
// condition types): an optional DNS subdomain and '/', then at most 63 alphanumerics, '-', '_'
// or '.', starting and ending with an alphanumeric.
bool isQualifiedName(std::string_view s) {
    const size_t slash = s.find('/');
    std::string_view name = s;
    if (slash != std::string_view::npos) {
        if (!isDnsSubdomain(s.substr(0, slash)))
            return false;
        name = s.substr(slash + 1);
    }
    auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back()))
        return false;
    return std::all_of(name.begin(), name.end(),
                       [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// validateCIdentifier: a C identifier of at most DeviceMaxIDLength (32) characters.
bool isAttributeId(std::string_view s) {
    auto letter = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    };
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (s.empty() || s.size() > 32 || !letter(s.front()))
        return false;
    return std::all_of(s.begin(), s.end(), [&](char c) { return letter(c) || digit(c); });
}

// isFractionalQuantity. Values beyond int64 count as whole: no quantity the API stores there
// has a fraction.
bool isFractional(const Quantity& q) {
    if (const auto milli = q.exactMilli())
        return *milli % 1000 != 0;
    const std::int64_t whole = q.value();
    if (whole == std::numeric_limits<std::int64_t>::max() ||
        whole == std::numeric_limits<std::int64_t>::min())
        return false;
    return !(Quantity::fromInt(whole, q.format()) == q);
}

// A validRange bound as upstream's step arithmetic reads it: milli-units or whole units.
std::int64_t rangeUnits(const Quantity& q, bool milli) {
    return milli ? *q.exactMilli() : q.value();
}

// validateRequestPolicyRange, with validateRequestPolicyRangeStep, rangeHasFractional and
// validateInt64Range (the range of a validated requestPolicy `r`).
Status checkRequestRange(const Reader& r, const Quantity& capacity, const Quantity& defaultValue,
                         const CapacityRange& range) {
    const Reader at = r.field("validRange");
    const std::string cap = capacity.text();
    if (capacity < range.min)
        return at.fieldError("min", "invalid value \"" + range.min.text() +
                                        "\": min is larger than capacity value: " + cap);
    if (defaultValue < range.min)
        return at.fieldError("default", "invalid value \"" + defaultValue.text() +
                                            "\": default is less than min: " + range.min.text());
    if (range.max) {
        if (*range.max < range.min)
            return at.fieldError("max", "invalid value \"" + range.min.text() +
                                            "\": min is larger than max: " + range.max->text());
        if (capacity < *range.max)
            return at.fieldError("max", "invalid value \"" + range.max->text() +
                                            "\": max is larger than capacity value: " + cap);
        if (*range.max < defaultValue)
            return at.fieldError("default",
                                 "invalid value \"" + defaultValue.text() +
                                     "\": default is more than max: " + range.max->text());
    }
    const std::vector<std::pair<const char*, const Quantity*>> bounds{
        {"default", &defaultValue},
        {"min", &range.min},
        {"max", range.max ? &*range.max : nullptr},
        {"step", range.step ? &*range.step : nullptr}};
    // Milli-units as soon as one of them has a fraction (DRAFractionalCapacityRange).
    const bool milli = std::any_of(bounds.begin(), bounds.end(), [](const auto& bound) {
        return bound.second != nullptr && isFractional(*bound.second);
    });
    if (milli) {
        for (const auto& [name, q] : bounds)
            if (q != nullptr && !q->exactMilli())
                return at.fieldError(name, "invalid value \"" + q->text() +
                                               "\": value cannot be represented as a milli value");
    }
    if (!range.step)
        return Status::Ok();
    const Quantity& step = *range.step;
    if (step.sign() <= 0)
        return at.fieldError("step",
                             "invalid value \"" + step.text() + "\": must be greater than zero");
    if (auto added = range.min.add(step); added && capacity < *added)
        return at.fieldError("step", "invalid value \"" + step.text() + "\": one step " +
                                         added->text() + " is larger than capacity value: " + cap);
    if (!milli) {
        const Quantity largest = Quantity::fromInt(std::numeric_limits<std::int64_t>::max(),
                                                   Quantity::Format::DecimalSI);
        for (const auto& [name, q] : bounds) {
            if (q == nullptr)
                continue;
            if (q->sign() < 0)
                return at.fieldError(name, "invalid value \"" + q->text() +
                                               "\": must be greater than or equal to 0");
            if (largest < *q)
                return at.fieldError(name, "invalid value \"" + q->text() +
                                               "\": must not be larger than 9223372036854775807");
        }
    }
    const std::int64_t stepUnits = rangeUnits(step, milli);
    const std::int64_t minUnits = rangeUnits(range.min, milli);
    for (const Quantity* value : {&defaultValue, range.max ? &*range.max : nullptr}) {
        if (value != nullptr && (rangeUnits(*value, milli) - minUnits) % stepUnits != 0)
            return at.fieldError("step", "invalid value \"" + value->text() +
                                             "\": value is not a multiple of a given step (" +
                                             step.text() + ") from (" + range.min.text() + ")");
    }
    return Status::Ok();
}

// isAttributeUsedByConstraint: a constraint of the claim names `attribute` and targets request
// `request` ("req" or "req/sub"; a constraint on "req" targets its subrequests, one without
// requests every request).
bool usedByConstraint(const Claim& claim, const std::string& attribute,
                      const std::string& request) {
    const std::string parent = request.substr(0, request.find('/'));
    return std::any_of(
        claim.constraints.begin(), claim.constraints.end(), [&](const Constraint& c) {
            const bool names = c.matchAttribute == attribute || c.distinctAttribute == attribute;
            const bool targets =
                c.requests.empty() ||
                std::any_of(c.requests.begin(), c.requests.end(),
                            [&](const std::string& r) { return r == request || r == parent; });
            return names && targets;
        });
}

}  // namespace

// v1helper.IsExtendedResourceName: not a native resource (it has a domain, and not
// kubernetes.io's), and "requests.<name>" is a qualified name.
bool isExtendedResourceName(std::string_view s) {
    if (s.find('/') == std::string_view::npos ||
        s.find("kubernetes.io/") != std::string_view::npos || s.starts_with("requests."))
        return false;
    return isQualifiedName("requests." + std::string(s));
}

// validateFullyQualifiedName (k8s-resource-fully-qualified-name), for a constraint's attribute
// and a derived attribute's name: a domain, a slash, a C identifier ("numa.dra.dev/socket",
// "derived/numaNode"). Like upstream (its own TODO), a name with a second slash is not refused.
Status checkFullyQualifiedName(const Reader& r, std::string_view field, const std::string& name) {
    const size_t slash = name.find('/');
    const bool valid =
        slash != std::string::npos && (name.find('/', slash + 1) != std::string::npos ||
                                       (isDriverName(std::string_view(name).substr(0, slash)) &&
                                        isAttributeId(std::string_view(name).substr(slash + 1))));
    if (valid)
        return Status::Ok();
    return r.fieldError(field, "\"" + name +
                                   "\" is not a fully qualified name: a domain (a DNS subdomain) "
                                   "and a C identifier of at most 32 characters separated by a "
                                   "slash, e.g. \"derived/numaNode\"");
}

// A list the API types as a set: each value once.
Status rejectDuplicates(const Reader& r, std::string_view name,
                        const std::vector<std::string>& values) {
    std::set<std::string_view> seen;
    for (size_t i = 0; i < values.size(); ++i)
        if (!seen.insert(values[i]).second)
            return r.field(name).item(i).error("duplicate value \"" + values[i] + "\"");
    return Status::Ok();
}

// validateCELExpression: not empty, at most resource.CELSelectorExpressionMaxLength (10Ki).
Status checkExpression(const Reader& r, std::string_view name, const std::string& expression) {
    if (expression.empty())
        return r.fieldError(name, "required value");
    if (expression.size() > dracel::kMaxExpressionLength)
        return r.fieldError(
            name, "must be at most 10Ki characters, has " + std::to_string(expression.size()));
    return Status::Ok();
}

// core ValidateNodeSelectorRequirement: the values its operator needs; for matchFields
// (`fields`), only metadata.name with In or NotIn and one value.
Status checkNodeSelectorRequirement(const Reader& item, const NodeSelectorRequirement& requirement,
                                    bool fields) {
    const std::string& op = requirement.op;
    const size_t values = requirement.values.size();
    if (fields) {
        if (op != "In" && op != "NotIn")
            return item.fieldError("operator", "\"" + op + "\" is not a valid selector operator");
        if (values != 1)
            return item.fieldError("values",
                                   "required value: must be only one value when `operator` is "
                                   "'In' or 'NotIn' for node field selector");
        if (requirement.key != "metadata.name")
            return item.fieldError("key",
                                   "\"" + requirement.key + "\" is not a valid field selector key");
        return Status::Ok();
    }
    if ((op == "In" || op == "NotIn") && values == 0)
        return item.fieldError("values",
                               "required value: must be specified when `operator` is 'In' or "
                               "'NotIn'");
    if ((op == "Exists" || op == "DoesNotExist") && values > 0)
        return item.fieldError("values",
                               "forbidden: may not be specified when `operator` is 'Exists' or "
                               "'DoesNotExist'");
    if ((op == "Gt" || op == "Lt") && values != 1)
        return item.fieldError("values",
                               "required value: must be specified single value when `operator` "
                               "is 'Lt' or 'Gt'");
    return Status::Ok();
}

// validateResourceSliceSpec: exactly one of nodeName, nodeSelector (of one term: "This
// additional constraint simplifies merging of different selectors when devices are allocated
// from different slices"), allNodes and perDeviceNodeSelection, counter-set slices included.
Status checkSliceNodeSelection(const Reader& spec, const Slice& slice) {
    if (slice.nodeSelector && slice.nodeSelector->terms.size() != 1)
        return spec.field("nodeSelector")
            .fieldError("nodeSelectorTerms", "must have exactly one node selector term");
    const int set = (slice.nodeName ? 1 : 0) + (slice.nodeSelector ? 1 : 0) +
                    (slice.allNodes ? 1 : 0) + (slice.perDeviceNodeSelection ? 1 : 0);
    if (set != 1)
        return spec.error(
            std::string(set == 0 ? "required value" : "invalid value") +
            ": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
            "is required" +
            (set == 0 ? "" : ", but multiple fields are set"));
    return Status::Ok();
}

// validateDevice: with perDeviceNodeSelection, exactly one of nodeName, nodeSelector and
// allNodes; without, none.
Status checkDeviceNodeSelection(const Reader& r, const Device& device,
                                bool perDeviceNodeSelection) {
    const int selections =
        (device.nodeName ? 1 : 0) + (device.nodeSelector ? 1 : 0) + (device.allNodes ? 1 : 0);
    if (perDeviceNodeSelection && selections != 1)
        return r.error(std::string(selections == 0 ? "required value" : "invalid value") +
                       ": exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required "
                       "when `perDeviceNodeSelection` is set to true in the ResourceSlice spec");
    if (!perDeviceNodeSelection && selections > 0)
        return r.error(
            "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec");
    return Status::Ok();
}

// validateResourceSliceSpec: ResourceSliceMaxDevices (128), or
// ResourceSliceMaxDevicesWithAdvancedFeatures (64) when a device has taints, consumes counters
// or has a list attribute (haveDeviceTaints, haveConsumesCounters, haveListAttributes).
Status checkSliceDeviceCount(const Reader& spec, const Slice& slice) {
    const bool advanced =
        std::any_of(slice.devices.begin(), slice.devices.end(), [](const Device& d) {
            if (!d.taints.empty() || !d.consumesCounters.empty())
                return true;
            return std::any_of(d.attributes.begin(), d.attributes.end(),
                               [](const auto& a) { return api::isListAttribute(a.second); });
        });
    const size_t limit = advanced ? 64 : 128;
    if (slice.devices.size() > limit)
        return spec.fieldError("devices", "must have at most " + std::to_string(limit) +
                                              " devices, has " +
                                              std::to_string(slice.devices.size()));
    return Status::Ok();
}

// validateSkipNodeOperations, with the declarative checks it leaves to the API's tags: a set of
// NodePrepareResources, NodeUnprepareResources and "*"; NodePrepareResources only with
// NodeUnprepareResources or "*".
Status checkSkipNodeOperations(const Reader& r, const std::vector<std::string>& operations) {
    static const std::set<std::string, std::less<>> kOperations{"NodePrepareResources",
                                                                "NodeUnprepareResources", "*"};
    for (size_t i = 0; i < operations.size(); ++i)
        if (!kOperations.contains(operations[i]))
            return r.field("skipNodeOperations")
                .item(i)
                .error("unsupported value \"" + operations[i] +
                       "\": supported values: \"NodePrepareResources\", "
                       "\"NodeUnprepareResources\", \"*\"");
    if (Status s = rejectDuplicates(r, "skipNodeOperations", operations); !s)
        return s;
    auto has = [&](std::string_view value) {
        return std::find(operations.begin(), operations.end(), value) != operations.end();
    };
    if (has("NodePrepareResources") && !has("NodeUnprepareResources") && !has("*"))
        return r.fieldError("skipNodeOperations",
                            "NodePrepareResources may only be listed together with "
                            "NodeUnprepareResources or \"*\"");
    return Status::Ok();
}

// The declarative checks of DeviceCounterConsumption.compatibilityGroups
// (DRADeviceCompatibilityGroups): at most DeviceCompatibilityGroupsMaxSize (2, the reader's
// limit) unique k8s-short-names.
Status checkCompatibilityGroups(const Reader& r, const std::vector<std::string>& groups) {
    for (size_t i = 0; i < groups.size(); ++i)
        if (!isShortName(groups[i]))
            return r.field("compatibilityGroups")
                .item(i)
                .error("\"" + groups[i] +
                       "\" is not a valid group name: must be a DNS label (at most 63 lowercase "
                       "alphanumeric characters or '-', starting and ending with an alphanumeric)");
    return rejectDuplicates(r, "compatibilityGroups", groups);
}

// validateRequestPolicy with validateValidRequestValues and validateRequestPolicyValidValues.
Status checkRequestPolicy(const Reader& r, const Quantity& capacity, const RequestPolicy& policy) {
    if (!policy.validValues.empty()) {
        if (!policy.defaultValue)
            return r.fieldError("default", "required value: required when validValues is defined");
        // An option the capacity cannot hold could never be allocated.
        for (size_t i = 0; i < policy.validValues.size(); ++i) {
            if (capacity < policy.validValues[i])
                return r.field("validValues")
                    .item(i)
                    .error("invalid value \"" + policy.validValues[i].text() +
                           "\": option is larger than capacity value: " + capacity.text());
        }
        const bool listed =
            std::any_of(policy.validValues.begin(), policy.validValues.end(),
                        [&](const Quantity& v) { return v == *policy.defaultValue; });
        if (!listed)
            return r.fieldError("validValues",
                                "invalid value \"" + policy.defaultValue->text() +
                                    "\": default value is not valid according to the "
                                    "requestPolicy");
        return Status::Ok();
    }
    if (!policy.validRange)
        return Status::Ok();
    if (!policy.defaultValue)
        return r.fieldError("default", "required value: required when validRange is defined");
    return checkRequestRange(r, capacity, *policy.defaultValue, *policy.validRange);
}

// corehelper.IsNodeAllocatableResourceName: cpu, memory and hugepages-<size>, the node's
// allocatable resources a device may stand for (extended resources are not).
bool isNodeAllocatableResourceName(const std::string& name) {
    return name == "cpu" || name == "memory" || name.starts_with("hugepages-");
}

// validateNodeAllocatableMapping: capacityKey and capacityMultiplier together, positive
// multipliers, at most one of capacityKey and deviceMultiplier.
Status checkNodeAllocatableMapping(const Reader& r, const NodeAllocatableResource& resource) {
    if (resource.capacityKey && !resource.capacityMultiplier)
        return r.fieldError("capacityMultiplier",
                            "capacityMultiplier is required when capacityKey is set");
    if (resource.capacityMultiplier && !resource.capacityKey)
        return r.fieldError("capacityKey",
                            "capacityKey is required when capacityMultiplier is set");
    if (resource.capacityMultiplier && resource.capacityMultiplier->sign() <= 0)
        return r.fieldError("capacityMultiplier", "must be positive");
    if (resource.deviceMultiplier && resource.deviceMultiplier->sign() <= 0)
        return r.fieldError("deviceMultiplier", "must be positive");
    if (resource.capacityKey && resource.deviceMultiplier)
        return r.error("must specify at most one of capacityKey and deviceMultiplier");
    return Status::Ok();
}

// validateNodeAllocatableOverheadMapping: perPod or perContainer, neither negative.
Status checkNodeAllocatableOverhead(const Reader& r, const NodeAllocatableResource& resource) {
    if (!resource.perPod && !resource.perContainer)
        return r.error("at least one of perPod or perContainer must be set");
    if (resource.perPod && resource.perPod->sign() < 0)
        return r.fieldError("perPod", "must be non-negative");
    if (resource.perContainer && resource.perContainer->sign() < 0)
        return r.fieldError("perContainer", "must be non-negative");
    return Status::Ok();
}

// validateDeviceTaint and validateDeviceToleration (validDeviceTaintEffects): NoSchedule,
// NoExecute or None.
Status checkTaintEffect(const Reader& r, const std::string& effect) {
    if (effect == "NoSchedule" || effect == "NoExecute" || effect == "None")
        return Status::Ok();
    return r.fieldError("effect", "unsupported value \"" + effect +
                                      "\": supported values: \"NoExecute\", \"NoSchedule\", "
                                      "\"None\"");
}

// validateDeviceBindingParameters: bindingConditions and bindingFailureConditions, both or
// neither, each condition once, none in both lists.
Status checkBindingConditions(const Reader& r, const Device& device) {
    if (Status s = rejectDuplicates(r, "bindingConditions", device.bindingConditions); !s)
        return s;
    if (Status s = rejectDuplicates(r, "bindingFailureConditions", device.bindingFailureConditions);
        !s)
        return s;
    for (size_t i = 0; i < device.bindingFailureConditions.size(); ++i) {
        const std::string& condition = device.bindingFailureConditions[i];
        if (std::find(device.bindingConditions.begin(), device.bindingConditions.end(),
                      condition) != device.bindingConditions.end())
            return r.field("bindingFailureConditions")
                .item(i)
                .error("\"" + condition +
                       "\": bindingFailureConditions must not overlap with bindingConditions");
    }
    if (device.bindingConditions.empty() && !device.bindingFailureConditions.empty())
        return r.fieldError("bindingConditions",
                            "bindingConditions are required to use bindingFailureConditions");
    if (device.bindingFailureConditions.empty() && !device.bindingConditions.empty())
        return r.fieldError("bindingFailureConditions",
                            "bindingFailureConditions are required to use bindingConditions");
    return Status::Ok();
}

// validateDeviceDerivedAttribute: a derived attribute must be "referenced by at least one
// matchAttribute or distinctAttribute constraint targeting this request".
Status checkDerivedAttributesUsed(const Reader& devices, const Claim& claim) {
    const std::string kUnused =
        "must be referenced by at least one matchAttribute or distinctAttribute constraint "
        "targeting this request";
    auto check = [&](const DeviceRequestSpec& spec, const std::string& request,
                     const Reader& at) -> Status {
        for (size_t k = 0; k < spec.derivedAttributes.size(); ++k)
            if (!usedByConstraint(claim, spec.derivedAttributes[k].name, request))
                return at.field("derivedAttributes").item(k).fieldError("name", kUnused);
        return Status::Ok();
    };
    for (size_t i = 0; i < claim.requests.size(); ++i) {
        const Request& request = claim.requests[i];
        const Reader at = devices.field("requests").item(i);
        if (request.exactly)
            if (Status s = check(*request.exactly, request.name, at.field("exactly")); !s)
                return s;
        for (size_t j = 0; j < request.firstAvailable.size(); ++j) {
            const SubRequest& sub = request.firstAvailable[j];
            if (Status s = check(sub.spec, request.name + "/" + sub.name,
                                 at.field("firstAvailable").item(j));
                !s)
                return s;
        }
    }
    return Status::Ok();
}

}  // namespace numadra::allocator::validation
