#include "numadra/api/resource_slice.hpp"

#include "slice_events.hpp"

namespace numadra::api {

bool isListAttribute(const AttributeValue& value) {
    return value.index() >= 4;
}

size_t attributeValueCount(const AttributeValue& value) {
    return std::visit(
        [](const auto& v) -> size_t {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::vector<bool>> ||
                          std::is_same_v<T, std::vector<std::int64_t>> ||
                          std::is_same_v<T, std::vector<std::string>> ||
                          std::is_same_v<T, std::vector<Version>>) {
                return v.size();
            } else {
                return 1;
            }
        },
        value);
}

bool Device::usesAdvancedFeatures() const {
    if (!taints.empty() || !consumesCounters.empty())
        return true;
    for (const auto& [key, value] : attributes) {
        if (isListAttribute(value))
            return true;
    }
    return false;
}

namespace {

// Builds the Json DOM from the encoder's events (slice_events.hpp), so the DOM and the text
// writers cannot disagree on a field.
class DomWriter {
  public:
    void beginObject() { open(Json::object()); }
    void endObject() { open_.pop_back(); }
    void beginArray() { open(Json::array()); }
    void endArray() { open_.pop_back(); }
    void key(std::string_view name) { key_ = name; }
    void stringValue(std::string_view text) { place(Json(text)); }
    void intValue(std::int64_t value) { place(Json(value)); }
    void boolValue(bool value) { place(Json(value)); }

    Json take() { return std::move(root_); }

  private:
    Json& place(Json value) {
        if (open_.empty()) {
            root_ = std::move(value);
            return root_;
        }
        Json& parent = *open_.back();
        if (parent.is_array()) {
            parent.push_back(std::move(value));
            return parent.back();
        }
        return parent[key_] = std::move(value);
    }
    // Only the innermost container grows, so the pointers to the outer ones stay valid.
    void open(Json container) { open_.push_back(&place(std::move(container))); }

    Json root_;
    std::vector<Json*> open_;
    std::string key_;
};

template <class Value, class Write>
Json toDom(const Value& value, Write write) {
    DomWriter writer;
    write(writer, value);
    return writer.take();
}

}  // namespace

Json toJson(const AttributeValue& value) {
    return toDom(value, detail::writeAttribute<DomWriter>);
}

Json toJson(const CapacityRequestPolicy& policy) {
    return toDom(policy, detail::writePolicy<DomWriter>);
}

Json toJson(const Device& device) {
    return toDom(device, detail::writeDevice<DomWriter>);
}

Json toJson(const ResourceSlice& slice) {
    DomWriter writer;
    detail::writeSlice(writer, slice);
    return writer.take();
}

Json toJsonList(const std::vector<ResourceSlice>& slices) {
    return toDom(slices, detail::writeList<DomWriter>);
}

}  // namespace numadra::api
