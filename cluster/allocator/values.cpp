// Attribute values as matchAttribute and distinctAttribute compare them (KEP-5491 list
// semantics: a scalar is a one-element list; values of different types never match).

#include <algorithm>

#include "internal.hpp"

namespace numadra::allocator::detail {

namespace {

template <class T>
void appendAll(ValueSet& out, const std::vector<T>& items) {
    for (const auto& item : items) {
        if constexpr (std::is_same_v<T, api::Version>)
            out.emplace_back(VersionText{item.text});
        else
            out.emplace_back(item);
    }
}

std::string describeScalar(const Scalar& scalar) {
    return std::visit(
        [](const auto& value) -> std::string {
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<T, bool>)
                return value ? "true" : "false";
            else if constexpr (std::is_same_v<T, std::int64_t>)
                return std::to_string(value);
            else if constexpr (std::is_same_v<T, std::string>)
                return "\"" + value + "\"";
            else
                return value.text;
        },
        scalar);
}

}  // namespace

ValueSet toValueSet(const AttributeValue& value) {
    ValueSet set;
    std::visit(
        [&](const auto& item) {
            using T = std::decay_t<decltype(item)>;
            if constexpr (std::is_same_v<T, api::Version>)
                set.emplace_back(VersionText{item.text});
            else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::int64_t> ||
                               std::is_same_v<T, std::string>)
                set.emplace_back(item);
            else
                appendAll(set, item);
        },
        value);
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    return set;
}

bool intersects(const ValueSet& a, const ValueSet& b) {
    auto i = a.begin();
    auto j = b.begin();
    while (i != a.end() && j != b.end()) {
        if (*i < *j)
            ++i;
        else if (*j < *i)
            ++j;
        else
            return true;
    }
    return false;
}

ValueSet intersection(const ValueSet& a, const ValueSet& b) {
    ValueSet out;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out;
}

std::string describe(const ValueSet& values) {
    if (values.size() == 1)
        return describeScalar(values.front());
    std::string out = "[";
    for (size_t i = 0; i < values.size(); ++i)
        out += (i ? ", " : "") + describeScalar(values[i]);
    return out + "]";
}

const AttributeValue* findAttribute(const Device& device, const std::string& driver,
                                    const std::string& qualifiedName) {
    auto exact = device.attributes.find(qualifiedName);
    if (exact != device.attributes.end())
        return &exact->second;
    auto slash = qualifiedName.find('/');
    if (slash == std::string::npos || qualifiedName.compare(0, slash, driver) != 0 ||
        slash != driver.size())
        return nullptr;
    auto bare = device.attributes.find(qualifiedName.substr(slash + 1));
    return bare == device.attributes.end() ? nullptr : &bare->second;
}

}  // namespace numadra::allocator::detail
