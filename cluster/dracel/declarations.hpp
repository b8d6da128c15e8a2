#pragma once
// The declarations of upstream's DRA CEL environment (cluster/dracel/declarations.txt, generated
// from upstream by tests/upstream/cel and checked against it), compiled in.

#include <string_view>

namespace numadra::dracel::detail {

std::string_view upstreamDeclarations();

}  // namespace numadra::dracel::detail
