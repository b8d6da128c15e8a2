// Reading one field of an input object as the API types it: strings, bools, lists, quantities,
// resource lists; an absent optional field gets the API's default.

#include "decode_support.hpp"
#include "validation.hpp"

namespace numadra::allocator::decoding {

Status readString(const Reader& r, std::string_view name, std::string& out) {
    auto value = r.optionalString(name);
    if (!value)
        return value.error();
    if (*value)
        out = **value;
    return Status::Ok();
}

Result<Reader> readMetadata(const Reader& object, std::string& name) {
    auto metadata = object.requiredObject("metadata");
    if (!metadata)
        return metadata.error();
    if (Status s = readRequiredString(*metadata, "name", name); !s)
        return s.error();
    return metadata;
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

Status readResourceList(const Reader& r, std::string_view name, ResourceList& out) {
    return r.eachEntry(name, [&](const std::string& key, const Reader& v) -> Status {
        auto quantity = asQuantity(v);
        if (!quantity)
            return quantity.error();
        out.insert_or_assign(key, std::move(*quantity));
        return Status::Ok();
    });
}

Status readSkipNodeOperations(const Reader& r, std::vector<std::string>& out) {
    if (Status s = readStrings(r, "skipNodeOperations", out, SIZE_MAX); !s)
        return s;
    return validation::checkSkipNodeOperations(r, out);
}

}  // namespace numadra::allocator::decoding
