#include "numadra/documents/reader.hpp"

#include <cmath>
#include <limits>

namespace numadra::documents {

namespace {

const Json& nullJson() {
    static const Json kNull;
    return kNull;
}

constexpr std::size_t kShownStringLength = 60;

std::string formatDouble(double value) {
    if (std::isnan(value))
        return "NaN";
    if (std::isinf(value))
        return value > 0 ? "+Inf" : "-Inf";
    return Json(value).dump();
}

}  // namespace

std::string describeValue(const Json& value) {
    switch (value.type()) {
        case Json::value_t::null:
            return "null";
        case Json::value_t::boolean:
            return value.get<bool>() ? "boolean true" : "boolean false";
        case Json::value_t::number_integer:
        case Json::value_t::number_unsigned:
            return "integer " + value.dump();
        case Json::value_t::number_float:
            return "number " + formatDouble(value.get<double>());
        case Json::value_t::string: {
            const auto& s = value.get_ref<const std::string&>();
            if (s.size() <= kShownStringLength)
                return "string " + value.dump(-1, ' ', false, Json::error_handler_t::replace);
            std::string shown = s.substr(0, kShownStringLength);
            // Do not end inside a UTF-8 sequence.
            while (!shown.empty() && (static_cast<unsigned char>(shown.back()) & 0xC0) == 0x80)
                shown.pop_back();
            if (!shown.empty() && (static_cast<unsigned char>(shown.back()) & 0x80) != 0)
                shown.pop_back();
            std::string quoted = Json(shown).dump(-1, ' ', false, Json::error_handler_t::replace);
            quoted.insert(quoted.size() - 1, "...");
            return "string " + quoted;
        }
        case Json::value_t::object:
            return "object";
        case Json::value_t::array:
            return "array";
        default:
            return "value";
    }
}

// ---- FieldPath ----

FieldPath FieldPath::field(std::string_view name) const {
    FieldPath out(*this);
    if (!out.text_.empty())
        out.text_ += '.';
    out.text_ += name;
    return out;
}

FieldPath FieldPath::index(std::size_t i) const {
    FieldPath out(*this);
    out.text_ += '[' + std::to_string(i) + ']';
    return out;
}

FieldPath FieldPath::key(std::string_view mapKey) const {
    FieldPath out(*this);
    out.text_ += '[';
    out.text_ += mapKey;
    out.text_ += ']';
    return out;
}

// ---- Reader ----

Reader::Reader(const Json& json, Source source, FieldPath path)
    : json_(&json), source_(std::move(source)), path_(std::move(path)) {}

Reader Reader::child(const Json& json, FieldPath path) const {
    return Reader(json, source_, std::move(path));
}

Error Reader::error(std::string_view message) const {
    std::string out = source_.describe() + ": ";
    if (!path_.empty())
        out += path_.str() + ": ";
    out += message;
    return Error{std::move(out)};
}

Error Reader::fieldError(std::string_view name, std::string_view message) const {
    return child(nullJson(), path_.field(name)).error(message);
}

bool Reader::has(std::string_view name) const {
    return !field(name).isNull();
}

Reader Reader::field(std::string_view name) const {
    if (json_->is_object()) {
        const auto it = json_->find(name);
        if (it != json_->end())
            return child(*it, path_.field(name));
    }
    return child(nullJson(), path_.field(name));
}

Status Reader::expectObjectOrNull() const {
    if (json_->is_object() || json_->is_null())
        return {};
    return error("expected an object, got " + describeValue(*json_));
}

Status Reader::expectObject() const {
    if (json_->is_object())
        return {};
    return error("expected an object, got " + describeValue(*json_));
}

Status Reader::expectArray() const {
    if (json_->is_array())
        return {};
    return error("expected an array, got " + describeValue(*json_));
}

Result<std::string> Reader::asString() const {
    if (json_->is_string())
        return json_->get<std::string>();
    return error("expected a string, got " + describeValue(*json_));
}

Result<std::int64_t> Reader::asInt() const {
    if (json_->is_number_unsigned()) {
        const auto value = json_->get<std::uint64_t>();
        if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return error("integer " + json_->dump() + " is out of range");
        return static_cast<std::int64_t>(value);
    }
    if (json_->is_number_integer())
        return json_->get<std::int64_t>();
    if (json_->is_number_float()) {
        const double value = json_->get<double>();
        // [-2^63, 2^63) with no fractional part: kubectl's YAML-to-JSON makes it an integer.
        if (std::isfinite(value) && value == std::trunc(value)) {
            if (value >= -9223372036854775808.0 && value < 9223372036854775808.0)
                return static_cast<std::int64_t>(value);
            return error(describeValue(*json_) + " is out of range for an integer");
        }
    }
    return error("expected an integer, got " + describeValue(*json_));
}

Result<double> Reader::asNumber() const {
    if (json_->is_number())
        return json_->get<double>();
    return error("expected a number, got " + describeValue(*json_));
}

Result<bool> Reader::asBool() const {
    if (json_->is_boolean())
        return json_->get<bool>();
    return error("expected a boolean, got " + describeValue(*json_));
}

namespace {

// The field's value through `convert`, nullopt when absent or null.
template <class T, class Convert>
Result<std::optional<T>> optionalField(const Reader& reader, std::string_view name,
                                       const Status& parentOk, Convert convert) {
    if (!parentOk)
        return parentOk.error();
    const Reader value = reader.field(name);
    if (value.isNull())
        return std::optional<T>();
    auto converted = convert(value);
    if (!converted)
        return converted.error();
    return std::optional<T>(std::move(converted).value());
}

template <class T>
Result<T> required(const Reader& reader, std::string_view name, Result<std::optional<T>> value) {
    if (!value)
        return value.error();
    if (!value->has_value())
        return reader.fieldError(name, "required field is missing");
    return std::move(**value);
}

}  // namespace

Result<std::optional<std::string>> Reader::optionalString(std::string_view name) const {
    return optionalField<std::string>(*this, name, expectObjectOrNull(),
                                      [](const Reader& r) { return r.asString(); });
}

Result<std::string> Reader::requiredString(std::string_view name) const {
    return required(*this, name, optionalString(name));
}

Result<std::optional<std::int64_t>> Reader::optionalInt(std::string_view name) const {
    return optionalField<std::int64_t>(*this, name, expectObjectOrNull(),
                                       [](const Reader& r) { return r.asInt(); });
}

Result<std::int64_t> Reader::requiredInt(std::string_view name) const {
    return required(*this, name, optionalInt(name));
}

Result<std::optional<double>> Reader::optionalNumber(std::string_view name) const {
    return optionalField<double>(*this, name, expectObjectOrNull(),
                                 [](const Reader& r) { return r.asNumber(); });
}

Result<std::optional<bool>> Reader::optionalBool(std::string_view name) const {
    return optionalField<bool>(*this, name, expectObjectOrNull(),
                               [](const Reader& r) { return r.asBool(); });
}

Result<std::optional<Reader>> Reader::optionalObject(std::string_view name) const {
    return optionalField<Reader>(*this, name, expectObjectOrNull(),
                                 [](const Reader& r) -> Result<Reader> {
                                     if (Status ok = r.expectObject(); !ok)
                                         return ok.error();
                                     return r;
                                 });
}

Result<Reader> Reader::requiredObject(std::string_view name) const {
    return required(*this, name, optionalObject(name));
}

Result<std::optional<Reader>> Reader::optionalArray(std::string_view name) const {
    return optionalField<Reader>(*this, name, expectObjectOrNull(),
                                 [](const Reader& r) -> Result<Reader> {
                                     if (Status ok = r.expectArray(); !ok)
                                         return ok.error();
                                     return r;
                                 });
}

Result<std::vector<std::string>> Reader::stringArray(std::string_view name) const {
    std::vector<std::string> out;
    Status status = each(name, [&out](const Reader& item) -> Status {
        auto value = item.asString();
        if (!value)
            return value.error();
        out.push_back(std::move(value).value());
        return {};
    });
    if (!status)
        return status.error();
    return out;
}

Result<std::vector<std::pair<std::string, std::string>>> Reader::stringMap(
    std::string_view name) const {
    std::vector<std::pair<std::string, std::string>> out;
    Status status = eachEntry(name, [&out](const std::string& key, const Reader& value) -> Status {
        auto text = value.asString();
        if (!text)
            return text.error();
        out.emplace_back(key, std::move(text).value());
        return {};
    });
    if (!status)
        return status.error();
    return out;
}

Status Reader::each(const std::function<Status(const Reader& item)>& fn) const {
    if (json_->is_null())
        return {};
    if (Status ok = expectArray(); !ok)
        return ok;
    for (std::size_t i = 0; i < json_->size(); ++i) {
        if (Status status = fn(child((*json_)[i], path_.index(i))); !status)
            return status;
    }
    return {};
}

Status Reader::each(std::string_view name,
                    const std::function<Status(const Reader& item)>& fn) const {
    if (Status ok = expectObjectOrNull(); !ok)
        return ok;
    return field(name).each(fn);
}

Result<std::vector<std::string>> Reader::keys() const {
    std::vector<std::string> out;
    if (json_->is_null())
        return out;
    if (Status ok = expectObject(); !ok)
        return ok.error();
    for (auto it = json_->begin(); it != json_->end(); ++it)
        out.push_back(it.key());
    return out;
}

Status Reader::eachEntry(
    const std::function<Status(const std::string& key, const Reader& value)>& fn) const {
    if (json_->is_null())
        return {};
    if (Status ok = expectObject(); !ok)
        return ok;
    for (auto it = json_->begin(); it != json_->end(); ++it) {
        if (Status status = fn(it.key(), child(it.value(), path_.key(it.key()))); !status)
            return status;
    }
    return {};
}

Status Reader::eachEntry(
    std::string_view name,
    const std::function<Status(const std::string& key, const Reader& value)>& fn) const {
    if (Status ok = expectObjectOrNull(); !ok)
        return ok;
    return field(name).eachEntry(fn);
}

std::size_t Reader::size() const {
    return json_->is_array() || json_->is_object() ? json_->size() : 0;
}

Reader Reader::item(std::size_t i) const {
    if (json_->is_array() && i < json_->size())
        return child((*json_)[i], path_.index(i));
    return child(nullJson(), path_.index(i));
}

Status Reader::rejectUnknownFields(std::initializer_list<std::string_view> known) const {
    return rejectUnknownFields(std::vector<std::string_view>(known));
}

Status Reader::rejectUnknownFields(const std::vector<std::string_view>& known) const {
    if (Status ok = expectObjectOrNull(); !ok)
        return ok;
    if (json_->is_null())
        return {};
    std::vector<std::string> unknown;
    for (auto it = json_->begin(); it != json_->end(); ++it) {
        bool found = false;
        for (std::string_view name : known)
            found = found || name == it.key();
        if (!found)
            unknown.push_back(Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace));
    }
    if (unknown.empty())
        return {};
    std::string message = unknown.size() == 1 ? "unknown field " : "unknown fields ";
    for (std::size_t i = 0; i < unknown.size(); ++i)
        message += (i == 0 ? "" : ", ") + unknown[i];
    return error(message);
}

}  // namespace numadra::documents
