#include "numadra/slices/publisher.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "numadra/api/quantity.hpp"
#include "numadra/common/text.hpp"

namespace numadra::slices {

namespace {

constexpr int kConflictRetries = 5;
// Slice writes in flight at once: the API server validates each (devices, admission policy) for
// tens of milliseconds, so a big node's ten slices written one by one took 250 ms of start-up.
constexpr size_t kParallelWrites = 4;

// write(i) for every i < count, up to kParallelWrites at a time; the results in index order.
template <class Write>
std::vector<Result<api::Json>> writeAll(size_t count, const Write& write) {
    std::vector<std::optional<Result<api::Json>>> results(count);
    std::atomic<size_t> next = 0;
    auto worker = [&] {
        for (size_t i = next++; i < count; i = next++)
            results[i].emplace(write(i));
    };
    {
        std::vector<std::jthread> helpers;
        for (size_t t = 1; t < std::min(count, kParallelWrites); ++t)
            helpers.emplace_back(worker);
        worker();
    }
    std::vector<Result<api::Json>> ordered;
    ordered.reserve(count);
    for (auto& result : results)
        ordered.push_back(std::move(*result));
    return ordered;
}

std::string nameOf(const api::Json& object) {
    return object.value("/metadata/name"_json_pointer, std::string());
}

std::string resourceVersionOf(const api::Json& object) {
    return object.value("/metadata/resourceVersion"_json_pointer, std::string());
}

std::int64_t generationOf(const api::Json& object) {
    const auto pointer = "/spec/pool/generation"_json_pointer;
    return object.contains(pointer) && object[pointer].is_number_integer()
               ? object[pointer].get<std::int64_t>()
               : 0;
}

bool equalScalars(const api::Json& a, const api::Json& b) {
    if (a == b)
        return true;
    if (a.is_string() && b.is_string()) {
        auto qa = api::Quantity::parse(a.get<std::string>());
        auto qb = api::Quantity::parse(b.get<std::string>());
        return qa && qb && *qa == *qb;
    }
    // The server may return 5 as 5.0 only for floats; integers compare exactly.
    return false;
}

// A value the API server may fill in by default; its presence alone is no difference.
bool isZeroValue(const api::Json& value) {
    return value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
           (value.is_number() && value == 0) || (value.is_string() && value.empty()) ||
           ((value.is_array() || value.is_object()) && value.empty());
}

// `extraMatters`: a field stored but no longer sent (a taint that was lifted) is a difference,
// unless it is the kind of zero value the server adds by default.
void compare(const api::Json& sent, const api::Json& stored, const std::string& path, bool& equal,
             std::vector<std::string>* dropped, bool extraMatters = false) {
    if (sent.is_object()) {
        if (!stored.is_object()) {
            equal = false;
            return;
        }
        if (extraMatters) {
            for (auto it = stored.begin(); it != stored.end(); ++it) {
                // timeAdded is stamped on device taints by the server, never sent by us.
                if (!sent.contains(it.key()) && !isZeroValue(it.value()) && it.key() != "timeAdded")
                    equal = false;
            }
        }
        for (auto it = sent.begin(); it != sent.end(); ++it) {
            const std::string child = path + "." + it.key();
            if (!stored.contains(it.key())) {
                equal = false;
                if (dropped)
                    dropped->push_back(child);
                continue;
            }
            compare(it.value(), stored[it.key()], child, equal, dropped, extraMatters);
        }
        return;
    }
    if (sent.is_array()) {
        if (!stored.is_array() || stored.size() != sent.size()) {
            equal = false;
            return;
        }
        for (size_t i = 0; i < sent.size(); ++i) {
            compare(sent[i], stored[i], path + "[" + std::to_string(i) + "]", equal, dropped,
                    extraMatters);
        }
        return;
    }
    if (!equalScalars(sent, stored))
        equal = false;
}

// Content equality of two slices, ignoring the pool generation (the publisher's to decide).
bool sameContent(const api::Json& desired, const api::Json& existing) {
    api::Json a = desired["spec"];
    api::Json b = existing.contains("spec") ? existing["spec"] : api::Json::object();
    if (a.contains("pool"))
        a["pool"].erase("generation");
    if (b.contains("pool") && b["pool"].is_object())
        b["pool"].erase("generation");
    bool equal = true;
    compare(a, b, "spec", equal, nullptr, true);
    // Owner references are part of what we publish.
    if (desired["metadata"].contains("ownerReferences")) {
        if (!existing["metadata"].contains("ownerReferences"))
            return false;
        compare(desired["metadata"]["ownerReferences"], existing["metadata"]["ownerReferences"],
                "ownerReferences", equal, nullptr);
    }
    return equal;
}

// The names refusalOf reads back from an Error's reason.
struct RefusalName {
    Refusal refusal;
    std::string_view reason;
};
constexpr RefusalName kRefusalNames[] = {
    {Refusal::DroppedFields, "DroppedFields"},
    {Refusal::DroppedTaints, "DroppedTaints"},
    {Refusal::ListAttributesRefused, "ListAttributesRefused"},
    {Refusal::NodeAllocatableRefused, "NodeAllocatableRefused"},
};

Error refusalError(Refusal refusal, std::string message, std::vector<FieldCause> causes = {}) {
    std::string reason;
    for (const auto& name : kRefusalNames) {
        if (name.refusal == refusal)
            reason = name.reason;
    }
    return Error{.message = std::move(message),
                 .kind = ErrorKind::FailedPrecondition,
                 .reason = std::move(reason),
                 .causes = std::move(causes)};
}

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

Error droppedFieldsError(const std::string& name, const std::vector<std::string>& dropped) {
    constexpr size_t kShown = 4;
    std::string fields;
    for (size_t i = 0; i < dropped.size() && i < kShown; ++i)
        fields += (fields.empty() ? "" : ", ") + dropped[i];
    if (dropped.size() > kShown)
        fields += " and " + std::to_string(dropped.size() - kShown) + " more";
    return refusalError(Refusal::DroppedFields,
                        "the API server dropped fields of ResourceSlice " + name + " (" + fields +
                            "): a feature gate the driver's flags rely on is off in this cluster "
                            "(e.g. DRAListTypeAttributes for --numa-list, "
                            "DRASharedConsumableCapacity for --shared-consumable-capacity); fix "
                            "the flags or the cluster");
}

// kube-apiserver's NodeDeclaredFeatureValidator admission plugin forbids a slice whose devices
// declare nodeAllocatableResources for a node whose kubelet does not declare the feature. In
// v1.37.2 (plugin/pkg/admission/nodedeclaredfeatures/admission.go,
// validateNodeAllocatableDRADeclaredFeature) that is admission.NewForbidden, so
// apierrors.NewForbidden: a Status with code 403, reason Forbidden, details {group
// resource.k8s.io, kind resourceslices, name} and no causes, the feature named in its message
// only: `resourceslices.resource.k8s.io "NAME" is forbidden: node "NODE" does not support
// DRANodeAllocatableResources feature`. An RBAC refusal has the same shape, so what decides is
// the feature: named by a cause (its field a device's nodeAllocatableResources, or its message
// the feature), should a release give causes; else named in the message, whatever the wording.
constexpr std::string_view kNodeAllocatableFeature = "DRANodeAllocatableResources";

bool refusedNodeAllocatable(const Error& error) {
    if (!error.is(ErrorKind::PermissionDenied))
        return false;
    const bool aCauseNamesIt =
        std::any_of(error.causes.begin(), error.causes.end(), [](const FieldCause& cause) {
            return contains(cause.field, ".nodeAllocatableResources") ||
                   contains(cause.message, kNodeAllocatableFeature);
        });
    return aCauseNamesIt || contains(error.message, kNodeAllocatableFeature);
}

// "spec.devices[3].attributes[resource.kubernetes.io/numaNode]" -> (3, name).
std::optional<std::pair<size_t, std::string>> deviceAttributeOfField(const std::string& field) {
    constexpr std::string_view kDevices = "spec.devices[";
    constexpr std::string_view kAttributes = "].attributes[";
    if (field.rfind(kDevices, 0) != 0 || field.empty() || field.back() != ']')
        return std::nullopt;
    const size_t indexEnd = field.find(kAttributes, kDevices.size());
    if (indexEnd == std::string::npos)
        return std::nullopt;
    const auto index =
        text::parseInt(std::string_view(field).substr(kDevices.size(), indexEnd - kDevices.size()));
    if (!index || *index < 0)
        return std::nullopt;
    const size_t nameStart = indexEnd + kAttributes.size();
    return std::make_pair(static_cast<size_t>(*index),
                          field.substr(nameStart, field.size() - 1 - nameStart));
}

bool sentAsList(const api::Json& sent, size_t device, const std::string& attribute) {
    const api::Json devices = sent.value("/spec/devices"_json_pointer, api::Json::array());
    if (!devices.is_array() || device >= devices.size() || !devices[device].is_object())
        return false;
    const api::Json attributes = devices[device].value("attributes", api::Json::object());
    const auto value = attributes.find(attribute);
    if (value == attributes.end() || !value->is_object())
        return false;
    return value->contains("ints") || value->contains("strings") || value->contains("bools") ||
           value->contains("versions");
}

// Whether a 422 cause says an attribute has no value. kube-apiserver v1.37.2 validates an
// attribute as a union of int, bool, string, version, ints, bools, strings and versions: its
// handwritten validation (pkg/apis/resource/validation/validation.go, validateDeviceAttribute)
// with field.Invalid(path, "", "exactly one value must be specified"), its declarative
// validation (pkg/apis/resource/v1/zz_generated.validations.go, Validate_DeviceAttribute, calls
// k8s.io/apimachinery/pkg/api/validate/union.go's Union, whose ErrorForEmpty is
// field.Invalid(path, "", "must specify one of: `int`, ...")). apierrors.NewInvalid makes each a
// cause {reason FieldValueInvalid, field spec.devices[i].attributes[NAME], message `Invalid
// value: "": ...`} (field.Error.ErrorBody: the bad value "" quoted). So the structure decides:
// a FieldValueRequired cause, or a FieldValueInvalid one whose bad value is empty; the two
// wordings are the last resort (a cause without its reason, a bad value rendered otherwise).
bool saysAttributeHasNoValue(const FieldCause& cause) {
    constexpr std::string_view kEmptyValue = R"(Invalid value: "": )";
    if (cause.reason == "FieldValueRequired")
        return true;
    if (cause.reason == "FieldValueInvalid" && cause.message.rfind(kEmptyValue, 0) == 0)
        return true;
    return contains(cause.message, "must specify one of:") ||
           contains(cause.message, "exactly one value must be specified");
}

// The attributes sent as lists that a 422 says have no value left: what kube-apiserver answers
// when DRAListTypeAttributes is off (it strips list values, then validation finds none).
std::vector<std::string> refusedListAttributes(const api::Json& sent, const Error& error) {
    std::vector<std::string> names;
    if (!error.is(ErrorKind::InvalidArgument))
        return names;
    for (const auto& cause : error.causes) {
        if (!saysAttributeHasNoValue(cause))
            continue;
        const auto attribute = deviceAttributeOfField(cause.field);
        if (!attribute || !sentAsList(sent, attribute->first, attribute->second))
            continue;
        if (std::find(names.begin(), names.end(), attribute->second) == names.end())
            names.push_back(attribute->second);
    }
    return names;
}

Error listAttributesRefusedError(const std::string& name, const std::vector<std::string>& refused,
                                 const Error& answer) {
    return refusalError(Refusal::ListAttributesRefused,
                        "the API server refused ResourceSlice " + name +
                            " because it has no list-typed attributes (feature gate "
                            "DRAListTypeAttributes is off) and " +
                            text::join(refused, ", ") +
                            " were sent as lists: run without --numa-list, with "
                            "--numa-list=auto, or enable DRAListTypeAttributes (" +
                            answer.message + ")",
                        answer.causes);
}

}  // namespace

Refusal refusalOf(const Error& error) {
    // An API answer is never a refusal of ours, whatever its reason says.
    if (!error.is(ErrorKind::FailedPrecondition) || error.httpStatus != 0)
        return Refusal::None;
    for (const auto& name : kRefusalNames) {
        if (name.reason == error.reason)
            return name.refusal;
    }
    return Refusal::None;
}

bool sentFieldsPreserved(const api::Json& sent, const api::Json& stored,
                         std::vector<std::string>* dropped) {
    bool equal = true;
    compare(sent, stored, "", equal, dropped);
    return equal;
}

Publisher::Publisher(SliceApi& api, std::string driverName, std::string poolName,
                     std::optional<NodeOwner> owner)
    : api_(api),
      driverName_(std::move(driverName)),
      poolName_(std::move(poolName)),
      owner_(std::move(owner)) {}

api::Json Publisher::encode(const api::ResourceSlice& slice, std::int64_t generation,
                            std::int64_t count) const {
    api::ResourceSlice copy = slice;
    copy.pool.generation = generation;
    copy.pool.resourceSliceCount = count;
    if (owner_)
        copy.ownerReferences = {{"v1", "Node", owner_->name, owner_->uid, true}};
    return api::toJson(copy);
}

Result<PublishStats> Publisher::reconcile(const std::vector<api::ResourceSlice>& desired) {
    for (int attempt = 0;; ++attempt) {
        auto result = reconcileOnce(desired);
        // Someone changed a slice under us (a previous instance, the kubelet), or created one we
        // were about to: look again.
        const bool raced = !result && (result.error().is(ErrorKind::Conflict) ||
                                       result.error().is(ErrorKind::AlreadyExists));
        if (!raced || attempt + 1 >= kConflictRetries)
            return result;
    }
}

namespace {

// The refusal (or the fields dropped) in the API server's answer to a write of `sent`.
Status checkStored(const api::Json& sent, const Result<api::Json>& stored) {
    if (!stored) {
        if (auto refused = refusedListAttributes(sent, stored.error()); !refused.empty())
            return listAttributesRefusedError(nameOf(sent), refused, stored.error());
        if (refusedNodeAllocatable(stored.error())) {
            return refusalError(Refusal::NodeAllocatableRefused,
                                "the API server refused ResourceSlice " + nameOf(sent) +
                                    ": the node does not declare DRANodeAllocatableResources "
                                    "(its kubelet runs without the feature gate): " +
                                    stored.error().message);
        }
        return stored.error();
    }
    std::vector<std::string> dropped;
    if (!sentFieldsPreserved(sent["spec"], stored.value().value("spec", api::Json::object()),
                             &dropped) &&
        !dropped.empty()) {
        const bool onlyTaints = std::all_of(dropped.begin(), dropped.end(),
                                            [&](const auto& p) { return contains(p, ".taints"); });
        const bool onlyOptional = std::all_of(dropped.begin(), dropped.end(), [&](const auto& p) {
            return contains(p, ".taints") || contains(p, ".nodeAllocatableResources");
        });
        // Both gates off: the mappings first; the next pass finds the taints alone.
        if (onlyOptional && !onlyTaints) {
            return refusalError(Refusal::NodeAllocatableRefused,
                                "the API server dropped the nodeAllocatableResources of "
                                "ResourceSlice " +
                                    nameOf(sent) +
                                    " (feature gate DRANodeAllocatableResources is off)");
        }
        if (onlyTaints) {
            return refusalError(Refusal::DroppedTaints,
                                "the API server dropped the device taints of ResourceSlice " +
                                    nameOf(sent) + " (feature gate DRADeviceTaints is off)");
        }
        return droppedFieldsError(nameOf(sent), dropped);
    }
    return Status::Ok();
}

}  // namespace

Status Publisher::tryPublishing(const api::ResourceSlice& slice) {
    const api::Json sent = encode(slice, 1, 1);
    return checkStored(sent, api_.tryCreate(sent));
}

Result<PublishStats> Publisher::reconcileOnce(const std::vector<api::ResourceSlice>& desired) {
    auto listed = api_.list();
    if (!listed)
        return listed.error();

    std::map<std::string, api::Json> existing;
    std::vector<api::Json> obsolete;
    std::int64_t highestGeneration = 0;
    for (auto& object : listed.value()) {
        const bool ours = object.value("/spec/driver"_json_pointer, std::string()) == driverName_ &&
                          object.value("/spec/pool/name"_json_pointer, std::string()) == poolName_;
        if (!ours) {
            obsolete.push_back(std::move(object));  // another pool of ours on this node: stale
            continue;
        }
        highestGeneration = std::max(highestGeneration, generationOf(object));
        existing.emplace(nameOf(object), std::move(object));
    }

    const auto count = static_cast<std::int64_t>(desired.size());
    std::vector<const api::ResourceSlice*> toCreate, toUpdate;
    std::map<std::string, bool> wanted;
    for (const auto& slice : desired) {
        wanted[slice.name] = true;
        auto it = existing.find(slice.name);
        if (it == existing.end()) {
            toCreate.push_back(&slice);
        } else if (!sameContent(encode(slice, 0, count), it->second) ||
                   generationOf(it->second) != highestGeneration) {
            toUpdate.push_back(&slice);
        }
    }
    for (auto& [name, object] : existing) {
        if (!wanted.count(name))
            obsolete.push_back(object);
    }

    // Upstream's rule: keep the generation when at most one slice changes in place and none is
    // added; otherwise bump it, which means every slice carries the new generation.
    std::int64_t generation = std::max<std::int64_t>(highestGeneration, 1);
    if (highestGeneration == 0) {
        generation = 1;
    } else if (!toCreate.empty() || toUpdate.size() > 1 || !obsolete.empty()) {
        generation = highestGeneration + 1;
        toUpdate.clear();
        for (const auto& slice : desired) {
            if (existing.count(slice.name))
                toUpdate.push_back(&slice);
        }
    }

    PublishStats stats;
    stats.generation = generation;
    for (const auto& object : obsolete) {
        if (auto status = api_.remove(nameOf(object), resourceVersionOf(object)); !status)
            return status.error();
        ++stats.deleted;
    }
    std::vector<api::Json> updates;
    for (const auto* slice : toUpdate) {
        updates.push_back(encode(*slice, generation, count));
        updates.back()["metadata"]["resourceVersion"] = resourceVersionOf(existing[slice->name]);
    }
    // Every write goes out before the first refusal is reported: the writes are independent.
    auto writeChecked = [&](const std::vector<api::Json>& objects, auto write,
                            size_t& counted) -> Status {
        const auto stored = writeAll(objects.size(), [&](size_t i) { return write(objects[i]); });
        for (size_t i = 0; i < objects.size(); ++i) {
            if (auto status = checkStored(objects[i], stored[i]); !status)
                return status;
            ++counted;
        }
        return Status::Ok();
    };
    if (auto status = writeChecked(
            updates, [&](const api::Json& o) { return api_.update(o); }, stats.updated);
        !status)
        return status.error();
    std::vector<api::Json> creates;
    for (const auto* slice : toCreate)
        creates.push_back(encode(*slice, generation, count));
    if (auto status = writeChecked(
            creates, [&](const api::Json& o) { return api_.create(o); }, stats.created);
        !status)
        return status.error();
    return stats;
}

Result<size_t> Publisher::removeAll() {
    auto listed = api_.list();
    if (!listed)
        return listed.error();
    size_t removed = 0;
    for (const auto& object : listed.value()) {
        if (object.value("/spec/driver"_json_pointer, std::string()) != driverName_)
            continue;
        if (auto status = api_.remove(nameOf(object), resourceVersionOf(object)); !status)
            return status.error();
        ++removed;
    }
    return removed;
}

}  // namespace numadra::slices
