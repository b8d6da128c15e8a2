#pragma once
// CRC-32C (Castagnoli), the checksum of on-disk records: detects torn or bit-flipped files.

#include <cstdint>
#include <string_view>

namespace numadra {

std::uint32_t crc32c(std::string_view data);

}  // namespace numadra
