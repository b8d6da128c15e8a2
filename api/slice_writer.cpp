#include "numadra/api/slice_writer.hpp"

#include "slice_events.hpp"
#include "text_writers.hpp"

namespace numadra::api {

namespace {

void writeJsonList(detail::TextOutput& out, const std::vector<ResourceSlice>& slices,
                   JsonLayout layout) {
    detail::JsonWriter writer(out, layout);
    detail::writeList(writer, slices);
}

void writeYamlStream(detail::TextOutput& out, const std::vector<ResourceSlice>& slices) {
    for (const auto& slice : slices) {
        out.append("---\n");
        detail::YamlWriter writer(out);
        detail::writeSlice(writer, slice);
    }
}

}  // namespace

void appendJson(std::string& out, const ResourceSlice& slice, JsonLayout layout,
                std::string_view resourceVersion) {
    detail::TextOutput text(out);
    detail::JsonWriter writer(text, layout);
    detail::writeSlice(writer, slice, resourceVersion);
}

void appendJsonList(std::string& out, const std::vector<ResourceSlice>& slices, JsonLayout layout) {
    detail::TextOutput text(out);
    writeJsonList(text, slices, layout);
}

void appendYaml(std::string& out, const ResourceSlice& slice) {
    detail::TextOutput text(out);
    detail::YamlWriter writer(text);
    detail::writeSlice(writer, slice);
}

void appendYamlStream(std::string& out, const std::vector<ResourceSlice>& slices) {
    detail::TextOutput text(out);
    writeYamlStream(text, slices);
}

void writeJsonList(std::ostream& out, const std::vector<ResourceSlice>& slices, JsonLayout layout) {
    detail::TextOutput text(out);
    writeJsonList(text, slices, layout);
}

void writeYamlStream(std::ostream& out, const std::vector<ResourceSlice>& slices) {
    detail::TextOutput text(out);
    writeYamlStream(text, slices);
}

}  // namespace numadra::api
