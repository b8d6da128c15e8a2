// Semantic versions: strict semver 2.0.0 parsing, the Kubernetes normalize mode, precedence and
// equality.

#include "numadra/dracel/semver.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace numadra::dracel {
namespace {

Semver v(std::string_view text, Semver::Mode mode = Semver::Mode::Strict) {
    auto parsed = Semver::parse(text, mode);
    EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error().message);
    return parsed.ok() ? *parsed : Semver();
}

TEST(SemverStrict, AcceptsSemver200) {
    for (const char* text :
         {"0.0.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7",
          "1.0.0-x.7.z.92", "1.0.0-x-y-z.--", "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85",
          "1.0.0+21AF26D3----117B344092BD", "1.0.0-alpha+001", "18446744073709551615.0.0"}) {
        EXPECT_TRUE(Semver::parse(text).ok()) << text;
    }
}

TEST(SemverStrict, RejectsEverythingElse) {
    for (const char* text : {"",
                             "1",
                             "1.2",
                             "v1.2.3",
                             "V1.2.3",
                             "01.2.3",
                             "1.02.3",
                             "1.2.03",
                             "1.2.3-01",
                             "1.2.3-",
                             "1.2.3+",
                             "1.2.3-alpha..1",
                             "1.2.3+build..1",
                             "1.2.3-al_pha",
                             "1.2.3+b@d",
                             " 1.2.3",
                             "1.2.3 ",
                             "a.b.c",
                             "1.2.3.4",
                             "-1.2.3",
                             "1.-2.3",
                             "1.2.x",
                             "18446744073709551616.0.0",
                             "1.2.3-alpha+b+c",
                             "1..3"}) {
        EXPECT_FALSE(Semver::parse(text).ok()) << text;
    }
}

TEST(SemverStrict, Parts) {
    const Semver version = v("1.22.333-rc.1+build.7");
    EXPECT_EQ(version.major(), 1u);
    EXPECT_EQ(version.minor(), 22u);
    EXPECT_EQ(version.patch(), 333u);
    EXPECT_EQ(version.text(), "1.22.333-rc.1+build.7");
    EXPECT_EQ(version.toString(), "1.22.333-rc.1+build.7");
}

TEST(SemverStrict, ErrorsNameTheText) {
    const auto parsed = Semver::parse("1.0");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message,
              "invalid semver \"1.0\": No Major.Minor.Patch elements found");
    const auto zeros = Semver::parse("01.0.0");
    ASSERT_FALSE(zeros.ok());
    EXPECT_NE(zeros.error().message.find("leading zeroes"), std::string::npos);
}

TEST(SemverNormalize, StripsVPadsAndDropsLeadingZeros) {
    const auto n = Semver::Mode::Normalize;
    EXPECT_EQ(v("v1.2.3", n).toString(), "1.2.3");
    EXPECT_EQ(v("1", n).toString(), "1.0.0");
    EXPECT_EQ(v("v1.2", n).toString(), "1.2.0");
    EXPECT_EQ(v("01.02.03", n).toString(), "1.2.3");
    EXPECT_EQ(v("v00.1", n).toString(), "0.1.0");
    EXPECT_EQ(v("1.0.0-rc.1+build", n).toString(), "1.0.0-rc.1+build");
    EXPECT_EQ(v("1.2.0-rc.1", n).toString(), "1.2.0-rc.1");
    EXPECT_EQ(v("v1.2", n).text(), "v1.2");  // the original text is kept
}

TEST(SemverNormalize, StillRejectsWhatCannotBeNormalized) {
    const auto n = Semver::Mode::Normalize;
    EXPECT_FALSE(Semver::parse("1-alpha", n).ok());  // short versions cannot carry a pre-release
    EXPECT_FALSE(Semver::parse("1.2+build", n).ok());
    EXPECT_FALSE(Semver::parse("vv1.2.3", n).ok());
    EXPECT_FALSE(Semver::parse(" 1.2.3", n).ok());  // no whitespace trimming
    EXPECT_FALSE(Semver::parse("1.2.3.4", n).ok());
    EXPECT_FALSE(Semver::parse("", n).ok());
    EXPECT_FALSE(Semver::parse("1.2.3-01", n).ok());
}

TEST(SemverPrecedence, FollowsSemver200) {
    // The ordered example of semver.org, then the numeric parts.
    const std::vector<std::string> ordered{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                                           "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                                           "1.0.0-rc.1",  "1.0.0",         "1.0.1",
                                           "1.1.0",       "1.10.0",        "2.0.0",
                                           "10.0.0"};
    for (std::size_t i = 0; i < ordered.size(); ++i) {
        for (std::size_t j = 0; j < ordered.size(); ++j) {
            const int expected = i < j ? -1 : (i > j ? 1 : 0);
            EXPECT_EQ(v(ordered[i]).compare(v(ordered[j])), expected)
                << ordered[i] << " vs " << ordered[j];
        }
    }
}

TEST(SemverPrecedence, NumericIdentifiersBeforeAlphanumericOnes) {
    EXPECT_EQ(v("1.0.0-1").compare(v("1.0.0-a")), -1);
    EXPECT_EQ(v("1.0.0-9").compare(v("1.0.0-10")), -1);   // numerically
    EXPECT_EQ(v("1.0.0-a9").compare(v("1.0.0-a10")), 1);  // in ASCII order
    EXPECT_EQ(v("1.0.0-Z").compare(v("1.0.0-a")), -1);
}

TEST(SemverEquality, IgnoresBuildMetadata) {
    EXPECT_EQ(v("1.0.0+a"), v("1.0.0+b"));
    EXPECT_EQ(v("1.0.0+a").compare(v("1.0.0")), 0);
    EXPECT_TRUE(v("1.0.0-rc.1+x").equals(v("1.0.0-rc.1")));
    EXPECT_FALSE(v("1.0.0-rc.1") == v("1.0.0"));
    EXPECT_EQ(v("v1.2", Semver::Mode::Normalize), v("1.2.0"));
}

TEST(SemverOpaque, TypeNameAndDebugString) {
    EXPECT_EQ(v("1.2.3").typeName(), "kubernetes.Semver");
    EXPECT_EQ(v("1.2.3").debugString(), "semver(\"1.2.3\")");
}

}  // namespace
}  // namespace numadra::dracel
