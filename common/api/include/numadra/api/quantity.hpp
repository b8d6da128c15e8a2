#pragma once
// Kubernetes resource quantities (k8s.io/apimachinery's resource.Quantity), the one
// implementation both sides use: exact values (nano-unit resolution, as Kubernetes rounds),
// Kubernetes' parsing rules, its canonical text and its comparisons. The node publishes and reads
// them; the cluster side's CEL environment wraps them as `kubernetes.Quantity`.

#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "numadra/common/result.hpp"

namespace numadra::api {

// Arbitrary precision (Kubernetes' inf.Dec), defined in common/api/big_decimal.hpp.
struct BigDecimal;

class Quantity {
  public:
    // How the value prints, as Kubernetes' Quantity.Format: "1e3" (DecimalExponent), "1Ki"
    // (BinarySI), "1k" (DecimalSI).
    enum class Format { DecimalExponent, BinarySI, DecimalSI };

    Quantity() = default;  // zero, DecimalSI

    // Every Kubernetes form: optional sign, digits with an optional fraction, then a suffix
    // (Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or an exponent e3 / E-2; as in Kubernetes the
    // exponent is cut to 32 bits). Values are exact as Kubernetes keeps them: an int64 with a
    // power of ten (its int64Amount), or, when that cannot hold them, arbitrary precision
    // rounded up (away from zero) to 1n (its inf.Dec); binary values above 2^63-1 are capped
    // there as Kubernetes does. Unlike Kubernetes, a value that needs more than kMaxDigits
    // digits is an error instead of an unbounded computation. Errors name the text:
    // `invalid quantity "200K": unable to parse quantity's suffix`.
    static Result<Quantity> parse(std::string_view text);
    // Kubernetes' NewQuantity / NewMilliQuantity.
    static Quantity fromInt(std::int64_t value, Format format);
    static Quantity fromMilli(std::int64_t milli, Format format);
    // 100'000'000'000 -> "100G".
    static Quantity decimal(std::int64_t value) { return fromInt(value, Format::DecimalSI); }
    // 68'719'476'736 -> "64Gi"; below 1024 or not a multiple of 1024 Kubernetes prints decimal
    // ("1000" -> "1k", "1536" -> "1536").
    static Quantity binary(std::int64_t value) { return fromInt(value, Format::BinarySI); }

    // The most digits an arbitrary-precision value may have.
    static constexpr std::size_t kMaxDigits = 4096;

    Format format() const { return format_; }
    int sign() const;
    bool isZero() const { return sign() == 0; }
    // Kubernetes' Quantity.AsInt64() succeeds: the value is held as an int64 with a
    // non-negative power of ten and their product fits an int64. So "1000m" and any value that
    // went through arbitrary precision are not integers, as upstream's isInteger() says.
    bool isInteger() const;
    // The value as an int64 when isInteger(), else an error.
    Result<std::int64_t> asInteger() const;
    // Kubernetes' AsApproximateFloat64(): the unscaled digits as the nearest double times Go's
    // math.Pow10 of the exponent.
    double asApproximateFloat() const;
    // Kubernetes' Quantity.Value() / MilliValue(): rounded up (away from zero) to a whole unit /
    // milli-unit ("1n" -> 1, "-1n" -> -1); saturated at the int64 limits.
    std::int64_t value() const;
    std::int64_t milliValue() const;
    // The value in milli-units when that is exact and fits an int64 (upstream's
    // safeMilliValue), else nullopt.
    std::optional<std::int64_t> exactMilli() const;

    // Exact, as Quantity.Add/Sub: an int64 sum when it fits, else arbitrary precision; an error
    // only beyond kMaxDigits. The result keeps this quantity's format, or takes the other's
    // when this one is zero.
    Result<Quantity> add(const Quantity& other) const;
    Result<Quantity> sub(const Quantity& other) const;
    // Exact, as inf.Dec's Mul (upstream multiplies a consumed capacity by a node-allocatable
    // capacityMultiplier so); keeps this quantity's format.
    Result<Quantity> mul(const Quantity& other) const;

    // As Kubernetes' Quantity.String(), which is what kube-apiserver stores: the parsed text when
    // Kubernetes keeps it (already canonical), else the canonical form ("1024Mi" -> "1Gi",
    // "0.5" -> "500m", "1000M" -> "1G").
    std::string text() const;

    // By value, whatever the representation ("1" == "1000m"), as Quantity.Cmp.
    std::strong_ordering operator<=>(const Quantity& other) const;
    bool operator==(const Quantity& other) const { return std::is_eq(*this <=> other); }

  private:
    Quantity(std::int64_t mantissa, std::int32_t exponent, Format format, std::string text = {})
        : mantissa_(mantissa), exponent_(exponent), format_(format), text_(std::move(text)) {}
    Quantity(std::shared_ptr<const BigDecimal> big, Format format)
        : big_(std::move(big)), format_(format) {}
    BigDecimal toBig() const;
    std::optional<__int128> nano() const;
    std::int64_t scaled(int unitExponent) const;

    // Kubernetes' int64Amount: mantissa_ × 10^exponent_, unless big_ holds the value.
    std::int64_t mantissa_ = 0;
    std::int32_t exponent_ = 0;
    std::shared_ptr<const BigDecimal> big_;
    Format format_ = Format::DecimalSI;
    std::string text_;  // the parsed text when Kubernetes keeps it as the canonical form
};

}  // namespace numadra::api
