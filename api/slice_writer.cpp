#include "numadra/api/slice_writer.hpp"

#include "slice_events.hpp"
#include "text_writers.hpp"

namespace numadra::api {

void appendJson(std::string& out, const ResourceSlice& slice, JsonLayout layout,
                std::string_view resourceVersion) {
    detail::JsonWriter writer(out, layout);
    detail::writeSlice(writer, slice, resourceVersion);
}

void appendJsonList(std::string& out, const std::vector<ResourceSlice>& slices, JsonLayout layout) {
    detail::JsonWriter writer(out, layout);
    detail::writeList(writer, slices);
}

void appendYaml(std::string& out, const ResourceSlice& slice) {
    detail::YamlWriter writer(out);
    detail::writeSlice(writer, slice);
}

void appendYamlStream(std::string& out, const std::vector<ResourceSlice>& slices) {
    for (const auto& slice : slices) {
        out += "---\n";
        appendYaml(out, slice);
    }
}

}  // namespace numadra::api
