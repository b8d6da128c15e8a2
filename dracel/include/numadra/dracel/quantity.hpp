#pragma once
// Kubernetes resource quantities as the DRA CEL environment sees them (`kubernetes.Quantity`):
// exact values (nano-unit resolution, as Kubernetes rounds), Kubernetes' parsing rules and its
// canonical text.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "numadra/cel/cel.hpp"
#include "numadra/common/result.hpp"

namespace numadra::dracel {

class Quantity final : public cel::Opaque {
  public:
    // How the value prints, as Kubernetes' Quantity.Format: "1e3" (DecimalExponent), "1Ki"
    // (BinarySI), "1k" (DecimalSI).
    enum class Format { DecimalExponent, BinarySI, DecimalSI };

    static constexpr std::string_view kTypeName = "kubernetes.Quantity";

    Quantity() = default;  // zero, DecimalSI

    // Every Kubernetes form: optional sign, digits with an optional fraction, then a suffix
    // (Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or an exponent e3 / E-2). Values finer than 1n are
    // rounded up (away from zero) as Kubernetes does; binary values above 2^63-1 are capped there
    // as Kubernetes does; other values too large to hold (about 1.7e29) are an error. Errors name
    // the text: `invalid quantity "200K": unable to parse quantity's suffix`.
    static Result<Quantity> parse(std::string_view text);
    static Quantity fromInt(std::int64_t value, Format format);
    static Quantity fromMilli(std::int64_t milli, Format format);

    Format format() const { return format_; }
    int sign() const { return nano_ < 0 ? -1 : (nano_ > 0 ? 1 : 0); }
    bool isZero() const { return nano_ == 0; }
    // A whole number that fits an int64.
    bool isInteger() const;
    // The value as an int64; an error for a fraction or a value out of range.
    Result<std::int64_t> asInteger() const;
    double asApproximateFloat() const;
    // Kubernetes' Quantity.Value() / MilliValue(): rounded up (away from zero) to a whole unit /
    // milli-unit; saturated at the int64 limits.
    std::int64_t value() const;
    std::int64_t milliValue() const;
    // The value in milli-units when that is exact and fits an int64 (upstream's
    // safeMilliValue), else nullopt.
    std::optional<std::int64_t> exactMilli() const;

    // Exact; an error when the result leaves the representable range. The result keeps this
    // quantity's format, or takes the other's when this one is zero (as Quantity.Add does).
    Result<Quantity> add(const Quantity& other) const;
    Result<Quantity> sub(const Quantity& other) const;

    // As Kubernetes' Quantity.String(): the parsed text when Kubernetes keeps it (already
    // canonical), else the canonical form ("1024Mi" -> "1Gi", "0.5" -> "500m", "1000M" -> "1G").
    std::string toString() const;

    std::strong_ordering operator<=>(const Quantity& other) const { return nano_ <=> other.nano_; }
    bool operator==(const Quantity& other) const { return nano_ == other.nano_; }

    // cel::Opaque
    std::string typeName() const override { return std::string(kTypeName); }
    bool equals(const cel::Opaque& other) const override;
    std::string debugString() const override { return "quantity(\"" + toString() + "\")"; }

  private:
    Quantity(__int128 nano, Format format, std::string text = {})
        : nano_(nano), format_(format), text_(std::move(text)) {}
    std::int64_t scaled(__int128 unit) const;

    __int128 nano_ = 0;  // the value in units of 1e-9
    Format format_ = Format::DecimalSI;
    std::string text_;  // the parsed text when Kubernetes keeps it as the canonical form
};

}  // namespace numadra::dracel
