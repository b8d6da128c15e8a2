#pragma once
// The arbitrary-precision half of Quantity (Kubernetes keeps a value that an int64 with a power
// of ten cannot hold as an inf.Dec): decimal digit strings and signed decimals built on them.
// Exact; every operation that could grow past Quantity::kMaxDigits digits says so with nullopt.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "numadra/api/quantity.hpp"

namespace numadra::api {

// sign × digits × 10^exponent, as inf.Dec keeps unscaled × 10^-scale.
struct BigDecimal {
    bool negative = false;
    std::string digits;  // the magnitude, without leading zeros; "" is zero
    std::int64_t exponent = 0;

    int sign() const { return digits.empty() ? 0 : (negative ? -1 : 1); }
};

namespace detail {

// ---- magnitudes: decimal digit strings without leading zeros ("" is zero) ---------------------

std::string stripLeadingZeros(std::string_view digits);
int compareMagnitudes(std::string_view a, std::string_view b);
std::string addMagnitudes(std::string_view a, std::string_view b);
// a × b, schoolbook: the values multiplied are a few digits each.
std::string multiplyMagnitudes(std::string_view a, std::string_view b);
// digits × factor, for a small factor.
std::string multiplySmall(std::string_view digits, std::uint64_t factor);
// Removes the factors of `base` from a magnitude: the rest and how many were removed.
std::pair<std::string, std::int64_t> removeFactors(std::string digits, std::uint64_t base);
// The magnitude as an unsigned 64-bit number, or nullopt when it does not fit.
std::optional<std::uint64_t> toUnsigned(std::string_view digits);

// ---- signed decimals ----------------------------------------------------------------------------

// -1, 0 or 1, by value whatever the exponents.
int compareBig(const BigDecimal& a, const BigDecimal& b);
// inf.Dec's Add: exact, at the smaller exponent.
std::optional<BigDecimal> addBig(const BigDecimal& a, const BigDecimal& b);
// inf.Dec's Round(x, 9, RoundUp) as parsing applies it: to exactly nine fraction digits, a cut
// fraction rounding away from zero.
std::optional<BigDecimal> roundUpToNano(BigDecimal big);
// The magnitude of a whole number, or nullopt for a fraction (or beyond kMaxDigits).
std::optional<std::string> wholeDigits(const BigDecimal& big);

}  // namespace detail
}  // namespace numadra::api
