#include "numadra/dracel/quantity.hpp"

namespace numadra::dracel {

bool Quantity::equals(const cel::Opaque& other) const {
    const auto* that = dynamic_cast<const Quantity*>(&other);
    return that != nullptr && quantity_ == that->quantity_;
}

}  // namespace numadra::dracel
