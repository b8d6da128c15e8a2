#include <algorithm>
#include <cerrno>
#include <cstddef>

#include "numadra/common/text.hpp"
#include "readers.hpp"

namespace numadra::discovery::detail {

void Reader::warn(std::string_view relative, std::string message) {
    diagnostics_.push_back(Diagnostic{sysfs_.path(relative), std::move(message)});
}

void Reader::remember(UnannouncedRead::What what, const std::string& relative) {
    if (unannounced_ != nullptr)
        unannounced_->push_back({what, relative, readUnannounced(sysfs_, what, relative)});
}

std::string readUnannounced(const Sysfs& sysfs, UnannouncedRead::What what,
                            const std::string& relative) {
    if (what == UnannouncedRead::What::Listing) {
        std::string names;
        for (const auto& name : sysfs.list(relative))
            names.append(name).push_back('\n');
        return names;
    }
    auto content = sysfs.read(relative);
    if (!content)
        return "unreadable: " + content.error().message;
    if (what == UnannouncedRead::What::FileText)
        return std::move(content).value();
    const auto bytes = parseMemTotal(content.value());
    return bytes ? std::to_string(*bytes) : "no MemTotal";
}

std::optional<std::uint64_t> parseMemTotal(std::string_view meminfo) {
    for (auto line : text::split(text::attributeText(meminfo), '\n')) {
        auto colon = line.find(':');
        if (colon == std::string_view::npos)
            continue;
        // "Node 0 MemTotal" in node meminfo; hwloc looks for "MemTotal:" anywhere.
        auto key = text::splitWhitespace(line.substr(0, colon));
        if (key.empty() || key.back() != "MemTotal")
            continue;
        auto value = text::splitWhitespace(line.substr(colon + 1));
        if (value.size() != 2 || value[1] != "kB")
            return std::nullopt;
        auto kib = text::parseInt(value[0]);
        if (!kib || *kib < 0)
            return std::nullopt;
        return static_cast<std::uint64_t>(*kib) * 1024;
    }
    return std::nullopt;
}

std::optional<std::string> Reader::text(std::string_view relative, bool required) {
    auto content = sysfs_.read(relative);
    if (!content) {
        // A missing optional file is normal (no link files on legacy PCI, no SR-IOV, ...);
        // anything else (EACCES, EIO, ...) is worth a warning.
        if (required || !content.error().is(ErrorKind::NotFound)) {
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

void Reader::moveDiagnosticsToEnd(size_t from, size_t to) {
    std::rotate(diagnostics_.begin() + static_cast<std::ptrdiff_t>(from),
                diagnostics_.begin() + static_cast<std::ptrdiff_t>(to), diagnostics_.end());
}

void Reader::dropDiagnostics(size_t from) {
    diagnostics_.erase(diagnostics_.begin() + static_cast<std::ptrdiff_t>(from),
                       diagnostics_.end());
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
    const auto first = name.find(':');
    if (first == std::string_view::npos)
        return false;
    const auto second = name.find(':', first + 1);
    if (second == std::string_view::npos || name.find(':', second + 1) != std::string_view::npos)
        return false;
    const auto domain = name.substr(0, first);
    const auto bus = name.substr(first + 1, second - first - 1);
    const auto deviceFunction = name.substr(second + 1);
    if (domain.size() < 4 || domain.size() > 8 || !allHex(domain))
        return false;
    if (bus.size() != 2 || !allHex(bus))
        return false;
    return deviceFunction.size() == 4 && allHex(deviceFunction.substr(0, 2)) &&
           deviceFunction[2] == '.' && deviceFunction[3] >= '0' && deviceFunction[3] <= '7';
}

bool isPciRootName(std::string_view name) {
    if (!text::startsWith(name, "pci"))
        return false;
    name.remove_prefix(3);
    const auto colon = name.find(':');
    if (colon == std::string_view::npos || name.find(':', colon + 1) != std::string_view::npos)
        return false;
    const auto domain = name.substr(0, colon);
    const auto bus = name.substr(colon + 1);
    return domain.size() >= 4 && allHex(domain) && bus.size() == 2 && allHex(bus);
}

}  // namespace numadra::discovery::detail
