#pragma once
// Parsing of the small text formats the kernel and Kubernetes use.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/result.hpp"

namespace numadra::text {

std::string_view trim(std::string_view s);
// A kernel attribute (sysfs/procfs file) as the text it holds: the bytes before the first NUL,
// surrounding whitespace removed. Some kernels and firmware pad attributes with NULs ("32-63\n\0"
// in an ARM server's nodeN/cpulist); C readers such as hwloc stop at the first NUL, so do we.
std::string_view attributeText(std::string_view raw);
std::vector<std::string_view> splitWhitespace(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char separator);
bool startsWith(std::string_view s, std::string_view prefix);

// The parsers below take a whole attribute: what attributeText() drops is ignored.

// Whole-string decimal integer (surrounding whitespace allowed).
std::optional<std::int64_t> parseInt(std::string_view s);
// Whole-string hexadecimal integer, with or without a 0x prefix.
std::optional<std::uint64_t> parseHex(std::string_view s);
// Leading floating point number ("16.0 GT/s PCIe" -> 16.0); nullopt if none.
std::optional<double> parseLeadingDouble(std::string_view s);

// Kernel range list "0-3,8,10-11" (an empty line is the empty set); sorted, unique result.
Result<std::vector<int>> parseRangeList(std::string_view s);
// Kernel CPU mask "0000,00000000,0000ffff" (32-bit hex words, most significant first).
Result<std::vector<int>> parseCpuMask(std::string_view s);
// The inverse, compressed: {0,1,2,3,8} -> "0-3,8".
std::string formatRangeList(const std::vector<int>& sortedValues);

// Lowercase hex of at least `width` digits, zero-padded (printf "%0*llx").
std::string hex(std::uint64_t value, int width);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
std::string joinInts(const std::vector<int>& values, std::string_view separator);
// The text with every byte that is not part of a valid UTF-8 sequence written as "\xNN", so it
// can go into a protobuf string field (which must be UTF-8) and still show what was read.
std::string escapeInvalidUtf8(std::string_view text);

// The current time as Kubernetes writes metav1.Time: RFC 3339 in UTC, whole seconds
// ("2026-11-25T11:08:48Z").
std::string utcNow();

}  // namespace numadra::text
