#include "numadra/common/text.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <ctime>

namespace numadra::text {

namespace {
// 8x the largest NR_CPUS any architecture configures (x86 MAXSMP: 8192; MAX_NUMNODES is at most
// 1024): a damaged list or mask cannot make every reader loop over millions of ids.
constexpr std::int64_t kMaxCpuOrNodeId = 65535;

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
}  // namespace

std::string_view trim(std::string_view s) {
    while (!s.empty() && isSpace(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && isSpace(s.back()))
        s.remove_suffix(1);
    return s;
}

std::string_view attributeText(std::string_view raw) {
    return trim(raw.substr(0, raw.find('\0')));
}

std::vector<std::string_view> splitWhitespace(std::string_view s) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && isSpace(s[i]))
            ++i;
        size_t start = i;
        while (i < s.size() && !isSpace(s[i]))
            ++i;
        if (i > start)
            out.push_back(s.substr(start, i - start));
    }
    return out;
}

std::vector<std::string_view> split(std::string_view s, char separator) {
    std::vector<std::string_view> out;
    size_t start = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
        if (i == s.size() || s[i] == separator) {
            out.push_back(s.substr(start, i - start));
            start = i + 1;
        }
    }
    return out;
}

bool startsWith(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

std::optional<std::int64_t> parseInt(std::string_view s) {
    s = attributeText(s);
    if (s.empty())
        return std::nullopt;
    if (s.front() == '+')
        s.remove_prefix(1);
    std::int64_t value = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 10);
    if (ec != std::errc() || ptr != s.data() + s.size())
        return std::nullopt;
    return value;
}

std::optional<std::uint64_t> parseHex(std::string_view s) {
    s = attributeText(s);
    if (startsWith(s, "0x") || startsWith(s, "0X"))
        s.remove_prefix(2);
    if (s.empty())
        return std::nullopt;
    // What from_chars(..., 16) accepts (digits of either case, nothing else, no overflow), in a
    // loop the compiler keeps inline: a PCI scan parses thousands of ids.
    std::uint64_t value = 0;
    for (char c : s) {
        unsigned digit;
        if (c >= '0' && c <= '9')
            digit = static_cast<unsigned>(c - '0');
        else if (c >= 'a' && c <= 'f')
            digit = static_cast<unsigned>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            digit = static_cast<unsigned>(c - 'A' + 10);
        else
            return std::nullopt;
        if (value >> 60 != 0)
            return std::nullopt;  // one more digit does not fit in 64 bits
        value = value << 4 | digit;
    }
    return value;
}

std::optional<double> parseLeadingDouble(std::string_view s) {
    s = attributeText(s);
    size_t n = 0;
    bool seenDigit = false, seenDot = false;
    while (n < s.size()) {
        char c = s[n];
        if (c >= '0' && c <= '9') {
            seenDigit = true;
        } else if (c == '.' && !seenDot) {
            seenDot = true;
        } else {
            break;
        }
        ++n;
    }
    if (!seenDigit)
        return std::nullopt;
    // strtod needs a terminated buffer; the number is short.
    std::string number(s.substr(0, n));
    return std::strtod(number.c_str(), nullptr);
}

Result<std::vector<int>> parseRangeList(std::string_view s) {
    std::vector<int> out;
    s = attributeText(s);
    if (s.empty())
        return out;
    for (std::string_view part : split(s, ',')) {
        part = trim(part);
        if (part.empty())
            return Error{"empty element in range list '" + std::string(s) + "'"};
        auto dash = part.find('-');
        std::optional<std::int64_t> lo, hi;
        if (dash == std::string_view::npos) {
            lo = hi = parseInt(part);
        } else {
            lo = parseInt(part.substr(0, dash));
            hi = parseInt(part.substr(dash + 1));
        }
        if (!lo || !hi || *lo < 0 || *hi < *lo || *hi > kMaxCpuOrNodeId) {
            return Error{"malformed range '" + std::string(part) + "' in range list '" +
                         std::string(s) + "'"};
        }
        for (std::int64_t v = *lo; v <= *hi; ++v)
            out.push_back(static_cast<int>(v));
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

Result<std::vector<int>> parseCpuMask(std::string_view s) {
    s = attributeText(s);
    auto words = split(s, ',');
    if (static_cast<std::int64_t>(words.size()) * 32 > kMaxCpuOrNodeId + 1) {
        return Error{"CPU mask of " + std::to_string(words.size()) +
                     " words is longer than any kernel's (ids up to " +
                     std::to_string(kMaxCpuOrNodeId) + ")"};
    }
    std::vector<int> out;
    for (size_t w = 0; w < words.size(); ++w) {
        auto word = trim(words[w]);
        auto value = parseHex(word);
        if (!value || word.size() > 8 || startsWith(word, "0x")) {
            return Error{"malformed CPU mask word '" + std::string(word) + "' in '" +
                         std::string(s) + "'"};
        }
        const int base = static_cast<int>((words.size() - 1 - w) * 32);
        for (int bit = 0; bit < 32; ++bit) {
            if ((*value >> bit) & 1U)
                out.push_back(base + bit);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string formatRangeList(const std::vector<int>& values) {
    std::string out;
    size_t i = 0;
    while (i < values.size()) {
        size_t j = i;
        while (j + 1 < values.size() && values[j + 1] == values[j] + 1)
            ++j;
        if (!out.empty())
            out += ',';
        out += std::to_string(values[i]);
        if (j > i)
            out += '-' + std::to_string(values[j]);
        i = j + 1;
    }
    return out;
}

std::string hex(std::uint64_t value, int width) {
    // What printf's "%0*llx" gives, without printf (a PCI scan formats thousands of ids).
    char digits[16];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value, 16);
    const auto length = static_cast<size_t>(end - digits);
    std::string out(
        width > 0 && static_cast<size_t>(width) > length ? static_cast<size_t>(width) - length : 0,
        '0');
    out.append(digits, length);
    return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i)
            out += separator;
        out += parts[i];
    }
    return out;
}

std::string joinInts(const std::vector<int>& values, std::string_view separator) {
    std::string out;
    for (size_t i = 0; i < values.size(); ++i) {
        if (i)
            out += separator;
        out += std::to_string(values[i]);
    }
    return out;
}

namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not one (overlong
// forms, surrogates and code points above U+10FFFF are invalid, as protobuf and Go see them).
std::size_t utf8SequenceLength(std::string_view text, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    if (lead < 0x80)
        return 1;
    std::size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        low = lead == 0xE0 ? 0xA0 : 0x80;
        high = lead == 0xED ? 0x9F : 0xBF;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        low = lead == 0xF0 ? 0x90 : 0x80;
        high = lead == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (i + length > text.size())
        return 0;
    if (byte(i + 1) < low || byte(i + 1) > high)
        return 0;
    for (std::size_t k = 2; k < length; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF)
            return 0;
    return length;
}

}  // namespace

std::string escapeInvalidUtf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t length = utf8SequenceLength(text, i);
        if (length == 0) {
            out += "\\x" + hex(static_cast<unsigned char>(text[i]), 2);
            ++i;
        } else {
            out.append(text.substr(i, length));
            i += length;
        }
    }
    return out;
}

std::string utcNow() {
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char out[32];
    std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return out;
}

}  // namespace numadra::text
