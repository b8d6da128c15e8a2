#include "big_decimal.hpp"

#include <algorithm>
#include <charconv>
#include <system_error>
#include <vector>

namespace numadra::api::detail {

namespace {

// a - b for a >= b.
std::string subtractMagnitudes(std::string_view a, std::string_view b) {
    std::string out;
    int borrow = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        int t =
            (a[a.size() - 1 - i] - '0') - borrow - (i < b.size() ? b[b.size() - 1 - i] - '0' : 0);
        borrow = t < 0 ? 1 : 0;
        out.push_back(static_cast<char>('0' + t + 10 * borrow));
    }
    return stripLeadingZeros(std::string(out.rbegin(), out.rend()));
}

// digits / divisor and whether it divides exactly.
std::pair<std::string, bool> divideSmall(std::string_view digits, std::uint64_t divisor) {
    std::string out;
    std::uint64_t remainder = 0;
    for (const char c : digits) {
        const std::uint64_t t = remainder * 10 + static_cast<std::uint64_t>(c - '0');
        out.push_back(static_cast<char>('0' + t / divisor));
        remainder = t % divisor;
    }
    return {stripLeadingZeros(std::move(out)), remainder == 0};
}

// The magnitude's digits at a lower exponent (zeros appended); nullopt beyond kMaxDigits.
std::optional<std::string> digitsAt(const BigDecimal& big, std::int64_t exponent) {
    if (big.digits.empty())
        return std::string();
    const std::int64_t zeros = big.exponent - exponent;
    if (zeros < 0 || static_cast<std::int64_t>(big.digits.size()) + zeros >
                         static_cast<std::int64_t>(Quantity::kMaxDigits))
        return std::nullopt;
    return big.digits + std::string(static_cast<std::size_t>(zeros), '0');
}

}  // namespace

std::string stripLeadingZeros(std::string_view digits) {
    const std::size_t first = digits.find_first_not_of('0');
    return first == std::string_view::npos ? std::string() : std::string(digits.substr(first));
}

int compareMagnitudes(std::string_view a, std::string_view b) {
    if (a.size() != b.size())
        return a.size() < b.size() ? -1 : 1;
    const int c = a.compare(b);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

std::string addMagnitudes(std::string_view a, std::string_view b) {
    std::string out;
    int carry = 0;
    for (std::size_t i = 0; i < std::max(a.size(), b.size()) || carry != 0; ++i) {
        const int x = i < a.size() ? a[a.size() - 1 - i] - '0' : 0;
        const int y = i < b.size() ? b[b.size() - 1 - i] - '0' : 0;
        const int t = x + y + carry;
        out.push_back(static_cast<char>('0' + t % 10));
        carry = t / 10;
    }
    return stripLeadingZeros(std::string(out.rbegin(), out.rend()));
}

std::string multiplyMagnitudes(std::string_view a, std::string_view b) {
    if (a.empty() || b.empty())
        return {};
    std::vector<int> digits(a.size() + b.size(), 0);
    for (std::size_t i = 0; i < a.size(); ++i) {
        for (std::size_t j = 0; j < b.size(); ++j)
            digits[i + j + 1] += (a[i] - '0') * (b[j] - '0');
    }
    for (std::size_t k = digits.size() - 1; k > 0; --k) {
        digits[k - 1] += digits[k] / 10;
        digits[k] %= 10;
    }
    std::string out;
    for (int d : digits)
        out.push_back(static_cast<char>('0' + d));
    return stripLeadingZeros(out);
}

std::string multiplySmall(std::string_view digits, std::uint64_t factor) {
    std::string out;
    unsigned __int128 carry = 0;
    for (std::size_t i = digits.size(); i-- > 0;) {
        const unsigned __int128 t =
            static_cast<unsigned __int128>(digits[i] - '0') * factor + carry;
        out.push_back(static_cast<char>('0' + static_cast<int>(t % 10)));
        carry = t / 10;
    }
    for (; carry != 0; carry /= 10)
        out.push_back(static_cast<char>('0' + static_cast<int>(carry % 10)));
    return stripLeadingZeros(std::string(out.rbegin(), out.rend()));
}

std::optional<std::uint64_t> toUnsigned(std::string_view digits) {
    std::uint64_t value = 0;
    if (digits.empty())
        return value;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size())
        return std::nullopt;
    return value;
}

int compareBig(const BigDecimal& a, const BigDecimal& b) {
    if (a.sign() != b.sign())
        return a.sign() < b.sign() ? -1 : 1;
    if (a.sign() == 0)
        return 0;
    // The position of the leading digit decides first; then the digits, the shorter padded.
    const std::int64_t topA = static_cast<std::int64_t>(a.digits.size()) + a.exponent;
    const std::int64_t topB = static_cast<std::int64_t>(b.digits.size()) + b.exponent;
    int magnitude = topA < topB ? -1 : (topA > topB ? 1 : 0);
    if (magnitude == 0) {
        const std::size_t common = std::min(a.digits.size(), b.digits.size());
        const int c = a.digits.compare(0, common, b.digits, 0, common);
        magnitude = c < 0 ? -1 : (c > 0 ? 1 : 0);
        if (magnitude == 0 && a.digits.size() != b.digits.size()) {
            const bool aLonger = a.digits.size() > b.digits.size();
            const std::string& longer = aLonger ? a.digits : b.digits;
            if (longer.find_first_not_of('0', common) != std::string::npos)
                magnitude = aLonger ? 1 : -1;
        }
    }
    return a.negative ? -magnitude : magnitude;
}

std::optional<BigDecimal> addBig(const BigDecimal& a, const BigDecimal& b) {
    const std::int64_t exponent = std::min(a.exponent, b.exponent);
    auto x = digitsAt(a, exponent);
    auto y = digitsAt(b, exponent);
    if (!x || !y)
        return std::nullopt;
    BigDecimal sum{false, {}, exponent};
    if (a.negative == b.negative || a.sign() == 0 || b.sign() == 0) {
        sum.digits = addMagnitudes(*x, *y);
        sum.negative = a.sign() != 0 ? a.negative : b.negative;
    } else if (compareMagnitudes(*x, *y) >= 0) {
        sum.digits = subtractMagnitudes(*x, *y);
        sum.negative = a.negative;
    } else {
        sum.digits = subtractMagnitudes(*y, *x);
        sum.negative = b.negative;
    }
    if (sum.digits.empty())
        sum.negative = false;
    if (sum.digits.size() > Quantity::kMaxDigits)
        return std::nullopt;
    return sum;
}

std::optional<BigDecimal> roundUpToNano(BigDecimal big) {
    if (big.exponent >= -9) {
        auto digits = digitsAt(big, -9);
        if (!digits)
            return std::nullopt;
        big.digits = std::move(*digits);
        big.exponent = -9;
        return big;
    }
    const std::int64_t cut = -9 - big.exponent;
    const auto kept = static_cast<std::int64_t>(big.digits.size()) - cut;
    const std::string_view dropped =
        kept > 0 ? std::string_view(big.digits).substr(static_cast<std::size_t>(kept))
                 : std::string_view(big.digits);
    std::string digits = kept > 0 ? big.digits.substr(0, static_cast<std::size_t>(kept)) : "";
    if (dropped.find_first_not_of('0') != std::string_view::npos)
        digits = addMagnitudes(digits, "1");
    big.digits = std::move(digits);
    big.exponent = -9;
    return big;
}

std::pair<std::string, std::int64_t> removeFactors(std::string digits, std::uint64_t base) {
    std::int64_t times = 0;
    while (!digits.empty()) {
        auto [quotient, exact] = divideSmall(digits, base);
        if (!exact || quotient.empty())
            break;
        digits = std::move(quotient);
        ++times;
    }
    return {std::move(digits), times};
}

std::optional<std::string> wholeDigits(const BigDecimal& big) {
    if (big.exponent >= 0)
        return digitsAt(big, 0);
    const auto fraction = static_cast<std::size_t>(
        std::min<std::int64_t>(-big.exponent, static_cast<std::int64_t>(big.digits.size())));
    const std::size_t integer = big.digits.size() - fraction;
    if (big.digits.find_first_not_of('0', integer) != std::string::npos)
        return std::nullopt;
    return big.digits.substr(0, integer);
}

}  // namespace numadra::api::detail
