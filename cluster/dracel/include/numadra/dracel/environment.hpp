#pragma once
// The DRA CEL environment's functions (k8s.io/dynamic-resource-allocation/cel), on top of the
// in-house interpreter's standard library:
//   Quantity:  quantity(s) isQuantity(s); q.isInteger() q.asInteger() q.asApproximateFloat()
//              q.sign() q.add(q|int) q.sub(q|int) q.isGreaterThan(q) q.isLessThan(q)
//              q.compareTo(q)
//   Semver:    semver(s[, normalize]) isSemver(s[, normalize]); v.major() v.minor() v.patch()
//              v.isGreaterThan(v) v.isLessThan(v) v.compareTo(v)
//   DRA:       x.includes(y) (list: some element equals y, at most 48 elements; scalar: x == y)
//   Lists:     l.isSorted() l.sum() l.min() l.max() l.indexOf(x) l.lastIndexOf(x)
//   Regex:     s.find(re) s.findAll(re[, n])
//   IP, CIDR:  ip(s) isIP(s) ip.isCanonical(s) cidr(s) isCIDR(s) and their members (net.hpp)
//   Time:      timestamp(s|int) duration(s), arithmetic, ordering, getters (time.hpp)
//   Lists v3:  l.first() l.last() (optionals); l.sortBy(x, key) is a macro of the interpreter
//   cel-go extensions the interpreter lacks: sets.contains/equivalent/intersects(l, l);
//              l.distinct() l.flatten([depth]) lists.range(n) l.reverse() l.slice(i, j) l.sort()
// Quantity and Semver values have a semantic `==` and no ordering operators.

#include <cstddef>

#include "numadra/cel/cel.hpp"
#include "numadra/dracel/quantity.hpp"
#include "numadra/dracel/semver.hpp"

namespace numadra::dracel {

// Built on first use, immutable afterwards; safe to use from several threads. Cost limit:
// 1,000,000 per evaluation, as the scheduler's.
const cel::Environment& draEnvironment();

// The runtime cost limit of one selector evaluation.
inline constexpr std::int64_t kCostLimit = 1'000'000;
// includes() refuses lists longer than this (ResourceSliceMaxAttributeValuesPerDevice).
inline constexpr std::size_t kMaxIncludesListSize = 48;

// CEL values of the extension types, and back (a quantity travels as a dracel::Quantity).
cel::Value toValue(api::Quantity quantity);
cel::Value toValue(Semver version);
const api::Quantity* asQuantity(const cel::Value& value);
const Semver* asSemver(const cel::Value& value);

}  // namespace numadra::dracel
