// Go's strconv.Quote and IsPrint, as upstream's messages and format("%s") show strings.

#include "numadra/cel/go_text.hpp"

#include <gtest/gtest.h>

namespace numadra::cel {
namespace {

TEST(GoQuote, EscapesAsStrconvQuote) {
    EXPECT_EQ(goQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    EXPECT_EQ(goQuote("\t\x01\x7f"), "\"\\t\\x01\\x7f\"");
    EXPECT_EQ(goQuote("\xff"), "\"\\xff\"");        // invalid UTF-8: the byte
    EXPECT_EQ(goQuote("é\u00a0"), "\"é\\u00a0\"");  // NO-BREAK SPACE is not printable
    EXPECT_EQ(goQuote("\U0001F600\u200b"), "\"\U0001F600\\u200b\"");  // emoji kept, ZWSP escaped
}

TEST(GoIsPrint, FollowsGosTables) {
    EXPECT_TRUE(goIsPrint(U' '));
    EXPECT_TRUE(goIsPrint(U'é'));
    EXPECT_FALSE(goIsPrint(U'\u00ad'));  // SOFT HYPHEN (Cf)
    EXPECT_FALSE(goIsPrint(U'\u2028'));  // LINE SEPARATOR
    EXPECT_FALSE(goIsPrint(U'\x7f'));
}

}  // namespace
}  // namespace numadra::cel
