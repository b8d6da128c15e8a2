// The Kubernetes format library (format.named, format.<name>(), validate) with apimachinery's
// and strfmt's rules and messages, evaluated through the interpreter.

#include "../k8s_format.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "numadra/dracel/environment.hpp"

namespace numadra::dracel {
namespace {

using Messages = std::vector<std::string>;

std::string eval(const std::string& expr) {
    auto program = cel::Program::compile(expr);
    if (!program)
        return "compile error: " + program.error().message;
    return cel::toString(program->evaluate(cel::Activation{}, draEnvironment()));
}

bool valid(const std::string& format, const std::string& text) {
    return detail::validateFormat(format, text).empty();
}

const std::string kLabelRegexError =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

TEST(FormatLibrary, ValidTextValidatesToNone) {
    EXPECT_EQ(eval("format.dns1123Label().validate('gpu-0')"), "optional.none()");
    EXPECT_EQ(eval("format.dns1123Label().validate('gpu-0').hasValue()"), "false");
}

TEST(FormatLibrary, InvalidTextValidatesToTheMessages) {
    EXPECT_EQ(
        eval("format.dns1123Label().validate('A_b').value() == [\"" + kLabelRegexError + "\"]"),
        "true");
}

TEST(FormatLibrary, NamedFindsEveryConstantFormat) {
    for (const char* name : {"dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
                             "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix",
                             "labelValue", "uri", "uuid", "byte", "date", "datetime"}) {
        const std::string n(name);
        EXPECT_EQ(eval("format.named('" + n + "').value() == format." + n + "()"), "true") << n;
    }
}

TEST(FormatLibrary, NamedIsNoneForAnUnknownName) {
    EXPECT_EQ(eval("format.named('DNS1123Label').hasValue()"), "false");
    EXPECT_EQ(eval("format.named('').hasValue()"), "false");
}

TEST(FormatLibrary, FormatsAreEqualByName) {
    EXPECT_EQ(eval("format.uuid() == format.uuid()"), "true");
    EXPECT_EQ(eval("format.uuid() == format.byte()"), "false");
    EXPECT_EQ(eval("type(format.uuid())"), "kubernetes.NamedFormat");
}

TEST(FormatLibrary, WrongArgumentsAreNoSuchOverload) {
    EXPECT_EQ(eval("format.named(1)"), "error(no such overload: format.named(int))");
    EXPECT_EQ(eval("format.uuid().validate(1)"),
              "error(no such overload: validate(kubernetes.NamedFormat, int))");
    EXPECT_EQ(eval("format.uuid(1)"), "error(no such overload: format.uuid(int))");
}

TEST(Dns1123Label, DotsAreNamedWhenTheRestIsASubdomain) {
    EXPECT_EQ(detail::validateFormat("dns1123Label", "a.b"), Messages{"must not contain dots"});
}

TEST(Dns1123Label, LengthAndPatternAreBothReported) {
    EXPECT_TRUE(valid("dns1123Label", std::string(63, 'a')));
    EXPECT_EQ(detail::validateFormat("dns1123Label", std::string(64, 'a')),
              Messages{"must be no more than 63 characters"});
    EXPECT_EQ(detail::validateFormat("dns1123Label", std::string(64, 'A')),
              (Messages{"must be no more than 63 characters", kLabelRegexError}));
}

TEST(Dns1123Subdomain, AllowsDotsUpTo253Characters) {
    EXPECT_TRUE(valid("dns1123Subdomain", "a.b-c.d"));
    EXPECT_FALSE(valid("dns1123Subdomain", "a..b"));
    EXPECT_FALSE(valid("dns1123Subdomain", "-a"));
    EXPECT_EQ(detail::validateFormat("dns1123Subdomain", std::string(254, 'a')),
              Messages{"must be no more than 253 characters"});
}

TEST(Dns1035Label, MustStartWithALetter) {
    EXPECT_TRUE(valid("dns1035Label", "a1"));
    EXPECT_EQ(detail::validateFormat("dns1035Label", "1a"),
              Messages{"a DNS-1035 label must consist of lower case alphanumeric characters or "
                       "'-', start with an alphabetic character, and end with an alphanumeric "
                       "character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
                       "'[a-z]([-a-z0-9]*[a-z0-9])?')"});
}

TEST(PrefixFormats, AllowATrailingDash) {
    EXPECT_TRUE(valid("dns1123LabelPrefix", "gpu-"));
    EXPECT_TRUE(valid("dns1123SubdomainPrefix", "a.gpu-"));
    EXPECT_TRUE(valid("dns1035LabelPrefix", "gpu-"));
    EXPECT_FALSE(valid("dns1123Label", "gpu-"));
}

TEST(PrefixFormats, MaskTheLastTwoCharactersAsUpstreamDoes) {
    // "a.-" becomes "a" (upstream drops two characters for the dash), which is valid.
    EXPECT_TRUE(valid("dns1123SubdomainPrefix", "a.-"));
    EXPECT_FALSE(valid("dns1123LabelPrefix", "-"));
}

TEST(QualifiedName, TakesAnOptionalSubdomainPrefix) {
    EXPECT_TRUE(valid("qualifiedName", "example.com/MyName"));
    EXPECT_TRUE(valid("qualifiedName", "my.name_1"));
    EXPECT_EQ(detail::validateFormat("qualifiedName", "/a"),
              Messages{"prefix part must be non-empty"});
}

TEST(QualifiedName, EmptyNameFailsTwice) {
    EXPECT_EQ(detail::validateFormat("qualifiedName", "a/"),
              (Messages{"name part must be non-empty",
                        "name part must consist of alphanumeric characters, '-', '_' or '.', and "
                        "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                        "'my.name',  or '123-abc', regex used for validation is "
                        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"}));
}

TEST(QualifiedName, LengthsAreInBytes) {
    EXPECT_EQ(detail::validateFormat("qualifiedName", std::string(64, 'a')),
              Messages{"name part must be no more than 63 bytes"});
    EXPECT_EQ(detail::validateFormat("qualifiedName", std::string(254, 'a') + "/a"),
              Messages{"prefix part must be no more than 253 bytes"});
}

TEST(QualifiedName, TwoSlashesAreOneError) {
    EXPECT_EQ(detail::validateFormat("qualifiedName", "a/b/c").size(), 1U);
    EXPECT_TRUE(detail::validateFormat("qualifiedName", "a/b/c")[0].starts_with(
        "a valid label key must consist of"));
}

TEST(LabelValue, MayBeEmpty) {
    EXPECT_TRUE(valid("labelValue", ""));
    EXPECT_TRUE(valid("labelValue", "My_value.1"));
    EXPECT_FALSE(valid("labelValue", "_a"));
    EXPECT_EQ(detail::validateFormat("labelValue", std::string(64, 'a')),
              Messages{"must be no more than 63 bytes"});
}

TEST(UriFormat, ReportsParseRequestUrisError) {
    EXPECT_TRUE(valid("uri", "https://example.com/x"));
    EXPECT_EQ(detail::validateFormat("uri", "x y"),
              Messages{"parse \"x y\": invalid URI for request"});
}

TEST(UuidFormat, HyphensAreOptionalAndCaseIsIgnored) {
    EXPECT_TRUE(valid("uuid", "123e4567-e89b-12d3-a456-426614174000"));
    EXPECT_TRUE(valid("uuid", "123E4567E89B12D3A456426614174000"));
    EXPECT_FALSE(valid("uuid", "123e4567-e89b-12d3-a456-42661417400"));
    EXPECT_EQ(detail::validateFormat("uuid", "x"), Messages{"does not match the UUID format"});
}

TEST(ByteFormat, IsPaddedStandardBase64) {
    EXPECT_TRUE(valid("byte", "aGk="));
    EXPECT_TRUE(valid("byte", "aA=="));
    EXPECT_TRUE(valid("byte", "ab+/"));
    EXPECT_FALSE(valid("byte", ""));
    EXPECT_FALSE(valid("byte", "aGk"));
    EXPECT_FALSE(valid("byte", "a==="));
    EXPECT_FALSE(valid("byte", "ab-_"));
    EXPECT_EQ(detail::validateFormat("byte", "!"), Messages{"invalid base64"});
}

TEST(DateFormat, ChecksTheDayOfTheMonth) {
    EXPECT_TRUE(valid("date", "2024-02-29"));
    EXPECT_FALSE(valid("date", "2023-02-29"));
    EXPECT_FALSE(valid("date", "2024-13-01"));
    EXPECT_FALSE(valid("date", "2024-1-01"));
    EXPECT_FALSE(valid("date", "2024-01-01 "));
    EXPECT_EQ(detail::validateFormat("date", "x"), Messages{"invalid date"});
}

TEST(DatetimeFormat, FollowsStrfmtsPattern) {
    EXPECT_TRUE(valid("datetime", "2024-02-29T23:59:59Z"));
    EXPECT_TRUE(valid("datetime", "2024-02-29t23:59:59.123+05:30"));
    EXPECT_TRUE(valid("datetime", "2024-02-29T10:00:00x5Z"));  // its '.' is any character
    EXPECT_FALSE(valid("datetime", "2024-02-29T24:00:00Z"));
    EXPECT_FALSE(valid("datetime", "2024-02-29T10:00:00"));
    EXPECT_FALSE(valid("datetime", "2024-02-29 10:00:00Z"));
    EXPECT_EQ(detail::validateFormat("datetime", "x"), Messages{"invalid datetime"});
}

}  // namespace
}  // namespace numadra::dracel
