#pragma once
// FNV-1a, 64 bit: tiny, and stable across builds and platforms (std::hash promises neither), for
// names derived from other names that must not change between runs.

#include <cstdint>
#include <string_view>

namespace numadra::plugin {

inline std::uint64_t fnv1a64(std::string_view text) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (unsigned char c : text) {
        hash ^= c;
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

}  // namespace numadra::plugin
