#pragma once
// Kubernetes resource quantities for the values this project produces and reads.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "numadra/common/result.hpp"

namespace numadra::api {

class Quantity {
  public:
    Quantity() = default;
    // 100'000'000'000 -> "100G" (largest exact decimal suffix).
    static Quantity decimal(std::int64_t value);
    // 68'719'476'736 -> "64Gi" (largest exact binary suffix; plain digits below 1024).
    static Quantity binary(std::int64_t value);
    // Parses "64Gi", "100G", "1500m", "2e3", "12"; the value is rounded up to a whole unit as
    // Kubernetes' Quantity.Value() does.
    static Result<Quantity> parse(std::string_view text);

    std::int64_t value() const { return value_; }
    const std::string& text() const { return text_; }
    bool operator==(const Quantity& other) const { return value_ == other.value_; }
    auto operator<=>(const Quantity& other) const { return value_ <=> other.value_; }

  private:
    Quantity(std::int64_t value, std::string text) : value_(value), text_(std::move(text)) {}
    std::int64_t value_ = 0;
    std::string text_ = "0";
};

}  // namespace numadra::api
