#pragma once
// Go's text rules that upstream's messages and printing show (strconv), shared by the CEL
// engine's format() and the host libraries' error messages.

#include <string>
#include <string_view>

namespace numadra::cel {

// Go's strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.
bool goIsPrint(char32_t r);

// Go's strconv.Quote: a double-quoted string, non-printable characters and invalid UTF-8
// escaped as Go escapes them.
std::string goQuote(std::string_view text);

}  // namespace numadra::cel
