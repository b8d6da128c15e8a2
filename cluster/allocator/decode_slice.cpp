// Decoding of the inputs of dra-allocate: every field the allocator reads, with the API
// server's defaults and the limits it enforces, so an input the API would refuse is refused
// here too (with the source and field path) instead of giving an answer the cluster never would.

#include "numadra/allocator/decode.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "numadra/allocator/allocator.hpp"
#include "numadra/dracel/device.hpp"
#include "numadra/dracel/semver.hpp"

namespace numadra::allocator {

using documents::Json;
using documents::Reader;

namespace {

Status readString(const Reader& r, std::string_view name, std::string& out) {
    auto value = r.optionalString(name);
    if (!value)
        return value.error();
    if (*value)
        out = **value;
    return Status::Ok();
}

Status readRequiredString(const Reader& r, std::string_view name, std::string& out) {
    auto value = r.optionalString(name);
    if (!value)
        return value.error();
    if (!*value || (*value)->empty())
        return r.fieldError(name, "required value");
    out = **value;
    return Status::Ok();
}

Status readBool(const Reader& r, std::string_view name, bool& out) {
    auto value = r.optionalBool(name);
    if (!value)
        return value.error();
    out = value->value_or(false);
    return Status::Ok();
}

Status readStrings(const Reader& r, std::string_view name, std::vector<std::string>& out,
                   size_t limit) {
    auto values = r.stringArray(name);
    if (!values)
        return values.error();
    if (values->size() > limit)
        return r.fieldError(name, "must have at most " + std::to_string(limit) + " items");
    out = std::move(*values);
    return Status::Ok();
}

Result<Quantity> asQuantity(const Reader& r) {
    std::string text;
    if (r.json().is_string()) {
        text = r.json().get<std::string>();
    } else if (r.json().is_number_integer()) {
        text = r.json().dump();
    } else {
        return r.error("expected a quantity, got " + documents::describeValue(r.json()));
    }
    auto quantity = Quantity::parse(text);
    if (!quantity)
        return r.error(quantity.error().message);
    return quantity;
}

Status readQuantity(const Reader& r, std::string_view name, std::optional<Quantity>& out) {
    if (!r.has(name))
        return Status::Ok();
    auto quantity = asQuantity(r.field(name));
    if (!quantity)
        return quantity.error();
    out = std::move(*quantity);
    return Status::Ok();
}

Status readRequiredQuantity(const Reader& r, std::string_view name, Quantity& out) {
    if (!r.has(name))
        return r.fieldError(name, "required value");
    auto quantity = asQuantity(r.field(name));
    if (!quantity)
        return quantity.error();
    out = std::move(*quantity);
    return Status::Ok();
}

// k8s-short-name: a DNS label (RFC 1123): at most 63 lowercase alphanumerics and '-', starting
// and ending with an alphanumeric.
bool isShortName(std::string_view s) {
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back()))
        return false;
    return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

// A DNS subdomain as a driver name must be (validateDriverName): at most 63 characters, dot-
// separated RFC 1123 labels of lowercase alphanumerics and '-'.
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

// A DNS subdomain (RFC 1123): at most 253 characters, dot-separated labels of lowercase
// alphanumerics and '-', each starting and ending with an alphanumeric.
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

// A qualified name (label keys, condition types): an optional DNS subdomain and '/', then at
// most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric.
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

// v1helper.IsExtendedResourceName: not a native resource (it has a domain, and not
// kubernetes.io's), and "requests.<name>" is a qualified name.
bool isExtendedResourceName(std::string_view s) {
    if (s.find('/') == std::string_view::npos ||
        s.find("kubernetes.io/") != std::string_view::npos || s.starts_with("requests."))
        return false;
    return isQualifiedName("requests." + std::string(s));
}

// A C identifier of at most 32 characters (validateCIdentifier, DeviceMaxIDLength).
bool isAttributeId(std::string_view s) {
    auto letter = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    };
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (s.empty() || s.size() > 32 || !letter(s.front()))
        return false;
    return std::all_of(s.begin(), s.end(), [&](char c) { return letter(c) || digit(c); });
}

// k8s-resource-fully-qualified-name, as the API server validates a constraint's attribute and a
// derived attribute's name: a domain, a slash, a C identifier ("numa.dra.dev/socket",
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

// consumesCounters[].compatibilityGroups (DRADeviceCompatibilityGroups): at most 2 unique
// k8s-short-names.
Status readCompatibilityGroups(const Reader& r, std::vector<std::string>& out) {
    if (Status s = readStrings(r, "compatibilityGroups", out, 2); !s)
        return s;
    for (size_t i = 0; i < out.size(); ++i)
        if (!isShortName(out[i]))
            return r.field("compatibilityGroups")
                .item(i)
                .error("\"" + out[i] +
                       "\" is not a valid group name: must be a DNS label (at most 63 lowercase "
                       "alphanumeric characters or '-', starting and ending with an alphanumeric)");
    return rejectDuplicates(r, "compatibilityGroups", out);
}

// spec.skipNodeOperations (DRAOptionalNodeOperations): a set of NodePrepareResources,
// NodeUnprepareResources and "*"; NodePrepareResources only with NodeUnprepareResources or "*".
Status readSkipNodeOperations(const Reader& r, std::vector<std::string>& out) {
    if (Status s = readStrings(r, "skipNodeOperations", out, SIZE_MAX); !s)
        return s;
    static const std::set<std::string, std::less<>> kOperations{"NodePrepareResources",
                                                                "NodeUnprepareResources", "*"};
    for (size_t i = 0; i < out.size(); ++i)
        if (!kOperations.contains(out[i]))
            return r.field("skipNodeOperations")
                .item(i)
                .error("unsupported value \"" + out[i] +
                       "\": supported values: \"NodePrepareResources\", "
                       "\"NodeUnprepareResources\", \"*\"");
    if (Status s = rejectDuplicates(r, "skipNodeOperations", out); !s)
        return s;
    auto has = [&](std::string_view value) {
        return std::find(out.begin(), out.end(), value) != out.end();
    };
    if (has("NodePrepareResources") && !has("NodeUnprepareResources") && !has("*"))
        return r.fieldError("skipNodeOperations",
                            "NodePrepareResources may only be listed together with "
                            "NodeUnprepareResources or \"*\"");
    return Status::Ok();
}

Status checkExpression(const Reader& r, std::string_view name, const std::string& expression) {
    if (expression.empty())
        return r.fieldError(name, "required value");
    if (expression.size() > dracel::kMaxExpressionLength)
        return r.fieldError(
            name, "must be at most 10Ki characters, has " + std::to_string(expression.size()));
    return Status::Ok();
}

// --- node selection -------------------------------------------------------------------------

// A node selector requirement as ValidateNodeSelectorRequirement checks it: the values its
// operator needs; for matchFields (`fields`), only metadata.name with In or NotIn and one value.
Status checkRequirement(const Reader& item, const NodeSelectorRequirement& requirement,
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

Status decodeRequirements(const Reader& term, std::string_view name,
                          std::vector<NodeSelectorRequirement>& out) {
    const bool fields = name == "matchFields";
    return term.each(name, [&](const Reader& item) -> Status {
        if (Status s = item.rejectUnknownFields({"key", "operator", "values"}); !s)
            return s;
        NodeSelectorRequirement requirement;
        if (Status s = readRequiredString(item, "key", requirement.key); !s)
            return s;
        if (Status s = readRequiredString(item, "operator", requirement.op); !s)
            return s;
        static const std::set<std::string> kOperators{"In",           "NotIn", "Exists",
                                                      "DoesNotExist", "Gt",    "Lt"};
        if (!kOperators.contains(requirement.op))
            return item.fieldError("operator", "unsupported operator \"" + requirement.op + "\"");
        if (Status s = readStrings(item, "values", requirement.values, SIZE_MAX); !s)
            return s;
        if (Status s = checkRequirement(item, requirement, fields); !s)
            return s;
        out.push_back(std::move(requirement));
        return Status::Ok();
    });
}

Result<NodeSelector> decodeNodeSelector(const Reader& r) {
    if (Status s = r.rejectUnknownFields({"nodeSelectorTerms"}); !s)
        return s.error();
    NodeSelector selector;
    Status s = r.each("nodeSelectorTerms", [&](const Reader& term) -> Status {
        if (Status u = term.rejectUnknownFields({"matchExpressions", "matchFields"}); !u)
            return u;
        NodeSelectorTerm out;
        if (Status e = decodeRequirements(term, "matchExpressions", out.matchExpressions); !e)
            return e;
        if (Status e = decodeRequirements(term, "matchFields", out.matchFields); !e)
            return e;
        selector.terms.push_back(std::move(out));
        return Status::Ok();
    });
    if (!s)
        return s.error();
    if (selector.terms.empty())
        return r.fieldError("nodeSelectorTerms", "must have at least one term");
    return selector;
}

// The node selection fields of a slice or (perDeviceNodeSelection) of a device, each valid on
// its own: nodeName, when given, not empty (`emptyName` says so in upstream's words); allNodes,
// when given, true. The callers check that exactly one is set.
Status readNodeSelection(const Reader& r, std::optional<std::string>& nodeName,
                         std::optional<NodeSelector>& selector, bool& allNodes,
                         std::string_view emptyName) {
    auto name = r.optionalString("nodeName");
    if (!name)
        return name.error();
    if (*name && (*name)->empty())
        return r.fieldError("nodeName", emptyName);
    if (*name)
        nodeName = **name;
    auto all = r.optionalBool("allNodes");
    if (!all)
        return all.error();
    if (*all && !**all)
        return r.fieldError("allNodes", "must be either unset or set to true");
    allNodes = all->value_or(false);
    if (r.has("nodeSelector")) {
        auto decoded = decodeNodeSelector(r.field("nodeSelector"));
        if (!decoded)
            return decoded.error();
        selector = std::move(*decoded);
    }
    return Status::Ok();
}

// --- ResourceSlice --------------------------------------------------------------------------

template <class T>
Result<std::vector<T>> listOf(const Reader& list,
                              const std::function<Result<T>(const Reader&)>& one) {
    std::vector<T> out;
    Status s = list.each([&](const Reader& item) -> Status {
        auto value = one(item);
        if (!value)
            return value.error();
        out.push_back(std::move(*value));
        return Status::Ok();
    });
    if (!s)
        return s.error();
    return out;
}

Result<api::Version> asVersion(const Reader& r) {
    auto text = r.asString();
    if (!text)
        return text.error();
    if (text->size() > 64)
        return r.error("must be at most 64 bytes");
    if (!dracel::Semver::parse(*text))
        return r.error("\"" + *text + "\" is not a semantic version (semver 2.0.0)");
    return api::Version{*text};
}

Result<std::string> asAttributeString(const Reader& r) {
    auto text = r.asString();
    if (!text)
        return text.error();
    if (text->size() > 64)
        return r.error("must be at most 64 bytes");
    return text;
}

Result<AttributeValue> decodeAttribute(const Reader& r) {
    if (Status s = r.rejectUnknownFields(
            {"int", "bool", "string", "version", "ints", "bools", "strings", "versions"});
        !s)
        return s.error();
    std::vector<std::string> present;
    for (const char* field :
         {"int", "bool", "string", "version", "ints", "bools", "strings", "versions"})
        if (r.has(field))
            present.emplace_back(field);
    if (present.size() != 1)
        return r.error(present.empty() ? "an attribute needs exactly one value, has none"
                                       : "an attribute needs exactly one value, has " +
                                             std::to_string(present.size()));
    const std::string& kind = present.front();
    const Reader value = r.field(kind);
    if (kind == "int") {
        auto v = value.asInt();
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    if (kind == "bool") {
        auto v = value.asBool();
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    if (kind == "string") {
        auto v = asAttributeString(value);
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    if (kind == "version") {
        auto v = asVersion(value);
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    if (Status s = value.expectArray(); !s)
        return s.error();
    if (value.size() == 0)
        return r.fieldError(kind, "a list attribute needs at least one value");
    if (kind == "ints") {
        auto v = listOf<std::int64_t>(value, [](const Reader& i) { return i.asInt(); });
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    if (kind == "bools") {
        auto v = listOf<bool>(value, [](const Reader& i) { return i.asBool(); });
        return v ? Result<AttributeValue>(std::vector<bool>(v->begin(), v->end()))
                 : Result<AttributeValue>(v.error());
    }
    if (kind == "strings") {
        auto v = listOf<std::string>(value, asAttributeString);
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    auto v = listOf<api::Version>(value, asVersion);
    return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
}

Result<std::optional<RequestPolicy>> decodePolicy(const Reader& r) {
    if (!r.has("requestPolicy"))
        return std::optional<RequestPolicy>();
    const Reader policy = r.field("requestPolicy");
    if (Status s = policy.rejectUnknownFields({"default", "validValues", "validRange"}); !s)
        return s.error();
    RequestPolicy out;
    if (Status s = readQuantity(policy, "default", out.defaultValue); !s)
        return s.error();
    Status values = policy.each("validValues", [&](const Reader& item) -> Status {
        auto quantity = asQuantity(item);
        if (!quantity)
            return quantity.error();
        if (!out.validValues.empty() && !(out.validValues.back() < *quantity))
            return item.error("validValues must be sorted in ascending order without duplicates");
        out.validValues.push_back(std::move(*quantity));
        return Status::Ok();
    });
    if (!values)
        return values.error();
    if (out.validValues.size() > 10)
        return policy.fieldError("validValues", "must have at most 10 items");
    if (policy.has("validRange")) {
        const Reader range = policy.field("validRange");
        if (Status s = range.rejectUnknownFields({"min", "max", "step"}); !s)
            return s.error();
        CapacityRange decoded;
        if (Status s = readRequiredQuantity(range, "min", decoded.min); !s)
            return s.error();
        if (Status s = readQuantity(range, "max", decoded.max); !s)
            return s.error();
        if (Status s = readQuantity(range, "step", decoded.step); !s)
            return s.error();
        if (!out.validValues.empty())
            return policy.error("validValues and validRange are mutually exclusive");
        out.validRange = std::move(decoded);
    }
    return std::optional<RequestPolicy>(std::move(out));
}

// Whether a quantity has a fractional part (upstream's isFractionalQuantity). Values beyond
// int64 count as whole: no quantity the API stores there has a fraction.
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

// Upstream's validateRequestPolicyRange (the range of a validated requestPolicy `r`).
Status checkRequestRange(const Reader& r, const Quantity& capacity, const Quantity& defaultValue,
                         const CapacityRange& range) {
    const Reader at = r.field("validRange");
    const std::string cap = capacity.toString();
    if (capacity < range.min)
        return at.fieldError("min", "invalid value \"" + range.min.toString() +
                                        "\": min is larger than capacity value: " + cap);
    if (defaultValue < range.min)
        return at.fieldError("default",
                             "invalid value \"" + defaultValue.toString() +
                                 "\": default is less than min: " + range.min.toString());
    if (range.max) {
        if (*range.max < range.min)
            return at.fieldError("max", "invalid value \"" + range.min.toString() +
                                            "\": min is larger than max: " + range.max->toString());
        if (capacity < *range.max)
            return at.fieldError("max", "invalid value \"" + range.max->toString() +
                                            "\": max is larger than capacity value: " + cap);
        if (*range.max < defaultValue)
            return at.fieldError("default",
                                 "invalid value \"" + defaultValue.toString() +
                                     "\": default is more than max: " + range.max->toString());
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
                return at.fieldError(name, "invalid value \"" + q->toString() +
                                               "\": value cannot be represented as a milli value");
    }
    if (!range.step)
        return Status::Ok();
    const Quantity& step = *range.step;
    if (step.sign() <= 0)
        return at.fieldError(
            "step", "invalid value \"" + step.toString() + "\": must be greater than zero");
    if (auto added = range.min.add(step); added && capacity < *added)
        return at.fieldError("step", "invalid value \"" + step.toString() + "\": one step " +
                                         added->toString() +
                                         " is larger than capacity value: " + cap);
    if (!milli) {
        const Quantity largest = Quantity::fromInt(std::numeric_limits<std::int64_t>::max(),
                                                   Quantity::Format::DecimalSI);
        for (const auto& [name, q] : bounds) {
            if (q == nullptr)
                continue;
            if (q->sign() < 0)
                return at.fieldError(name, "invalid value \"" + q->toString() +
                                               "\": must be greater than or equal to 0");
            if (largest < *q)
                return at.fieldError(name, "invalid value \"" + q->toString() +
                                               "\": must not be larger than 9223372036854775807");
        }
    }
    const std::int64_t stepUnits = rangeUnits(step, milli);
    const std::int64_t minUnits = rangeUnits(range.min, milli);
    for (const Quantity* value : {&defaultValue, range.max ? &*range.max : nullptr}) {
        if (value != nullptr && (rangeUnits(*value, milli) - minUnits) % stepUnits != 0)
            return at.fieldError("step", "invalid value \"" + value->toString() +
                                             "\": value is not a multiple of a given step (" +
                                             step.toString() + ") from (" + range.min.toString() +
                                             ")");
    }
    return Status::Ok();
}

// Upstream's validateRequestPolicy for a capacity of a device that allows multiple allocations
// (`r` is the requestPolicy).
Status checkRequestPolicy(const Reader& r, const Quantity& capacity, const RequestPolicy& policy) {
    if (!policy.validValues.empty()) {
        if (!policy.defaultValue)
            return r.fieldError("default", "required value: required when validValues is defined");
        // An option the capacity cannot hold could never be allocated.
        for (size_t i = 0; i < policy.validValues.size(); ++i) {
            if (capacity < policy.validValues[i])
                return r.field("validValues")
                    .item(i)
                    .error("invalid value \"" + policy.validValues[i].toString() +
                           "\": option is larger than capacity value: " + capacity.toString());
        }
        const bool listed =
            std::any_of(policy.validValues.begin(), policy.validValues.end(),
                        [&](const Quantity& v) { return v == *policy.defaultValue; });
        if (!listed)
            return r.fieldError("validValues",
                                "invalid value \"" + policy.defaultValue->toString() +
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

// cpu, memory and hugepages-<size>: the node's allocatable resources a device may stand for
// (upstream's IsNodeAllocatableResourceName; extended resources are not).
bool isNodeAllocatableResourceName(const std::string& name) {
    return name == "cpu" || name == "memory" || name.starts_with("hugepages-");
}

Status decodeNodeAllocatableMapping(const Reader& r,
                                    const std::map<std::string, Capacity>& capacity,
                                    NodeAllocatableResource& out) {
    if (Status s = r.rejectUnknownFields({"capacityKey", "capacityMultiplier", "deviceMultiplier"});
        !s)
        return s;
    out.mapped = true;
    if (r.has("capacityKey")) {
        std::string key;
        if (Status s = readString(r, "capacityKey", key); !s)
            return s;
        if (key.empty())
            return r.fieldError("capacityKey", "capacityKey must not be an empty string");
        if (!capacity.contains(key))
            return r.fieldError("capacityKey", "not found: the device has no capacity " + key);
        out.capacityKey = key;
    }
    if (Status s = readQuantity(r, "capacityMultiplier", out.capacityMultiplier); !s)
        return s;
    if (Status s = readQuantity(r, "deviceMultiplier", out.deviceMultiplier); !s)
        return s;
    if (out.capacityKey && !out.capacityMultiplier)
        return r.fieldError("capacityMultiplier",
                            "capacityMultiplier is required when capacityKey is set");
    if (out.capacityMultiplier && !out.capacityKey)
        return r.fieldError("capacityKey",
                            "capacityKey is required when capacityMultiplier is set");
    if (out.capacityMultiplier && out.capacityMultiplier->sign() <= 0)
        return r.fieldError("capacityMultiplier", "must be positive");
    if (out.deviceMultiplier && out.deviceMultiplier->sign() <= 0)
        return r.fieldError("deviceMultiplier", "must be positive");
    if (out.capacityKey && out.deviceMultiplier)
        return r.error("must specify at most one of capacityKey and deviceMultiplier");
    return Status::Ok();
}

Status decodeNodeAllocatableOverhead(const Reader& r, NodeAllocatableResource& out) {
    if (Status s = r.rejectUnknownFields({"perPod", "perContainer"}); !s)
        return s;
    if (Status s = readQuantity(r, "perPod", out.perPod); !s)
        return s;
    if (Status s = readQuantity(r, "perContainer", out.perContainer); !s)
        return s;
    if (!out.perPod && !out.perContainer)
        return r.error("at least one of perPod or perContainer must be set");
    if (out.perPod && out.perPod->sign() < 0)
        return r.fieldError("perPod", "must be non-negative");
    if (out.perContainer && out.perContainer->sign() < 0)
        return r.fieldError("perContainer", "must be non-negative");
    return Status::Ok();
}

Status decodeNodeAllocatableResources(const Reader& r, Device& device) {
    return r.eachEntry("nodeAllocatableResources", [&](const std::string& name, const Reader& v) {
        if (!isNodeAllocatableResourceName(name))
            return Status(
                v.error("must be a node allocatable resource name (cpu, memory, "
                        "hugepages-<size>), not " +
                        name));
        if (Status s = v.rejectUnknownFields({"mapping", "overhead"}); !s)
            return s;
        if (!v.has("mapping") && !v.has("overhead"))
            return Status(v.error("at least one of mapping or overhead must be set"));
        NodeAllocatableResource resource;
        if (v.has("mapping")) {
            if (Status s =
                    decodeNodeAllocatableMapping(v.field("mapping"), device.capacity, resource);
                !s)
                return s;
        }
        if (v.has("overhead")) {
            if (Status s = decodeNodeAllocatableOverhead(v.field("overhead"), resource); !s)
                return s;
        }
        device.nodeAllocatableResources.emplace(name, std::move(resource));
        return Status::Ok();
    });
}

// A taint's (or a toleration's) effect: NoSchedule, NoExecute or None.
Status checkTaintEffect(const Reader& r, const std::string& effect) {
    if (effect == "NoSchedule" || effect == "NoExecute" || effect == "None")
        return Status::Ok();
    return r.fieldError("effect", "unsupported value \"" + effect +
                                      "\": supported values: \"NoExecute\", \"NoSchedule\", "
                                      "\"None\"");
}

// bindingConditions and bindingFailureConditions: both or neither, each condition once, none in
// both lists.
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

Result<Device> decodeDevice(const Reader& r, bool perDeviceNodeSelection) {
    if (Status s = r.rejectUnknownFields({"name", "attributes", "capacity", "consumesCounters",
                                          "taints", "allowMultipleAllocations", "bindingConditions",
                                          "bindingFailureConditions", "bindsToNode", "nodeName",
                                          "nodeSelector", "allNodes", "nodeAllocatableResources"});
        !s)
        return s.error();
    Device device;
    if (Status s = readRequiredString(r, "name", device.name); !s)
        return s.error();
    size_t values = 0;
    Status attributes = r.eachEntry("attributes", [&](const std::string& key, const Reader& v) {
        auto value = decodeAttribute(v);
        if (!value)
            return Status(value.error());
        values += api::attributeValueCount(*value);
        device.attributes.emplace(key, std::move(*value));
        return Status::Ok();
    });
    if (!attributes)
        return attributes.error();
    if (Status s = readBool(r, "allowMultipleAllocations", device.allowMultipleAllocations); !s)
        return s.error();
    if (values > 48)
        return r.fieldError("attributes", "a device may have at most 48 attribute values, has " +
                                              std::to_string(values));
    Status capacity = r.eachEntry("capacity", [&](const std::string& key, const Reader& v) {
        if (Status s = v.rejectUnknownFields({"value", "requestPolicy"}); !s)
            return s;
        Capacity entry;
        if (Status s = readRequiredQuantity(v, "value", entry.value); !s)
            return s;
        auto policy = decodePolicy(v);
        if (!policy)
            return Status(policy.error());
        // A policy says how shares of a capacity are sized: a device allocated once has none.
        if (*policy && !device.allowMultipleAllocations)
            return Status(
                v.fieldError("requestPolicy", "forbidden: allowMultipleAllocations must be true"));
        if (*policy)
            if (Status s = checkRequestPolicy(v.field("requestPolicy"), entry.value, **policy); !s)
                return s;
        entry.requestPolicy = std::move(*policy);
        device.capacity.emplace(key, std::move(entry));
        return Status::Ok();
    });
    if (!capacity)
        return capacity.error();
    if (device.attributes.size() + device.capacity.size() > 32)
        return r.error("a device may have at most 32 attributes and capacities together");
    if (Status s = decodeNodeAllocatableResources(r, device); !s)
        return s.error();
    Status counters = r.each("consumesCounters", [&](const Reader& item) -> Status {
        if (Status s = item.rejectUnknownFields({"counterSet", "counters", "compatibilityGroups"});
            !s)
            return s;
        CounterConsumption use;
        if (Status s = readRequiredString(item, "counterSet", use.counterSet); !s)
            return s;
        if (Status s = readCompatibilityGroups(item, use.compatibilityGroups); !s)
            return s;
        Status entries = item.eachEntry("counters", [&](const std::string& key, const Reader& v) {
            if (Status s = v.rejectUnknownFields({"value", "valueFrom"}); !s)
                return s;
            CounterUse counter;
            if (Status s = readQuantity(v, "value", counter.value); !s)
                return s;
            if (v.has("valueFrom")) {
                const Reader from = v.field("valueFrom");
                if (Status s = from.rejectUnknownFields({"capacityKey"}); !s)
                    return s;
                std::string capacityKey;
                if (Status s = readRequiredString(from, "capacityKey", capacityKey); !s)
                    return s;
                counter.capacityKey = capacityKey;
            }
            if (counter.value.has_value() == counter.capacityKey.has_value())
                return Status(v.error("exactly one of value and valueFrom must be set"));
            use.counters.emplace(key, std::move(counter));
            return Status::Ok();
        });
        if (!entries)
            return entries;
        if (use.counters.empty())
            return item.fieldError("counters", "required value: a device consumes counters");
        if (use.counters.size() > 32)
            return item.fieldError("counters", "must have at most 32 counters");
        const bool named = std::any_of(
            device.consumesCounters.begin(), device.consumesCounters.end(),
            [&](const CounterConsumption& other) { return other.counterSet == use.counterSet; });
        if (named)
            return item.error("duplicate value \"" + use.counterSet +
                              "\": a device names a counter set once");
        device.consumesCounters.push_back(std::move(use));
        return Status::Ok();
    });
    if (!counters)
        return counters.error();
    if (device.consumesCounters.size() > 2)
        return r.fieldError("consumesCounters", "must have at most 2 items");
    Status taints = r.each("taints", [&](const Reader& item) -> Status {
        if (Status s = item.rejectUnknownFields({"key", "value", "effect", "timeAdded"}); !s)
            return s;
        Taint taint;
        if (Status s = readRequiredString(item, "key", taint.key); !s)
            return s;
        if (Status s = readString(item, "value", taint.value); !s)
            return s;
        if (Status s = readRequiredString(item, "effect", taint.effect); !s)
            return s;
        if (Status s = checkTaintEffect(item, taint.effect); !s)
            return s;
        device.taints.push_back(std::move(taint));
        return Status::Ok();
    });
    if (!taints)
        return taints.error();
    if (device.taints.size() > 16)
        return r.fieldError("taints", "must have at most 16 items");
    device.hasBindingConditions = r.has("bindingConditions");
    if (Status s = readStrings(r, "bindingConditions", device.bindingConditions, 4); !s)
        return s.error();
    if (Status s = readStrings(r, "bindingFailureConditions", device.bindingFailureConditions, 4);
        !s)
        return s.error();
    if (Status s = readBool(r, "bindsToNode", device.bindsToNode); !s)
        return s.error();
    if (Status s = readNodeSelection(r, device.nodeName, device.nodeSelector, device.allNodes,
                                     "must not be empty");
        !s)
        return s.error();
    if (Status s = checkBindingConditions(r, device); !s)
        return s.error();
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
    return device;
}

// spec's node selection: exactly one of nodeName, nodeSelector (of one term: selectors of
// different slices are merged into one), allNodes and perDeviceNodeSelection, counter-set
// slices included.
Status readSliceNodeSelection(const Reader& spec, Slice& slice) {
    if (Status s = readNodeSelection(spec, slice.nodeName, slice.nodeSelector, slice.allNodes,
                                     "must be either unset or set to a non-empty string");
        !s)
        return s;
    auto perDevice = spec.optionalBool("perDeviceNodeSelection");
    if (!perDevice)
        return perDevice.error();
    if (*perDevice && !**perDevice)
        return spec.fieldError("perDeviceNodeSelection", "must be either unset or set to true");
    slice.perDeviceNodeSelection = perDevice->value_or(false);
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

Result<Slice> decodeSlice(const Reader& object) {
    Slice slice;
    auto metadata = object.requiredObject("metadata");
    if (!metadata)
        return metadata.error();
    if (Status s = readRequiredString(*metadata, "name", slice.name); !s)
        return s.error();
    auto spec = object.requiredObject("spec");
    if (!spec)
        return spec.error();
    if (Status s = spec->rejectUnknownFields({"driver", "pool", "nodeName", "nodeSelector",
                                              "allNodes", "perDeviceNodeSelection", "devices",
                                              "sharedCounters", "skipNodeOperations"});
        !s)
        return s.error();
    if (Status s = readRequiredString(*spec, "driver", slice.driver); !s)
        return s.error();
    auto pool = spec->requiredObject("pool");
    if (!pool)
        return pool.error();
    if (Status s = pool->rejectUnknownFields({"name", "generation", "resourceSliceCount"}); !s)
        return s.error();
    if (Status s = readRequiredString(*pool, "name", slice.pool.name); !s)
        return s.error();
    auto generation = pool->requiredInt("generation");
    if (!generation)
        return generation.error();
    auto count = pool->requiredInt("resourceSliceCount");
    if (!count)
        return count.error();
    if (*count < 1)
        return pool->fieldError("resourceSliceCount", "must be at least 1");
    if (*generation < 0)
        return pool->fieldError("generation", "must be greater than or equal to zero");
    slice.pool.generation = *generation;
    slice.pool.resourceSliceCount = *count;
    if (Status s = readSliceNodeSelection(*spec, slice); !s)
        return s.error();
    if (Status s = readSkipNodeOperations(*spec, slice.skipNodeOperations); !s)
        return s.error();
    // A slice publishes devices or counter sets, never both: upstream's allocator reads a slice
    // with counter sets for its counters alone.
    if (spec->has("devices") && spec->has("sharedCounters"))
        return spec->error("only one of `sharedCounters` or `devices` is allowed");
    std::set<std::string> deviceNames;
    Status devices = spec->each("devices", [&](const Reader& item) -> Status {
        auto device = decodeDevice(item, slice.perDeviceNodeSelection);
        if (!device)
            return device.error();
        if (!deviceNames.insert(device->name).second)
            return item.error("duplicate value \"" + device->name +
                              "\": a device name is listed once in a slice");
        slice.devices.push_back(std::move(*device));
        return Status::Ok();
    });
    if (!devices)
        return devices.error();
    Status counters = spec->each("sharedCounters", [&](const Reader& item) -> Status {
        if (Status s = item.rejectUnknownFields({"name", "counters"}); !s)
            return s;
        CounterSet set;
        if (Status s = readRequiredString(item, "name", set.name); !s)
            return s;
        Status entries = item.eachEntry("counters", [&](const std::string& key, const Reader& v) {
            if (Status s = v.rejectUnknownFields({"value", "requestPolicy"}); !s)
                return s;
            SharedCounter counter;
            if (Status s = readRequiredQuantity(v, "value", counter.value); !s)
                return s;
            auto policy = decodePolicy(v);
            if (!policy)
                return Status(policy.error());
            counter.requestPolicy = std::move(*policy);
            set.counters.emplace(key, std::move(counter));
            return Status::Ok();
        });
        if (!entries)
            return entries;
        const bool named =
            std::any_of(slice.sharedCounters.begin(), slice.sharedCounters.end(),
                        [&](const CounterSet& other) { return other.name == set.name; });
        if (named)
            return item.error("duplicate value \"" + set.name +
                              "\": a counter set is defined once");
        if (set.counters.empty())
            return item.fieldError("counters", "required value: a counter set has counters");
        if (set.counters.size() > 32)
            return item.fieldError("counters", "must have at most 32 counters");
        slice.sharedCounters.push_back(std::move(set));
        return Status::Ok();
    });
    if (!counters)
        return counters.error();
    if (slice.sharedCounters.size() > 8)
        return spec->fieldError("sharedCounters", "must have at most 8 counter sets");
    const bool advanced =
        std::any_of(slice.devices.begin(), slice.devices.end(), [](const Device& d) {
            if (!d.taints.empty() || !d.consumesCounters.empty())
                return true;
            return std::any_of(d.attributes.begin(), d.attributes.end(),
                               [](const auto& a) { return api::isListAttribute(a.second); });
        });
    const size_t limit = advanced ? 64 : 128;
    if (slice.devices.size() > limit)
        return spec->fieldError("devices", "must have at most " + std::to_string(limit) +
                                               " devices, has " +
                                               std::to_string(slice.devices.size()));
    return slice;
}

// --- DeviceClass ----------------------------------------------------------------------------

Status decodeSelectors(const Reader& r, std::vector<std::string>& out) {
    Status s = r.each("selectors", [&](const Reader& item) -> Status {
        if (Status u = item.rejectUnknownFields({"cel"}); !u)
            return u;
        if (!item.has("cel"))
            return item.error("CEL expression empty (unsupported selector type?)");
        auto cel = item.requiredObject("cel");
        if (!cel)
            return cel.error();
        if (Status u = cel->rejectUnknownFields({"expression"}); !u)
            return u;
        std::string expression;
        if (Status e = readRequiredString(*cel, "expression", expression); !e)
            return e;
        if (Status e = checkExpression(*cel, "expression", expression); !e)
            return e;
        // The API server refuses what does not compile; so do we, with the field's path.
        if (auto compiled = dracel::Expression::compileSelector(expression); !compiled)
            return cel->fieldError("expression", compiled.error().message);
        out.push_back(std::move(expression));
        return Status::Ok();
    });
    if (!s)
        return s;
    if (out.size() > 32)
        return r.fieldError("selectors", "must have at most 32 items");
    return Status::Ok();
}

Result<DeviceConfig> decodeOpaque(const Reader& r) {
    auto opaque = r.requiredObject("opaque");
    if (!opaque)
        return opaque.error();
    if (Status s = opaque->rejectUnknownFields({"driver", "parameters"}); !s)
        return s.error();
    DeviceConfig config;
    if (Status s = readRequiredString(*opaque, "driver", config.driver); !s)
        return s.error();
    if (!opaque->has("parameters"))
        return opaque->fieldError("parameters", "required value");
    config.parameters = opaque->field("parameters").json();
    if (!config.parameters.is_object())
        return opaque->fieldError("parameters", "must be a valid JSON object");
    if (config.parameters.dump().size() > std::size_t{10} * 1024)
        return opaque->fieldError("parameters", "must be at most 10Ki bytes");
    return config;
}

Result<DeviceClass> decodeClass(const Reader& object) {
    DeviceClass deviceClass;
    auto metadata = object.requiredObject("metadata");
    if (!metadata)
        return metadata.error();
    if (Status s = readRequiredString(*metadata, "name", deviceClass.name); !s)
        return s.error();
    if (Status s = readString(*metadata, "creationTimestamp", deviceClass.creationTimestamp); !s)
        return s.error();
    auto spec = object.optionalObject("spec");
    if (!spec)
        return spec.error();
    if (!*spec)
        return deviceClass;
    const Reader& r = **spec;
    if (Status s = r.rejectUnknownFields({"selectors", "config", "extendedResourceName"}); !s)
        return s.error();
    if (Status s = decodeSelectors(r, deviceClass.selectors); !s)
        return s.error();
    Status config = r.each("config", [&](const Reader& item) -> Status {
        if (Status s = item.rejectUnknownFields({"opaque"}); !s)
            return s;
        auto opaque = decodeOpaque(item);
        if (!opaque)
            return opaque.error();
        deviceClass.config.push_back(std::move(*opaque));
        return Status::Ok();
    });
    if (!config)
        return config.error();
    if (deviceClass.config.size() > 32)
        return r.fieldError("config", "must have at most 32 items");
    if (Status s = readString(r, "extendedResourceName", deviceClass.extendedResourceName); !s)
        return s.error();
    if (r.has("extendedResourceName") && !isExtendedResourceName(deviceClass.extendedResourceName))
        return r.fieldError("extendedResourceName",
                            "\"" + deviceClass.extendedResourceName +
                                "\" is not a valid extended resource name: a domain outside "
                                "kubernetes.io, a slash and a name (e.g. example.com/gpu)");
    return deviceClass;
}

// --- ResourceClaim --------------------------------------------------------------------------

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
            if (Status e = checkTaintEffect(item, toleration.effect); !e)
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
        if (Status e = checkFullyQualifiedName(item, "name", attribute.name); !e)
            return e;
        if (!derivedNames.insert(attribute.name).second)
            return item.fieldError("name",
                                   "duplicate derived attribute \"" + attribute.name + "\"");
        if (Status e = readRequiredString(item, "expression", attribute.expression); !e)
            return e;
        if (Status e = checkExpression(item, "expression", attribute.expression); !e)
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

// --- Pod and Node ---------------------------------------------------------------------------

Result<std::vector<Container>> decodeContainers(const Reader& spec, std::string_view field) {
    std::vector<Container> containers;
    Status s = spec.each(field, [&](const Reader& item) -> Status {
        Container container;
        if (Status e = readRequiredString(item, "name", container.name); !e)
            return e;
        auto resources = item.optionalObject("resources");
        if (!resources)
            return resources.error();
        if (*resources) {
            // The API server defaults a request from its limit; an extended resource is often
            // given as a limit only.
            for (const char* part : {"requests", "limits"}) {
                Status e =
                    (*resources)->eachEntry(part, [&](const std::string& key, const Reader& v) {
                        auto quantity = asQuantity(v);
                        if (!quantity)
                            return Status(quantity.error());
                        bool known =
                            std::any_of(container.requests.begin(), container.requests.end(),
                                        [&](const auto& entry) { return entry.first == key; });
                        if (!known)
                            container.requests.emplace_back(key, std::move(*quantity));
                        return Status::Ok();
                    });
                if (!e)
                    return e;
            }
        }
        std::sort(container.requests.begin(), container.requests.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
        if (*resources) {
            Status e = (*resources)->each("claims", [&](const Reader& claim) -> Status {
                std::string name;
                if (Status n = readRequiredString(claim, "name", name); !n)
                    return n;
                container.claims.push_back(std::move(name));
                return Status::Ok();
            });
            if (!e)
                return e;
        }
        std::string restartPolicy;
        if (Status e = readString(item, "restartPolicy", restartPolicy); !e)
            return e;
        container.restartable = restartPolicy == "Always";
        containers.push_back(std::move(container));
        return Status::Ok();
    });
    if (!s)
        return s.error();
    return containers;
}

Status readResourceList(const Reader& r, std::string_view name, ResourceList& out) {
    return r.eachEntry(name, [&](const std::string& key, const Reader& v) -> Status {
        auto quantity = asQuantity(v);
        if (!quantity)
            return quantity.error();
        out.insert_or_assign(key, std::move(*quantity));
        return Status::Ok();
    });
}

// status.nodeAllocatableResourceClaimStatuses: what the scheduler counted for a bound pod.
Status decodeNodeAllocatableStatuses(const Reader& status, Pod& pod) {
    return status.each("nodeAllocatableResourceClaimStatuses", [&](const Reader& item) -> Status {
        NodeAllocatableClaimStatus entry;
        if (Status s = readRequiredString(item, "resourceClaimName", entry.resourceClaimName); !s)
            return s;
        if (Status s = readStrings(item, "containers", entry.containers, SIZE_MAX); !s)
            return s;
        Status mapping = item.each("mapping", [&](const Reader& m) -> Status {
            std::string name;
            if (Status n = readRequiredString(m, "name", name); !n)
                return n;
            std::optional<Quantity> quantity;
            if (Status q = readQuantity(m, "quantity", quantity); !q)
                return q;
            if (quantity)
                entry.mapping.insert_or_assign(name, std::move(*quantity));
            return Status::Ok();
        });
        if (!mapping)
            return mapping;
        Status overhead = item.each("overhead", [&](const Reader& o) -> Status {
            std::string name;
            if (Status n = readRequiredString(o, "name", name); !n)
                return n;
            NodeAllocatableClaimStatus::Overhead value;
            if (Status q = readQuantity(o, "perPod", value.perPod); !q)
                return q;
            if (Status q = readQuantity(o, "perContainer", value.perContainer); !q)
                return q;
            entry.overhead.insert_or_assign(name, std::move(value));
            return Status::Ok();
        });
        if (!overhead)
            return overhead;
        pod.nodeAllocatableStatuses.push_back(std::move(entry));
        return Status::Ok();
    });
}

Result<Pod> decodePod(const Reader& object) {
    Pod pod;
    auto metadata = object.requiredObject("metadata");
    if (!metadata)
        return metadata.error();
    if (Status s = readRequiredString(*metadata, "name", pod.name); !s)
        return s.error();
    if (Status s = readString(*metadata, "namespace", pod.namespace_); !s)
        return s.error();
    if (Status s = readString(*metadata, "uid", pod.uid); !s)
        return s.error();
    auto spec = object.requiredObject("spec");
    if (!spec)
        return spec.error();
    if (Status s = readString(*spec, "nodeName", pod.nodeName); !s)
        return s.error();
    if (Status s = readResourceList(*spec, "overhead", pod.overhead); !s)
        return s.error();
    auto podResources = spec->optionalObject("resources");
    if (!podResources)
        return podResources.error();
    if (*podResources) {
        if (Status s = readResourceList(**podResources, "requests", pod.podLevelRequests); !s)
            return s.error();
    }
    auto status = object.optionalObject("status");
    if (!status)
        return status.error();
    if (*status) {
        if (Status s = decodeNodeAllocatableStatuses(**status, pod); !s)
            return s.error();
    }
    auto init = decodeContainers(*spec, "initContainers");
    if (!init)
        return init.error();
    pod.initContainers = std::move(*init);
    auto containers = decodeContainers(*spec, "containers");
    if (!containers)
        return containers.error();
    pod.containers = std::move(*containers);
    Status claims = spec->each("resourceClaims", [&](const Reader& item) -> Status {
        PodClaim claim;
        if (Status e = readRequiredString(item, "name", claim.name); !e)
            return e;
        auto claimName = item.optionalString("resourceClaimName");
        if (!claimName)
            return claimName.error();
        auto templateName = item.optionalString("resourceClaimTemplateName");
        if (!templateName)
            return templateName.error();
        if (claimName->has_value() == templateName->has_value())
            return item.error(
                "exactly one of resourceClaimName and resourceClaimTemplateName "
                "must be set");
        claim.resourceClaimName = *claimName;
        claim.resourceClaimTemplateName = *templateName;
        pod.resourceClaims.push_back(std::move(claim));
        return Status::Ok();
    });
    if (!claims)
        return claims.error();
    return pod;
}

Result<Node> decodeNode(const Reader& object) {
    Node node;
    auto metadata = object.requiredObject("metadata");
    if (!metadata)
        return metadata.error();
    if (Status s = readRequiredString(*metadata, "name", node.name); !s)
        return s.error();
    auto labels = metadata->stringMap("labels");
    if (!labels)
        return labels.error();
    for (auto& [key, value] : *labels)
        node.labels.emplace(key, value);
    auto status = object.optionalObject("status");
    if (!status)
        return status.error();
    if (*status) {
        if (Status s = readStrings(**status, "declaredFeatures", node.declaredFeatures, SIZE_MAX);
            !s)
            return s.error();
        if ((*status)->has("allocatable")) {
            ResourceList allocatable;
            if (Status s = readResourceList(**status, "allocatable", allocatable); !s)
                return s.error();
            node.allocatable = std::move(allocatable);
        }
    }
    return node;
}

bool isResourceApi(const std::string& apiVersion) {
    return apiVersion == "resource.k8s.io/v1" || apiVersion == "resource.k8s.io/v1beta2";
}

}  // namespace

// Whether a constraint of the claim names `attribute` and targets request `request` ("req" or
// "req/sub"; a constraint on "req" targets its subrequests, one without requests every request).
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

// The API server refuses a derived attribute no constraint of its request uses.
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
    Status constraints = r.each("constraints", [&](const Reader& item) -> Status {
        if (Status u =
                item.rejectUnknownFields({"requests", "matchAttribute", "distinctAttribute"});
            !u)
            return u;
        Constraint constraint;
        if (Status e = readStrings(item, "requests", constraint.requests, kMaxResults); !e)
            return e;
        if (Status e = rejectDuplicates(item, "requests", constraint.requests); !e)
            return e;
        for (const std::string& name : constraint.requests)
            if (!knownRequest(name))
                return item.fieldError("requests",
                                       "\"" + name + "\" is not a request of the claim");
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
            if (Status e = checkFullyQualifiedName(item, "matchAttribute", **match); !e)
                return e;
        if (distinct->has_value())
            if (Status e = checkFullyQualifiedName(item, "distinctAttribute", **distinct); !e)
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
    if (Status s = checkDerivedAttributesUsed(r, claim); !s)
        return s.error();
    Status config = r.each("config", [&](const Reader& item) -> Status {
        if (Status u = item.rejectUnknownFields({"requests", "opaque"}); !u)
            return u;
        ClaimConfig entry;
        if (Status e = readStrings(item, "requests", entry.requests, kMaxResults); !e)
            return e;
        if (Status e = rejectDuplicates(item, "requests", entry.requests); !e)
            return e;
        for (const std::string& name : entry.requests)
            if (!knownRequest(name))
                return item.fieldError("requests",
                                       "\"" + name + "\" is not a request of the claim");
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

Result<Inputs> decode(const std::vector<documents::Object>& objects) {
    Inputs inputs;
    std::map<std::string, std::string> classSources;  // name -> where it was first given
    for (const documents::Object& object : objects) {
        const Reader r(object);
        const std::string kind = object.kind();
        const std::string apiVersion = object.apiVersion();
        const bool resource = isResourceApi(apiVersion);
        if (kind == "ResourceSlice" && resource) {
            auto slice = decodeSlice(r);
            if (!slice)
                return slice.error();
            inputs.slices.push_back(std::move(*slice));
        } else if (kind == "DeviceClass" && resource) {
            auto deviceClass = decodeClass(r);
            if (!deviceClass)
                return deviceClass.error();
            const auto [first, added] =
                classSources.emplace(deviceClass->name, object.source.describe());
            if (!added)
                return r.error("DeviceClass " + deviceClass->name + " is given twice (also in " +
                               first->second + ")");
            inputs.classes.push_back(std::move(*deviceClass));
        } else if ((kind == "ResourceClaim" || kind == "ResourceClaimTemplate") && resource) {
            const bool fromTemplate = kind == "ResourceClaimTemplate";
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
            inputs.order.emplace_back(Inputs::ClaimRef{inputs.claims.size()});
            inputs.claims.push_back({std::move(*claim), object.json, object.source, fromTemplate,
                                     std::move(reservedForPods)});
        } else if (kind == "Pod" && apiVersion == "v1") {
            auto pod = decodePod(r);
            if (!pod)
                return pod.error();
            inputs.order.emplace_back(Inputs::PodRef{inputs.pods.size()});
            inputs.pods.push_back({std::move(*pod), object.json, object.source});
        } else if (kind == "Node" && apiVersion == "v1") {
            auto node = decodeNode(r);
            if (!node)
                return node.error();
            inputs.nodes.push_back(std::move(*node));
        } else {
            return Error{object.source.describe() + ": unsupported object: apiVersion \"" +
                         apiVersion + "\", kind \"" + kind +
                         "\" (expected resource.k8s.io/v1 ResourceSlice, DeviceClass, "
                         "ResourceClaim or ResourceClaimTemplate, or v1 Pod or Node)"};
        }
    }
    return inputs;
}

// --- encoding -------------------------------------------------------------------------------

namespace {

Json encodeRequirements(const std::vector<NodeSelectorRequirement>& requirements) {
    Json out = Json::array();
    for (const NodeSelectorRequirement& requirement : requirements) {
        Json entry = {{"key", requirement.key}, {"operator", requirement.op}};
        if (!requirement.values.empty())
            entry["values"] = requirement.values;
        out.push_back(std::move(entry));
    }
    return out;
}

Json encodeTolerations(const std::vector<Toleration>& tolerations) {
    Json out = Json::array();
    for (const Toleration& toleration : tolerations) {
        Json entry = Json::object();
        if (!toleration.key.empty())
            entry["key"] = toleration.key;
        if (!toleration.op.empty())
            entry["operator"] = toleration.op;
        if (!toleration.value.empty())
            entry["value"] = toleration.value;
        if (!toleration.effect.empty())
            entry["effect"] = toleration.effect;
        if (toleration.tolerationSeconds)
            entry["tolerationSeconds"] = *toleration.tolerationSeconds;
        out.push_back(std::move(entry));
    }
    return out;
}

}  // namespace

Json encodeNodeSelector(const NodeSelector& selector) {
    Json terms = Json::array();
    for (const NodeSelectorTerm& term : selector.terms) {
        Json entry = Json::object();
        if (!term.matchExpressions.empty())
            entry["matchExpressions"] = encodeRequirements(term.matchExpressions);
        if (!term.matchFields.empty())
            entry["matchFields"] = encodeRequirements(term.matchFields);
        terms.push_back(std::move(entry));
    }
    return {{"nodeSelectorTerms", terms}};
}

Json encodeAllocation(const Allocation& allocation) {
    Json results = Json::array();
    for (const DeviceResult& result : allocation.results) {
        Json entry = {{"request", result.request},
                      {"driver", result.driver},
                      {"pool", result.pool},
                      {"device", result.device}};
        if (result.adminAccess)
            entry["adminAccess"] = true;
        if (!result.tolerations.empty())
            entry["tolerations"] = encodeTolerations(result.tolerations);
        if (!result.bindingConditions.empty())
            entry["bindingConditions"] = result.bindingConditions;
        if (!result.bindingFailureConditions.empty())
            entry["bindingFailureConditions"] = result.bindingFailureConditions;
        if (result.shareID)
            entry["shareID"] = *result.shareID;
        if (!result.consumedCapacity.empty()) {
            Json consumed = Json::object();
            for (const auto& [name, amount] : result.consumedCapacity)
                consumed[name] = amount.toString();
            entry["consumedCapacity"] = std::move(consumed);
        }
        if (!result.skipNodeOperations.empty())
            entry["skipNodeOperations"] = result.skipNodeOperations;
        results.push_back(std::move(entry));
    }
    Json devices = {{"results", results}};
    if (!allocation.config.empty()) {
        Json config = Json::array();
        for (const AllocatedConfig& entry : allocation.config) {
            Json item = {{"source", entry.source}};
            if (!entry.requests.empty())
                item["requests"] = entry.requests;
            item["opaque"] = {{"driver", entry.opaque.driver},
                              {"parameters", entry.opaque.parameters}};
            config.push_back(std::move(item));
        }
        devices["config"] = std::move(config);
    }
    Json out = {{"devices", devices}};
    if (allocation.nodeSelector)
        out["nodeSelector"] = encodeNodeSelector(*allocation.nodeSelector);
    return out;
}

}  // namespace numadra::allocator
