#pragma once
// Kubernetes resource quantities as the DRA CEL environment sees them (`kubernetes.Quantity`):
// an api::Quantity (the one implementation of Kubernetes' semantics) as a CEL opaque value.

#include <string>
#include <string_view>
#include <utility>

#include "numadra/api/quantity.hpp"
#include "numadra/cel/cel.hpp"

namespace numadra::dracel {

class Quantity final : public cel::Opaque {
  public:
    static constexpr std::string_view kTypeName = "kubernetes.Quantity";

    explicit Quantity(api::Quantity quantity) : quantity_(std::move(quantity)) {}

    const api::Quantity& quantity() const { return quantity_; }

    // cel::Opaque: equal by value ("1Gi" == "1024Mi"), printed as Kubernetes' canonical text.
    std::string typeName() const override { return std::string(kTypeName); }
    bool equals(const cel::Opaque& other) const override;
    std::string debugString() const override { return "quantity(\"" + quantity_.text() + "\")"; }

  private:
    api::Quantity quantity_;
};

}  // namespace numadra::dracel
