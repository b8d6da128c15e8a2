#include "numadra/common/crc32c.hpp"

#include <array>

namespace numadra {

namespace {

constexpr std::array<std::uint32_t, 256> makeTable() {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t value = i;
        for (int bit = 0; bit < 8; ++bit)
            value = (value & 1U) ? (value >> 1) ^ 0x82F63B78U : value >> 1;  // reflected 0x1EDC6F41
        table[i] = value;
    }
    return table;
}

constexpr auto kTable = makeTable();

}  // namespace

std::uint32_t crc32c(std::string_view data) {
    std::uint32_t crc = 0xFFFFFFFFU;
    for (unsigned char byte : data)
        crc = kTable[(crc ^ byte) & 0xFFU] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFU;
}

}  // namespace numadra
