#include "numadra/api/slice_writer.hpp"

#include "slice_events.hpp"
#include "text_writers.hpp"

namespace numadra::api {

namespace {

// Runs `write` on a buffer in front of `target` (a string or a stream), then hands over the rest.
template <class Target, class Write>
void writeTo(Target& target, Write write) {
    detail::TextOutput text(target);
    write(text);
    text.flush();
}

void writeJsonList(detail::TextOutput& out, const std::vector<ResourceSlice>& slices,
                   JsonLayout layout) {
    detail::JsonWriter writer(out, layout);
    detail::writeList(writer, slices);
}

void writeYaml(detail::TextOutput& out, const ResourceSlice& slice) {
    detail::YamlWriter writer(out);
    detail::writeSlice(writer, slice);
}

void writeYamlStream(detail::TextOutput& out, const std::vector<ResourceSlice>& slices) {
    for (const auto& slice : slices) {
        out.append("---\n");
        writeYaml(out, slice);
    }
}

}  // namespace

void appendJson(std::string& out, const ResourceSlice& slice, JsonLayout layout,
                std::string_view resourceVersion) {
    writeTo(out, [&](detail::TextOutput& text) {
        detail::JsonWriter writer(text, layout);
        detail::writeSlice(writer, slice, resourceVersion);
    });
}

void appendJsonList(std::string& out, const std::vector<ResourceSlice>& slices, JsonLayout layout) {
    writeTo(out, [&](detail::TextOutput& text) { writeJsonList(text, slices, layout); });
}

void appendYaml(std::string& out, const ResourceSlice& slice) {
    writeTo(out, [&](detail::TextOutput& text) { writeYaml(text, slice); });
}

void appendYamlStream(std::string& out, const std::vector<ResourceSlice>& slices) {
    writeTo(out, [&](detail::TextOutput& text) { writeYamlStream(text, slices); });
}

void writeJsonList(std::ostream& out, const std::vector<ResourceSlice>& slices, JsonLayout layout) {
    writeTo(out, [&](detail::TextOutput& text) { writeJsonList(text, slices, layout); });
}

void writeYamlStream(std::ostream& out, const std::vector<ResourceSlice>& slices) {
    writeTo(out, [&](detail::TextOutput& text) { writeYamlStream(text, slices); });
}

}  // namespace numadra::api
