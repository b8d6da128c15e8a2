#include <cerrno>

#include "numadra/common/text.hpp"
#include "readers.hpp"

namespace numadra::discovery::detail {

void Reader::warn(std::string_view relative, std::string message) {
    diagnostics_.push_back(Diagnostic{sysfs_.path(relative), std::move(message)});
}

std::optional<std::string> Reader::text(std::string_view relative, bool required) {
    auto content = sysfs_.read(relative);
    if (!content) {
        // A missing optional file is normal (no link files on legacy PCI, no SR-IOV, ...);
        // anything else (EACCES, EIO, ...) is worth a warning.
        if (required || content.error().code != ENOENT) {
            diagnostics_.push_back(Diagnostic{sysfs_.path(relative), content.error().message});
        }
        return std::nullopt;
    }
    return std::string(text::attributeText(content.value()));
}

std::optional<std::int64_t> Reader::integer(std::string_view relative, bool required) {
    auto value = text(relative, required);
    if (!value)
        return std::nullopt;
    auto parsed = text::parseInt(*value);
    if (!parsed)
        warn(relative, "not a decimal integer: '" + *value + "'");
    return parsed;
}

std::optional<std::uint64_t> Reader::hexNumber(std::string_view relative, bool required) {
    auto value = text(relative, required);
    if (!value)
        return std::nullopt;
    auto parsed = text::parseHex(*value);
    if (!parsed)
        warn(relative, "not a hexadecimal number: '" + *value + "'");
    return parsed;
}

std::optional<std::vector<int>> Reader::rangeList(std::string_view relative, bool required) {
    auto value = text(relative, required);
    if (!value)
        return std::nullopt;
    auto parsed = text::parseRangeList(*value);
    if (!parsed) {
        warn(relative, parsed.error().message);
        return std::nullopt;
    }
    return std::move(parsed).value();
}

std::optional<std::vector<int>> Reader::cpuMask(std::string_view relative, bool required) {
    auto value = text(relative, required);
    if (!value)
        return std::nullopt;
    auto parsed = text::parseCpuMask(*value);
    if (!parsed) {
        warn(relative, parsed.error().message);
        return std::nullopt;
    }
    return std::move(parsed).value();
}

std::optional<std::vector<int>> Reader::cpuSet(std::string_view listFile,
                                               std::string_view maskFile) {
    if (auto cpus = rangeList(listFile, false))
        return cpus;
    return cpuMask(maskFile, false);
}

namespace {
bool isHex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}
bool allHex(std::string_view s) {
    for (char c : s) {
        if (!isHex(c))
            return false;
    }
    return !s.empty();
}
}  // namespace

bool isPciAddress(std::string_view name) {
    // DDDD[D...]:BB:DD.F
    auto parts = text::split(name, ':');
    if (parts.size() != 3)
        return false;
    if (parts[0].size() < 4 || parts[0].size() > 8 || !allHex(parts[0]))
        return false;
    if (parts[1].size() != 2 || !allHex(parts[1]))
        return false;
    auto deviceFunction = parts[2];
    return deviceFunction.size() == 4 && allHex(deviceFunction.substr(0, 2)) &&
           deviceFunction[2] == '.' && deviceFunction[3] >= '0' && deviceFunction[3] <= '7';
}

bool isPciRootName(std::string_view name) {
    if (!text::startsWith(name, "pci"))
        return false;
    auto parts = text::split(name.substr(3), ':');
    return parts.size() == 2 && parts[0].size() >= 4 && allHex(parts[0]) && parts[1].size() == 2 &&
           allHex(parts[1]);
}

}  // namespace numadra::discovery::detail
