// Node selectors, as slices, devices (perDeviceNodeSelection) and claim allocations give them.

#include <set>

#include "decode_support.hpp"
#include "validation.hpp"

namespace numadra::allocator::decoding {

namespace {

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
        if (Status s = validation::checkNodeSelectorRequirement(item, requirement, fields); !s)
            return s;
        out.push_back(std::move(requirement));
        return Status::Ok();
    });
}

}  // namespace

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

}  // namespace numadra::allocator::decoding
