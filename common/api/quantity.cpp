#include "numadra/api/quantity.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <utility>

namespace numadra::api {

namespace {

struct Suffix {
    std::string_view name;
    std::int64_t factor;
};

constexpr std::array<Suffix, 6> kDecimal{{{"E", 1'000'000'000'000'000'000},
                                          {"P", 1'000'000'000'000'000},
                                          {"T", 1'000'000'000'000},
                                          {"G", 1'000'000'000},
                                          {"M", 1'000'000},
                                          {"k", 1'000}}};
constexpr std::array<Suffix, 6> kBinary{{{"Ei", std::int64_t{1} << 60},
                                         {"Pi", std::int64_t{1} << 50},
                                         {"Ti", std::int64_t{1} << 40},
                                         {"Gi", std::int64_t{1} << 30},
                                         {"Mi", std::int64_t{1} << 20},
                                         {"Ki", std::int64_t{1} << 10}}};

template <size_t N>
std::string format(std::int64_t value, const std::array<Suffix, N>& suffixes) {
    if (value != 0) {
        for (const auto& s : suffixes) {
            if (value % s.factor == 0)
                return std::to_string(value / s.factor) + std::string(s.name);
        }
    }
    return std::to_string(value);
}

}  // namespace

Quantity Quantity::decimal(std::int64_t value) {
    return Quantity(value, format(value, kDecimal));
}

Quantity Quantity::binary(std::int64_t value) {
    return Quantity(value, format(value, kBinary));
}

Result<Quantity> Quantity::parse(std::string_view text) {
    const std::string original(text);
    auto fail = [&] { return Error{"invalid quantity '" + original + "'"}; };
    if (text.empty())
        return fail();
    size_t i = 0;
    bool negative = false;
    if (text[i] == '+' || text[i] == '-')
        negative = text[i++] == '-';
    size_t numberStart = i;
    bool seenDot = false;
    while (i < text.size() &&
           ((text[i] >= '0' && text[i] <= '9') || (text[i] == '.' && !seenDot))) {
        seenDot = seenDot || text[i] == '.';
        ++i;
    }
    std::string number(text.substr(numberStart, i - numberStart));
    if (number.empty() || number == ".")
        return fail();
    std::string_view suffix = text.substr(i);

    long double multiplier = 1;
    if (suffix.empty()) {
    } else if (suffix == "m") {
        multiplier = 1e-3L;
    } else if (suffix == "u") {
        multiplier = 1e-6L;
    } else if (suffix == "n") {
        multiplier = 1e-9L;
    } else if (suffix.front() == 'e' || suffix.front() == 'E') {
        if (suffix.size() == 1 && suffix == "E") {
            multiplier = 1e18L;
        } else {
            std::string exponent(suffix.substr(1));
            char* end = nullptr;
            long e = std::strtol(exponent.c_str(), &end, 10);
            if (exponent.empty() || *end != '\0' || e > 18 || e < -9)
                return fail();
            multiplier = std::pow(10.0L, static_cast<long double>(e));
        }
    } else {
        bool found = false;
        for (const auto& s : kDecimal) {
            if (suffix == s.name)
                multiplier = static_cast<long double>(s.factor), found = true;
        }
        for (const auto& s : kBinary) {
            if (suffix == s.name)
                multiplier = static_cast<long double>(s.factor), found = true;
        }
        if (!found)
            return fail();
    }
    // Exact for integers with integer suffixes; fractions are rounded up like Value().
    long double magnitude = std::strtold(number.c_str(), nullptr) * multiplier;
    if (magnitude > static_cast<long double>(std::numeric_limits<std::int64_t>::max()))
        return fail();
    auto whole = static_cast<std::int64_t>(std::ceil(magnitude - 1e-9L));
    if (negative)
        whole = -whole;
    return Quantity(whole, original);
}

}  // namespace numadra::api
