// ResourceClaims and ResourceClaimTemplates: the claim spec (requests, subrequests, derived
// attributes, constraints, config) and a claim's status (its allocation, the pods it is
// reserved for).

#include <algorithm>
#include <set>

#include "decode_support.hpp"
#include "numadra/allocator/allocator.hpp"
#include "numadra/dracel/device.hpp"
#include "validation.hpp"

namespace numadra::allocator {

namespace decoding {

namespace {

Status decodeTolerations(const Reader& r, std::vector<Toleration>& out) {
    Status s = r.each("tolerations", [&](const Reader& item) -> Status {
        if (Status u = item.rejectUnknownFields(
                {"key", "operator", "value", "effect", "tolerationSeconds"});
            !u)
            return u;
        Toleration toleration;
        if (Status e = readString(item, "key", toleration.key); !e)
            return e;
        if (Status e = readString(item, "operator", toleration.op); !e)
            return e;
        if (!toleration.op.empty() && toleration.op != "Equal" && toleration.op != "Exists")
            return item.fieldError("operator", "must be Equal or Exists");
        if (Status e = readString(item, "value", toleration.value); !e)
            return e;
        if (Status e = readString(item, "effect", toleration.effect); !e)
            return e;
        if (!toleration.effect.empty())
            if (Status e = validation::checkTaintEffect(item, toleration.effect); !e)
                return e;
        if (toleration.op == "Exists" && !toleration.value.empty())
            return item.fieldError("value", "must be empty for operator `Exists`");
        auto seconds = item.optionalInt("tolerationSeconds");
        if (!seconds)
            return seconds.error();
        toleration.tolerationSeconds = *seconds;
        out.push_back(std::move(toleration));
        return Status::Ok();
    });
    if (!s)
        return s;
    if (out.size() > 16)
        return r.fieldError("tolerations", "must have at most 16 items");
    return Status::Ok();
}

// `derivedCost` adds up the derived attributes' estimated costs (the API server's limit is on
// their sum in the claim).
Status decodeRequestSpec(const Reader& r, DeviceRequestSpec& spec, bool exactly,
                         std::uint64_t& derivedCost) {
    std::vector<std::string_view> known{"deviceClassName", "selectors", "allocationMode",   "count",
                                        "tolerations",     "capacity",  "derivedAttributes"};
    if (exactly)
        known.emplace_back("adminAccess");
    if (Status s = r.rejectUnknownFields(known); !s)
        return s;
    if (Status s = readRequiredString(r, "deviceClassName", spec.deviceClassName); !s)
        return s;
    if (Status s = decodeSelectors(r, spec.selectors); !s)
        return s;
    if (Status s = readString(r, "allocationMode", spec.allocationMode); !s)
        return s;
    if (spec.allocationMode.empty())
        spec.allocationMode = "ExactCount";
    if (spec.allocationMode != "ExactCount" && spec.allocationMode != "All")
        return r.fieldError("allocationMode",
                            "unsupported count mode \"" + spec.allocationMode + "\"");
    auto count = r.optionalInt("count");
    if (!count)
        return count.error();
    if (*count && spec.allocationMode == "All")
        return r.fieldError("count", "must not be set with allocationMode All");
    spec.count = count->value_or(1);
    if (spec.count < 1)
        return r.fieldError("count", "must be at least 1");
    if (exactly) {
        auto admin = r.optionalBool("adminAccess");
        if (!admin)
            return admin.error();
        spec.adminAccess = *admin;
    }
    if (Status s = decodeTolerations(r, spec.tolerations); !s)
        return s;
    if (r.has("capacity")) {
        const Reader capacity = r.field("capacity");
        if (Status s = capacity.rejectUnknownFields({"requests"}); !s)
            return s;
        Status s = capacity.eachEntry("requests", [&](const std::string& key, const Reader& v) {
            auto quantity = asQuantity(v);
            if (!quantity)
                return Status(quantity.error());
            spec.capacityRequests.emplace(key, std::move(*quantity));
            return Status::Ok();
        });
        if (!s)
            return s;
    }
    std::set<std::string> derivedNames;
    Status derived = r.each("derivedAttributes", [&](const Reader& item) -> Status {
        if (Status u = item.rejectUnknownFields({"name", "expression"}); !u)
            return u;
        DerivedAttribute attribute;
        if (Status e = readRequiredString(item, "name", attribute.name); !e)
            return e;
        if (Status e = validation::checkFullyQualifiedName(item, "name", attribute.name); !e)
            return e;
        if (!derivedNames.insert(attribute.name).second)
            return item.fieldError("name",
                                   "duplicate derived attribute \"" + attribute.name + "\"");
        if (Status e = readRequiredString(item, "expression", attribute.expression); !e)
            return e;
        if (Status e = validation::checkExpression(item, "expression", attribute.expression); !e)
            return e;
        auto compiled = dracel::Expression::compileDerived(attribute.expression);
        if (!compiled)
            return item.fieldError("expression", compiled.error().message);
        derivedCost += compiled->estimatedCost();
        spec.derivedAttributes.push_back(std::move(attribute));
        return Status::Ok();
    });
    if (!derived)
        return derived;
    if (spec.derivedAttributes.size() > 32)
        return r.fieldError("derivedAttributes", "must have at most 32 items");
    return Status::Ok();
}

Result<Request> decodeRequest(const Reader& r, std::uint64_t& derivedCost) {
    if (Status s = r.rejectUnknownFields({"name", "exactly", "firstAvailable"}); !s)
        return s.error();
    Request request;
    if (Status s = readRequiredString(r, "name", request.name); !s)
        return s.error();
    if (r.has("exactly") == r.has("firstAvailable"))
        return r.error("exactly one of exactly and firstAvailable must be set");
    if (r.has("exactly")) {
        request.exactly.emplace();
        if (Status s = decodeRequestSpec(r.field("exactly"), *request.exactly, true, derivedCost);
            !s)
            return s.error();
        return request;
    }
    std::set<std::string> names;
    Status subs = r.each("firstAvailable", [&](const Reader& item) -> Status {
        SubRequest sub;
        auto name = item.optionalString("name");
        if (!name)
            return name.error();
        if (!*name || (*name)->empty())
            return item.fieldError("name", "required value");
        sub.name = **name;
        if (!names.insert(sub.name).second)
            return item.fieldError("name", "duplicate subrequest \"" + sub.name + "\"");
        // The name is not part of the shared spec: check the rest without it.
        Json rest = item.json();
        rest.erase("name");
        Reader spec(rest, item.source(), item.path());
        if (Status s = decodeRequestSpec(spec, sub.spec, false, derivedCost); !s)
            return s;
        request.firstAvailable.push_back(std::move(sub));
        return Status::Ok();
    });
    if (!subs)
        return subs.error();
    if (request.firstAvailable.empty())
        return r.fieldError("firstAvailable", "must have at least one subrequest");
    if (request.firstAvailable.size() > 8)
        return r.fieldError("firstAvailable", "must have at most 8 subrequests");
    return request;
}

Result<DeviceResult> decodeResult(const Reader& r) {
    if (Status s =
            r.rejectUnknownFields({"request", "driver", "pool", "device", "adminAccess",
                                   "tolerations", "bindingConditions", "bindingFailureConditions",
                                   "shareID", "consumedCapacity", "skipNodeOperations"});
        !s)
        return s.error();
    DeviceResult result;
    for (auto [field, out] : {std::pair{"request", &result.request},
                              {"driver", &result.driver},
                              {"pool", &result.pool},
                              {"device", &result.device}})
        if (Status s = readRequiredString(r, field, *out); !s)
            return s.error();
    if (Status s = readBool(r, "adminAccess", result.adminAccess); !s)
        return s.error();
    if (Status s = decodeTolerations(r, result.tolerations); !s)
        return s.error();
    if (Status s = readStrings(r, "bindingConditions", result.bindingConditions, 4); !s)
        return s.error();
    if (Status s = readStrings(r, "bindingFailureConditions", result.bindingFailureConditions, 4);
        !s)
        return s.error();
    auto share = r.optionalString("shareID");
    if (!share)
        return share.error();
    result.shareID = *share;
    Status consumed = r.eachEntry("consumedCapacity", [&](const std::string& key, const Reader& v) {
        auto quantity = asQuantity(v);
        if (!quantity)
            return Status(quantity.error());
        result.consumedCapacity.emplace(key, std::move(*quantity));
        return Status::Ok();
    });
    if (!consumed)
        return consumed.error();
    if (Status s = readSkipNodeOperations(r, result.skipNodeOperations); !s)
        return s.error();
    return result;
}

Result<std::optional<Allocation>> decodeStatus(const Reader& object) {
    auto status = object.optionalObject("status");
    if (!status)
        return status.error();
    if (!*status || !(*status)->has("allocation"))
        return std::optional<Allocation>();
    const Reader allocation = (*status)->field("allocation");
    auto devices = allocation.optionalObject("devices");
    if (!devices)
        return devices.error();
    Allocation out;
    if (*devices) {
        Status s = (*devices)->each("results", [&](const Reader& item) -> Status {
            auto result = decodeResult(item);
            if (!result)
                return result.error();
            out.results.push_back(std::move(*result));
            return Status::Ok();
        });
        if (!s)
            return s.error();
    }
    // Where the claim's devices are: a Pod using it can only go there.
    if (allocation.has("nodeSelector")) {
        auto selector = decodeNodeSelector(allocation.field("nodeSelector"));
        if (!selector)
            return selector.error();
        out.nodeSelector = std::move(*selector);
    }
    return std::optional<Allocation>(std::move(out));
}

// status.reservedFor's pods (name, uid): a claim whose devices map node-allocatable resources
// is not shared across pods.
Status decodeReservedForPods(const Reader& object,
                             std::vector<std::pair<std::string, std::string>>& out) {
    auto status = object.optionalObject("status");
    if (!status)
        return status.error();
    if (!*status)
        return Status::Ok();
    return (*status)->each("reservedFor", [&](const Reader& item) -> Status {
        std::string resource, name, uid;
        for (auto [field, value] :
             {std::pair{"resource", &resource}, {"name", &name}, {"uid", &uid}}) {
            if (Status s = readString(item, field, *value); !s)
                return s;
        }
        if (resource == "pods")
            out.emplace_back(std::move(name), std::move(uid));
        return Status::Ok();
    });
}

Result<Claim> decodeClaimObject(const Reader& object, const Reader& specHolder) {
    auto metadata = object.requiredObject("metadata");
    if (!metadata)
        return metadata.error();
    auto spec = specHolder.requiredObject("spec");
    if (!spec)
        return spec.error();
    auto claim = decodeClaimSpec(*spec);
    if (!claim)
        return claim.error();
    if (Status s = readRequiredString(*metadata, "name", claim->name); !s)
        return s.error();
    if (Status s = readString(*metadata, "namespace", claim->namespace_); !s)
        return s.error();
    if (Status s = readString(*metadata, "uid", claim->uid); !s)
        return s.error();
    return claim;
}

}  // namespace

Result<ClaimItem> decodeClaimItem(const documents::Object& object) {
    const Reader r(object);
    const bool fromTemplate = object.kind() == "ResourceClaimTemplate";
    Result<Claim> claim = Error{};
    if (fromTemplate) {
        auto spec = r.requiredObject("spec");
        if (!spec)
            return spec.error();
        claim = decodeClaimObject(r, *spec);
    } else {
        claim = decodeClaimObject(r, r);
    }
    if (!claim)
        return claim.error();
    std::vector<std::pair<std::string, std::string>> reservedForPods;
    if (!fromTemplate) {
        auto allocation = decodeStatus(r);
        if (!allocation)
            return allocation.error();
        claim->allocation = std::move(*allocation);
        if (Status s = decodeReservedForPods(r, reservedForPods); !s)
            return s.error();
    }
    return ClaimItem{std::move(*claim), object.json, object.source, fromTemplate,
                     std::move(reservedForPods)};
}

}  // namespace decoding

// decodeClaimSpec is public (decode.hpp) and made of the decoders above.
using namespace decoding;

Result<Claim> decodeClaimSpec(const Reader& spec) {
    if (Status s = spec.rejectUnknownFields({"devices"}); !s)
        return s.error();
    Claim claim;
    auto devices = spec.optionalObject("devices");
    if (!devices)
        return devices.error();
    if (!*devices)
        return claim;
    const Reader& r = **devices;
    if (Status s = r.rejectUnknownFields({"requests", "constraints", "config"}); !s)
        return s.error();
    std::set<std::string> names;
    std::uint64_t derivedCost = 0;
    Status requests = r.each("requests", [&](const Reader& item) -> Status {
        auto request = decodeRequest(item, derivedCost);
        if (!request)
            return request.error();
        if (!names.insert(request->name).second)
            return item.fieldError("name", "duplicate request \"" + request->name + "\"");
        claim.requests.push_back(std::move(*request));
        return Status::Ok();
    });
    if (!requests)
        return requests.error();
    if (claim.requests.size() > kMaxResults)
        return r.fieldError("requests", "must have at most 32 items");
    if (derivedCost > dracel::kMaxEstimatedCost)
        return r.error(
            "forbidden: too complex, total cost of derived attribute CEL expressions in the claim "
            "exceeds cost limit (estimated " +
            std::to_string(derivedCost) + ", limit " + std::to_string(dracel::kMaxEstimatedCost) +
            ")");
    auto knownRequest = [&](const std::string& name) {
        auto slash = name.find('/');
        const std::string parent = name.substr(0, slash);
        for (const Request& request : claim.requests) {
            if (request.name != parent)
                continue;
            if (slash == std::string::npos)
                return true;
            const std::string sub = name.substr(slash + 1);
            return std::any_of(request.firstAvailable.begin(), request.firstAvailable.end(),
                               [&](const SubRequest& s) { return s.name == sub; });
        }
        return false;
    };
    // The requests a constraint or a config entry names: each once, each a request of the claim.
    auto readRequestNames = [&](const Reader& item, std::vector<std::string>& named) -> Status {
        if (Status e = readStrings(item, "requests", named, kMaxResults); !e)
            return e;
        if (Status e = validation::rejectDuplicates(item, "requests", named); !e)
            return e;
        for (const std::string& name : named)
            if (!knownRequest(name))
                return item.fieldError("requests",
                                       "\"" + name + "\" is not a request of the claim");
        return Status::Ok();
    };
    Status constraints = r.each("constraints", [&](const Reader& item) -> Status {
        if (Status u =
                item.rejectUnknownFields({"requests", "matchAttribute", "distinctAttribute"});
            !u)
            return u;
        Constraint constraint;
        if (Status e = readRequestNames(item, constraint.requests); !e)
            return e;
        auto match = item.optionalString("matchAttribute");
        if (!match)
            return match.error();
        auto distinct = item.optionalString("distinctAttribute");
        if (!distinct)
            return distinct.error();
        if (match->has_value() == distinct->has_value())
            return item.error(match->has_value()
                                  ? "matchAttribute and distinctAttribute are mutually exclusive"
                                  : "empty constraint (unsupported constraint type?)");
        if (match->has_value())
            if (Status e = validation::checkFullyQualifiedName(item, "matchAttribute", **match); !e)
                return e;
        if (distinct->has_value())
            if (Status e =
                    validation::checkFullyQualifiedName(item, "distinctAttribute", **distinct);
                !e)
                return e;
        constraint.matchAttribute = *match;
        constraint.distinctAttribute = *distinct;
        claim.constraints.push_back(std::move(constraint));
        return Status::Ok();
    });
    if (!constraints)
        return constraints.error();
    if (claim.constraints.size() > 32)
        return r.fieldError("constraints", "must have at most 32 items");
    if (Status s = validation::checkDerivedAttributesUsed(r, claim); !s)
        return s.error();
    Status config = r.each("config", [&](const Reader& item) -> Status {
        if (Status u = item.rejectUnknownFields({"requests", "opaque"}); !u)
            return u;
        ClaimConfig entry;
        if (Status e = readRequestNames(item, entry.requests); !e)
            return e;
        auto opaque = decodeOpaque(item);
        if (!opaque)
            return opaque.error();
        entry.opaque = std::move(*opaque);
        claim.config.push_back(std::move(entry));
        return Status::Ok();
    });
    if (!config)
        return config.error();
    if (claim.config.size() > 32)
        return r.fieldError("config", "must have at most 32 items");
    return claim;
}

}  // namespace numadra::allocator
