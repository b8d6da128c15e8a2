#include "numadra/kube/base64.hpp"

#include <cstdint>

namespace numadra::kube {
namespace {

constexpr int kNotInAlphabet = -1;

int sextetOf(char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return kNotInAlphabet;
}

bool isSpace(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

}  // namespace

std::optional<std::string> decodeBase64(std::string_view text) {
    std::string decoded;
    decoded.reserve(text.size() / 4 * 3);
    std::uint32_t buffer = 0;
    int bufferedBits = 0;
    size_t symbols = 0;
    size_t padding = 0;
    for (char c : text) {
        if (isSpace(c))
            continue;
        if (c == '=') {
            ++padding;
            continue;
        }
        // Data after padding means two values were glued together or the text is corrupt.
        if (padding > 0)
            return std::nullopt;
        const int sextet = sextetOf(c);
        if (sextet == kNotInAlphabet)
            return std::nullopt;
        ++symbols;
        buffer = (buffer << 6) | static_cast<std::uint32_t>(sextet);
        bufferedBits += 6;
        if (bufferedBits >= 8) {
            bufferedBits -= 8;
            decoded.push_back(static_cast<char>((buffer >> bufferedBits) & 0xFFu));
        }
    }
    // A group of 4 symbols carries 3 bytes; a final group of 1 symbol carries no whole byte.
    const size_t lastGroup = symbols % 4;
    if (lastGroup == 1)
        return std::nullopt;
    if (padding > 0 && (padding > 2 || (symbols + padding) % 4 != 0))
        return std::nullopt;
    return decoded;
}

}  // namespace numadra::kube
