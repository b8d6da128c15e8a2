#pragma once
// Go's strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.

namespace numadra::cel::detail {

bool goIsPrint(char32_t r);

}  // namespace numadra::cel::detail
