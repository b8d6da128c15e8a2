// The DRA CEL environment's functions: the Quantity and Semver libraries, includes(), the
// Kubernetes lists and regex libraries, evaluated through the interpreter.

#include "numadra/dracel/environment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace numadra::dracel {
namespace {

// The result as cel::toString prints it ("true", "3", "error(...)"), or "compile error: ...".
std::string eval(const std::string& expr) {
    auto program = cel::Program::compile(expr);
    if (!program)
        return "compile error: " + program.error().message;
    return cel::toString(program->evaluate(cel::Activation{}, draEnvironment()));
}

// True when the expression evaluates to an error whose message contains `part`.
::testing::AssertionResult failsWith(const std::string& expr, const std::string& part) {
    const std::string result = eval(expr);
    if (result.rfind("error(", 0) == 0 && result.find(part) != std::string::npos)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << expr << " -> " << result << ", wanted an error with '" << part << "'";
}

// A list literal [1, 2, ..., n].
std::string listOf(int n) {
    std::string out = "[";
    for (int i = 1; i <= n; ++i)
        out += (i > 1 ? ", " : "") + std::to_string(i);
    return out + "]";
}

TEST(DraEnvironment, IsBuiltOnceWithTheCostLimit) {
    EXPECT_EQ(&draEnvironment(), &draEnvironment());
    EXPECT_EQ(draEnvironment().costLimit, 1'000'000);
}

TEST(QuantityLibrary, ParsesAndChecks) {
    EXPECT_EQ(eval("isQuantity('1.5Gi')"), "true");
    EXPECT_EQ(eval("isQuantity('200K')"), "false");
    EXPECT_EQ(eval("isQuantity('')"), "false");
    EXPECT_EQ(eval("type(quantity('1Gi')) == type(quantity('1'))"), "true");
    EXPECT_TRUE(failsWith("quantity('200K')", "\"200K\""));
    EXPECT_TRUE(failsWith("quantity(1)", "no such overload"));
}

TEST(QuantityLibrary, EqualityIsSemantic) {
    EXPECT_EQ(eval("quantity('1Gi') == quantity('1024Mi')"), "true");
    EXPECT_EQ(eval("quantity('1Gi') != quantity('1G')"), "true");
    EXPECT_EQ(eval("quantity('500m') in [quantity('1'), quantity('0.5')]"), "true");
    EXPECT_EQ(eval("quantity('1') == 1"), "false");
}

TEST(QuantityLibrary, IntegerAndFloat) {
    EXPECT_EQ(eval("quantity('50').isInteger()"), "true");
    EXPECT_EQ(eval("quantity('50.5').isInteger()"), "false");
    EXPECT_EQ(eval("quantity('50').asInteger()"), "50");
    EXPECT_EQ(eval("quantity('1Ki').asInteger()"), "1024");
    EXPECT_TRUE(failsWith("quantity('50.5').asInteger()", "cannot convert value to integer"));
    EXPECT_TRUE(failsWith("quantity('10E').asInteger()", "cannot convert value to integer"));
    EXPECT_EQ(eval("quantity('50.5').asApproximateFloat()"), "50.5");
}

TEST(QuantityLibrary, Sign) {
    EXPECT_EQ(eval("quantity('-50').sign()"), "-1");
    EXPECT_EQ(eval("quantity('0').sign()"), "0");
    EXPECT_EQ(eval("quantity('1n').sign()"), "1");
}

TEST(QuantityLibrary, AddAndSubWithQuantitiesAndInts) {
    EXPECT_EQ(eval("quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi')"), "true");
    EXPECT_EQ(eval("quantity('50k').add(20) == quantity('50020')"), "true");
    EXPECT_EQ(eval("quantity('50k').sub(quantity('20k')) == quantity('30k')"), "true");
    EXPECT_EQ(eval("quantity('50k').sub(50000).sign()"), "0");
    EXPECT_EQ(eval("quantity('1').sub(2).sign()"), "-1");
    EXPECT_TRUE(failsWith("quantity('1').add('x')", "no such overload"));
    EXPECT_EQ(eval("quantity('170000000000000000000000000000').add("
                   "quantity('170000000000000000000000000000')) == "
                   "quantity('340000000000000000000000000000')"),
              "true");
    EXPECT_TRUE(failsWith("quantity('1e5000').add(1)", "needs more digits"));
}

TEST(QuantityLibrary, Comparisons) {
    EXPECT_EQ(eval("quantity('1Gi').isGreaterThan(quantity('1G'))"), "true");
    EXPECT_EQ(eval("quantity('1G').isLessThan(quantity('1Gi'))"), "true");
    EXPECT_EQ(eval("quantity('1Gi').isLessThan(quantity('1Gi'))"), "false");
    EXPECT_EQ(eval("quantity('1Gi').compareTo(quantity('1024Mi'))"), "0");
    EXPECT_EQ(eval("quantity('1').compareTo(quantity('2'))"), "-1");
    EXPECT_EQ(eval("quantity('3').compareTo(quantity('2'))"), "1");
    EXPECT_TRUE(failsWith("quantity('1').compareTo(semver('1.0.0'))", "no such overload"));
}

TEST(QuantityLibrary, HasNoOrderingOperators) {
    EXPECT_TRUE(failsWith("quantity('1') < quantity('2')",
                          "no such overload: _<_(kubernetes.Quantity, kubernetes.Quantity)"));
    EXPECT_TRUE(failsWith("quantity('1') >= quantity('2')", "no such overload"));
    EXPECT_TRUE(failsWith("quantity('1') + quantity('2')", "no such overload"));
}

TEST(SemverLibrary, ParsesStrictlyUnlessNormalizing) {
    EXPECT_EQ(eval("isSemver('1.2.3')"), "true");
    EXPECT_EQ(eval("isSemver('v1.2.3')"), "false");
    EXPECT_EQ(eval("isSemver('v1.2.3', true)"), "true");
    EXPECT_EQ(eval("isSemver('v1.2.3', false)"), "false");
    EXPECT_TRUE(failsWith("semver('v1.0.0')", "\"v1.0.0\""));
    EXPECT_EQ(eval("semver('v1.2', true) == semver('1.2.0')"), "true");
    EXPECT_EQ(eval("semver('01.02.03', true).minor()"), "2");
    EXPECT_TRUE(failsWith("semver('1.0.0', 'yes')", "no such overload"));
}

TEST(SemverLibrary, Accessors) {
    EXPECT_EQ(eval("semver('1.2.3').major()"), "1");
    EXPECT_EQ(eval("semver('1.2.3').minor()"), "2");
    EXPECT_EQ(eval("semver('1.2.3').patch()"), "3");
    EXPECT_TRUE(failsWith("quantity('1').major()", "no such overload"));
}

TEST(SemverLibrary, ComparisonsFollowPrecedence) {
    EXPECT_EQ(eval("semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))"), "true");
    EXPECT_EQ(eval("semver('1.10.0').isGreaterThan(semver('1.9.0'))"), "true");
    EXPECT_EQ(eval("semver('1.0.0-beta.11').compareTo(semver('1.0.0-beta.2'))"), "1");
    EXPECT_EQ(eval("semver('1.0.0+a').compareTo(semver('1.0.0+b'))"), "0");
}

TEST(SemverLibrary, EqualityIgnoresBuildMetadata) {
    EXPECT_EQ(eval("semver('1.0.0+a') == semver('1.0.0+b')"), "true");
    EXPECT_EQ(eval("semver('1.0.0-rc.1') == semver('1.0.0')"), "false");
}

TEST(SemverLibrary, HasNoOrderingOperators) {
    EXPECT_TRUE(failsWith("semver('1.0.0') < semver('2.0.0')",
                          "no such overload: _<_(kubernetes.Semver, kubernetes.Semver)"));
    EXPECT_TRUE(failsWith("semver('1.0.0') > semver('2.0.0')", "no such overload"));
}

TEST(Includes, ListHasAnEqualElement) {
    EXPECT_EQ(eval("[1, 2, 3].includes(2)"), "true");
    EXPECT_EQ(eval("[1, 2, 3].includes(4)"), "false");
    EXPECT_EQ(eval("['a', 'b'].includes('b')"), "true");
    EXPECT_EQ(eval("[1, 2].includes(2.0)"), "true");  // CEL's heterogeneous numeric equality
    EXPECT_EQ(eval("[semver('1.0.0+x')].includes(semver('1.0.0'))"), "true");
    EXPECT_EQ(eval("[].includes(1)"), "false");
}

TEST(Includes, ScalarIsEquality) {
    EXPECT_EQ(eval("'a'.includes('a')"), "true");
    EXPECT_EQ(eval("'a'.includes('b')"), "false");
    EXPECT_EQ(eval("5.includes(5)"), "true");
    EXPECT_EQ(eval("true.includes(1)"), "false");
    EXPECT_EQ(eval("quantity('1Gi').includes(quantity('1024Mi'))"), "true");
}

TEST(Includes, ListsOfMoreThan48ElementsAreAnError) {
    EXPECT_EQ(eval(listOf(48) + ".includes(48)"), "true");
    EXPECT_TRUE(failsWith(listOf(49) + ".includes(1)", "49"));
}

TEST(ListsLibrary, IsSorted) {
    EXPECT_EQ(eval("[1, 2, 2, 3].isSorted()"), "true");
    EXPECT_EQ(eval("[3, 1].isSorted()"), "false");
    EXPECT_EQ(eval("['a', 'b'].isSorted()"), "true");
    EXPECT_EQ(eval("[].isSorted()"), "true");
    EXPECT_EQ(eval("[1, 1.5, 2u].isSorted()"), "true");
}

TEST(ListsLibrary, Sum) {
    EXPECT_EQ(eval("[1, 2, 3].sum()"), "6");
    EXPECT_EQ(eval("[1.5, 2.5].sum()"), "4.0");
    EXPECT_EQ(eval("[1u, 2u].sum()"), "3u");
    EXPECT_EQ(eval("[].sum()"), "0");
    EXPECT_TRUE(failsWith("[9223372036854775807, 1].sum()", "overflow"));
    EXPECT_TRUE(failsWith("['a'].sum()", "no such overload"));
}

TEST(ListsLibrary, MinAndMax) {
    EXPECT_EQ(eval("[3, 1, 2].min()"), "1");
    EXPECT_EQ(eval("[3, 1, 2].max()"), "3");
    EXPECT_EQ(eval("['b', 'a'].min()"), "\"a\"");
    EXPECT_TRUE(failsWith("[].min()", "min called on empty list"));
    EXPECT_TRUE(failsWith("[].max()", "max called on empty list"));
}

// Upstream looks only for a "greater" pair: one that does not compare leaves the list sorted.
TEST(ListsLibrary, IsSortedSkipsPairsThatDoNotCompare) {
    EXPECT_EQ(eval("[0.0/0.0, 1.0].isSorted()"), "true");
    EXPECT_EQ(eval("[dyn(1), dyn('a')].isSorted()"), "true");
}

TEST(ListsLibrary, IsSortedNeedsOrderedElements) {
    EXPECT_TRUE(failsWith("[dyn([1])].isSorted()", "no such overload"));
}

TEST(ListsLibrary, MinAndMaxKeepTheFoundElementOverOneThatDoesNotCompare) {
    EXPECT_EQ(eval("[1.0, 0.0/0.0, 0.5].max()"), "1.0");
    EXPECT_EQ(eval("[dyn(2), dyn('a'), dyn(1)].min()"), "1");
}

TEST(ListsLibrary, DurationsAreSummed) {
    EXPECT_EQ(eval("string([duration('1s'), duration('2.5s')].sum())"), "\"3.5s\"");
}

TEST(ListsLibrary, SumOfDurationsOutOfRangeIsAnError) {
    EXPECT_TRUE(failsWith("[duration('9223372036s'), duration('1s')].sum()", "out of range"));
}

TEST(ListsLibrary, SumOfTimestampsIsNoSuchOverload) {
    EXPECT_TRUE(failsWith("[timestamp('2011-01-01T00:00:00Z')].sum()", "no such overload"));
}

TEST(ListsLibrary, MinAndMaxOfDurations) {
    EXPECT_EQ(eval("string([duration('1s'), duration('-3s'), duration('2s')].min())"), "\"-3s\"");
    EXPECT_EQ(eval("string([duration('1s'), duration('-3s'), duration('2s')].max())"), "\"2s\"");
}

TEST(ListsLibrary, MinAndMaxOfTimestampsCompareInstants) {
    const std::string list =
        "[timestamp('2011-01-02T00:00:00Z'), timestamp('2011-01-01T00:00:00+01:00')]";
    EXPECT_EQ(eval("string(" + list + ".min())"), "\"2011-01-01T00:00:00+01:00\"");
    EXPECT_EQ(eval("string(" + list + ".max())"), "\"2011-01-02T00:00:00Z\"");
}

TEST(ListsLibrary, IsSortedOnDurationsAndTimestamps) {
    EXPECT_EQ(eval("[duration('1s'), duration('2s')].isSorted()"), "true");
    EXPECT_EQ(eval("[duration('2s'), duration('1s')].isSorted()"), "false");
    EXPECT_EQ(eval("[timestamp('2011-01-02T00:00:00Z'), timestamp(0)].isSorted()"), "false");
}

TEST(ListsLibrary, SortOrdersDurationsAndTimestamps) {
    EXPECT_EQ(eval("[duration('2s'), duration('1s')].sort() == [duration('1s'), duration('2s')]"),
              "true");
    EXPECT_EQ(eval("[timestamp(2), timestamp(1)].sort() == [timestamp(1), timestamp(2)]"), "true");
}

TEST(ListsLibrary, SortRefusesElementsOfTwoTypes) {
    EXPECT_TRUE(failsWith("[dyn(duration('1s')), dyn(1)].sort()", "must have the same type"));
}

TEST(ListsLibrary, SortByOrdersByDurationKeys) {
    EXPECT_EQ(eval("[2, 1].sortBy(x, x == 1 ? duration('1s') : duration('2s'))"), "[1, 2]");
}

// ---- strings.quote() ----------------------------------------------------------------------------

// The result of strings.quote(s) for a string bound as `s` (any bytes, even invalid UTF-8).
std::string quote(const std::string& text) {
    auto program = cel::Program::compile("strings.quote(s)");
    if (!program)
        return "compile error: " + program.error().message;
    cel::Activation activation;
    activation.bind("s", cel::Value(text));
    const cel::Value result = program->evaluate(activation, draEnvironment());
    const auto* quoted = std::get_if<std::string>(&result.v);
    return quoted ? *quoted : cel::toString(result);
}

TEST(StringsQuote, WrapsInDoubleQuotes) {
    EXPECT_EQ(quote("verbatim"), "\"verbatim\"");
    EXPECT_EQ(quote(""), "\"\"");
}

TEST(StringsQuote, EscapesCelEscapeSequences) {
    EXPECT_EQ(quote("\a\b\f\n\r\t\v"), R"("\a\b\f\n\r\t\v")");
}

TEST(StringsQuote, EscapesBackslashAndDoubleQuote) {
    EXPECT_EQ(quote(R"(a\b"c)"), R"("a\\b\"c")");
}

TEST(StringsQuote, KeepsOtherControlCharactersAndUnicode) {
    EXPECT_EQ(quote(std::string("a\0b\x7F", 4)), std::string("\"a\0b\x7F\"", 6));
    EXPECT_EQ(quote("ta©o©αT😀"), "\"ta©o©αT😀\"");
}

// Go reads each byte that starts no valid sequence as U+FFFD.
TEST(StringsQuote, ReplacesEachInvalidByteWithTheReplacementCharacter) {
    EXPECT_EQ(quote(std::string("a\xFF") + "b"), "\"a\uFFFDb\"");
    EXPECT_EQ(quote("\xE2\x82"), "\"\uFFFD\uFFFD\"");            // truncated
    EXPECT_EQ(quote("\xED\xA0\x80"), "\"\uFFFD\uFFFD\uFFFD\"");  // a surrogate
    EXPECT_EQ(quote("\xC0\xAF"), "\"\uFFFD\uFFFD\"");            // overlong
}

TEST(StringsQuote, AnythingButAStringIsNoSuchOverload) {
    EXPECT_TRUE(failsWith("strings.quote(1)", "no such overload"));
}

TEST(ListsLibrary, IndexOfAndLastIndexOf) {
    EXPECT_EQ(eval("[1, 2, 1].indexOf(1)"), "0");
    EXPECT_EQ(eval("[1, 2, 1].lastIndexOf(1)"), "2");
    EXPECT_EQ(eval("[1, 2].indexOf(3)"), "-1");
    EXPECT_EQ(eval("['a', 'b'].indexOf('b')"), "1");
    EXPECT_EQ(eval("'abcb'.indexOf('b')"), "1");  // the strings extension still answers strings
    EXPECT_EQ(eval("'abcb'.lastIndexOf('b')"), "3");
}

TEST(RegexLibrary, Find) {
    EXPECT_EQ(eval("'abc 123 def 456'.find('[0-9]+')"), "\"123\"");
    EXPECT_EQ(eval("'abc'.find('[0-9]+')"), "\"\"");
    EXPECT_TRUE(failsWith("'abc'.find('(')", "Illegal regex"));
}

TEST(RegexLibrary, FindAll) {
    EXPECT_EQ(eval("'abc 123 def 456'.findAll('[0-9]+')"), "[\"123\", \"456\"]");
    EXPECT_EQ(eval("'abc 123 def 456'.findAll('[0-9]+', 1)"), "[\"123\"]");
    EXPECT_EQ(eval("'abc 123 def 456'.findAll('[0-9]+', 0)"), "[]");
    EXPECT_EQ(eval("'abc 123 def 456'.findAll('[0-9]+', -1)"), "[\"123\", \"456\"]");
    EXPECT_EQ(eval("'abc'.findAll('x')"), "[]");
}

TEST(RegexLibrary, FindAllTreatsEmptyMatchesAsGo) {
    EXPECT_EQ(eval("'abc'.findAll('x*')"), "[\"\", \"\", \"\", \"\"]");
    EXPECT_EQ(eval("'aaa'.findAll('a*')"), "[\"aaa\"]");
    EXPECT_EQ(eval("'baaab'.findAll('a*')"), "[\"\", \"aaa\", \"\"]");
    EXPECT_EQ(eval("'aa'.findAll('^a')"), "[\"a\"]");  // ^ anchors at the text's start only
}

TEST(RegexLibrary, SharedAcrossThreads) {
    auto program = cel::Program::compile("'k' + string(n) + 'v'.find('[a-z]+' + string(n)) == ''");
    ASSERT_TRUE(program.ok());
    std::vector<std::thread> threads;
    std::vector<int> failures(4, 0);
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 300; ++i) {
                cel::Activation activation;
                activation.bind("n", cel::Value(std::int64_t{(i * 7 + t) % 300}));
                const cel::Value result = program->evaluate(activation, draEnvironment());
                if (!(result == cel::Value(false)))
                    ++failures[static_cast<std::size_t>(t)];
            }
        });
    }
    for (auto& thread : threads)
        thread.join();
    EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST(SetsExtension, ContainsEquivalentIntersects) {
    EXPECT_EQ(eval("sets.contains([1, 2, 3], [3, 1])"), "true");
    EXPECT_EQ(eval("sets.contains([1, 2], [4])"), "false");
    EXPECT_EQ(eval("sets.contains([1], [])"), "true");
    EXPECT_EQ(eval("sets.equivalent([1, 2, 2], [2, 1])"), "true");
    EXPECT_EQ(eval("sets.equivalent([1], [1, 2])"), "false");
    EXPECT_EQ(eval("sets.intersects([1, 2], [2, 3])"), "true");
    EXPECT_EQ(eval("sets.intersects([1], [])"), "false");
}

TEST(ListsExtension, DistinctFlattenRangeReverseSliceSort) {
    EXPECT_EQ(eval("[1, 2, 1, 3, 2].distinct()"), "[1, 2, 3]");
    EXPECT_EQ(eval("[[1], [2, [3]]].flatten()"), "[1, 2, [3]]");
    EXPECT_EQ(eval("[[1], [2, [3]]].flatten(2)"), "[1, 2, 3]");
    EXPECT_TRUE(failsWith("[[1]].flatten(-1)", "level must be non-negative"));
    EXPECT_EQ(eval("lists.range(3)"), "[0, 1, 2]");
    EXPECT_EQ(eval("lists.range(0)"), "[]");
    EXPECT_TRUE(failsWith("lists.range(1000000000)", "cost limit"));
    EXPECT_EQ(eval("[1, 2, 3].reverse()"), "[3, 2, 1]");
    EXPECT_EQ(eval("[1, 2, 3, 4].slice(1, 3)"), "[2, 3]");
    EXPECT_TRUE(failsWith("[1].slice(0, 2)", "list is length 1"));
    EXPECT_TRUE(failsWith("[1].slice(1, 0)", "start index"));
    EXPECT_EQ(eval("[3, 1, 2].sort()"), "[1, 2, 3]");
    EXPECT_EQ(eval("['b', 'a'].sort()"), "[\"a\", \"b\"]");
    EXPECT_TRUE(failsWith("[1, 'a'].sort()", "same type"));
    EXPECT_TRUE(failsWith("'abc'.reverse()", "no such overload"));  // strings ext v2: none
}

}  // namespace
}  // namespace numadra::dracel

namespace numadra::dracel {
namespace {

// The IP and CIDR libraries, with Go's net/netip semantics (tests/upstream/cel judges them
// against upstream's too).
TEST(IpLibrary, ParsesAsNetipDoes) {
    EXPECT_EQ(eval("isIP('10.0.0.7') && isIP('2001:db8::1')"), "true");
    EXPECT_EQ(eval("isIP('01.2.3.4')"), "false");  // a leading zero
    EXPECT_EQ(eval("isIP('1.2.3')"), "false");
    EXPECT_EQ(eval("isIP('256.0.0.1')"), "false");
    EXPECT_EQ(eval("isIP('1.2.3.4.5') || isIP('1.2.3.') || isIP('.1.2.3')"), "false");
    EXPECT_TRUE(failsWith("ip('fe80::1%eth0')", "with zone value is not allowed"));
    EXPECT_TRUE(failsWith("ip('::ffff:1.2.3.4')", "IPv4-mapped IPv6 address"));
}

TEST(IpLibrary, FamilyAndRanges) {
    EXPECT_EQ(eval("ip('10.0.0.1').family() == 4 && ip('::1').family() == 6"), "true");
    EXPECT_EQ(eval("ip('127.1.2.3').isLoopback() && ip('::1').isLoopback()"), "true");
    EXPECT_EQ(eval("ip('fe80::1').isLinkLocalUnicast() && ip('169.254.1.1').isLinkLocalUnicast()"),
              "true");
    EXPECT_EQ(
        eval("ip('224.0.0.1').isLinkLocalMulticast() && ip('ff02::1').isLinkLocalMulticast()"),
        "true");
    EXPECT_EQ(eval("ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified()"), "true");
    // Private addresses are global unicast in Go; the broadcast address is not.
    EXPECT_EQ(eval("ip('10.0.0.1').isGlobalUnicast()"), "true");
    EXPECT_EQ(eval("ip('255.255.255.255').isGlobalUnicast()"), "false");
}

TEST(IpLibrary, PrintsTheCanonicalForm) {
    EXPECT_EQ(eval("string(ip('2001:0db8:0000:0000:0000:0000:0000:0001'))"), "\"2001:db8::1\"");
    EXPECT_EQ(eval("string(ip('2001:db8:0:0:1:0:0:1'))"), "\"2001:db8::1:0:0:1\"");
    EXPECT_EQ(eval("ip.isCanonical('2001:DB8::1')"), "false");
    EXPECT_EQ(eval("ip.isCanonical('10.0.0.1')"), "true");
    EXPECT_EQ(eval("ip('1.2.3.4') == ip('1.2.3.4') && ip('1.2.3.4') != ip('1.2.3.5')"), "true");
}

TEST(CidrLibrary, ContainsMasksAndMeasures) {
    EXPECT_EQ(eval("cidr('10.0.0.0/24').containsIP('10.0.0.7')"), "true");
    EXPECT_EQ(eval("cidr('10.0.0.0/24').containsIP(ip('10.0.1.7'))"), "false");
    EXPECT_EQ(eval("cidr('::/0').containsIP('1.2.3.4')"), "false");  // families differ
    EXPECT_EQ(eval("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')"), "true");
    EXPECT_EQ(eval("cidr('10.0.0.0/16').containsCIDR(cidr('10.0.0.0/8'))"), "false");
    EXPECT_EQ(eval("cidr('10.0.0.1/24').masked() == cidr('10.0.0.0/24')"), "true");
    EXPECT_EQ(eval("cidr('10.0.0.1/24').ip() == ip('10.0.0.1')"), "true");
    EXPECT_EQ(eval("cidr('192.168.0.0/24').prefixLength()"), "24");
    EXPECT_EQ(eval("string(cidr('2001:db8::/32'))"), "\"2001:db8::/32\"");
    EXPECT_EQ(eval("isCIDR('10.0.0.0/33') || isCIDR('10.0.0.0/024') || isCIDR('10.0.0.0')"),
              "false");
}

}  // namespace
}  // namespace numadra::dracel

namespace numadra::dracel {
namespace {

TEST(TimeLibrary, ParsesRfc3339AndGoDurations) {
    EXPECT_EQ(
        eval("timestamp('2026-11-24T10:00:00.5+02:00') == timestamp('2026-11-24T08:00:00.5Z')"),
        "true");
    EXPECT_EQ(
        eval("duration('1h30m') == duration('90m') && duration('1.5s') == duration('1500ms')"),
        "true");
    EXPECT_EQ(eval("duration('1us') == duration('1000ns') && duration('-2h') < duration('0')"),
              "true");
    EXPECT_TRUE(failsWith("timestamp('2026-13-01T00:00:00Z')", "not an RFC 3339 time"));
    EXPECT_TRUE(failsWith("duration('1d')", "invalid duration"));
}

TEST(TimeLibrary, ArithmeticAndRange) {
    EXPECT_EQ(eval("timestamp('2026-11-24T10:00:00Z') - timestamp('2026-11-24T09:30:00Z') == "
                   "duration('30m')"),
              "true");
    EXPECT_EQ(eval("timestamp('2026-11-24T10:00:00Z') + duration('1h') == "
                   "timestamp('2026-11-24T11:00:00Z')"),
              "true");
    EXPECT_TRUE(failsWith("timestamp('9999-12-31T23:59:59Z') + duration('1s')", "out of range"));
    EXPECT_TRUE(failsWith("-duration('1h')", "no such overload"));
}

TEST(TimeLibrary, GettersInUtcAndFixedOffsets) {
    const std::string t = "timestamp('2024-02-29T23:59:59.25Z')";
    EXPECT_EQ(eval(t + ".getFullYear()"), "2024");
    EXPECT_EQ(eval(t + ".getMonth()"), "1");  // 0-based
    EXPECT_EQ(eval(t + ".getDate()"), "29");  // 1-based
    EXPECT_EQ(eval(t + ".getDayOfMonth()"), "28");
    EXPECT_EQ(eval(t + ".getDayOfYear()"), "59");
    EXPECT_EQ(eval(t + ".getDayOfWeek()"), "4");  // a Thursday
    EXPECT_EQ(eval(t + ".getMilliseconds()"), "250");
    EXPECT_EQ(eval(t + ".getHours('+05:30')"), "5");
    EXPECT_EQ(eval(t + ".getMinutes('-00:30')"), "29");
    // IANA names from the system's zoneinfo: Berlin is UTC+1 in winter, UTC+2 in summer.
    EXPECT_EQ(eval(t + ".getHours('Europe/Berlin')"), "0");
    EXPECT_EQ(eval("timestamp('2026-07-01T10:00:00Z').getHours('Europe/Berlin')"), "12");
    EXPECT_EQ(eval("timestamp('2026-07-01T10:00:00Z').getHours('America/New_York')"), "6");
    EXPECT_TRUE(failsWith(t + ".getHours('Mars/Olympus_Mons')", "unknown time zone"));
    EXPECT_EQ(eval("duration('2h30m').getMinutes()"), "150");
}

// cel-go's timeZone(): with a colon, hours and minutes each read by strconv.Atoi (a sign is
// optional), minutes in [0, 59], a leading '-' subtracting them.
TEST(TimeLibrary, FixedOffsetsAsCelGoReadsThem) {
    const std::string t = "timestamp('2023-01-01T00:00:00Z')";
    EXPECT_EQ(eval(t + ".getHours('01:00')"), "1");
    EXPECT_EQ(eval(t + ".getHours('+01:00')"), "1");
    EXPECT_EQ(eval(t + ".getHours('-08:00')"), "16");
    EXPECT_EQ(eval(t + ".getMinutes('1:5')"), "5");
    EXPECT_EQ(eval(t + ".getMinutes('+1:+5')"), "5");
    EXPECT_EQ(eval(t + ".getHours('-0:30')"), "23");
    EXPECT_EQ(eval(t + ".getMinutes('-0:30')"), "30");
    EXPECT_EQ(eval(t + ".getHours('0001:00')"), "1");
    // Offsets beyond a day, as Go's FixedZone takes them: 100 hours on is 2023-01-05T04:00.
    EXPECT_EQ(eval(t + ".getDate('100:00')"), "5");
    EXPECT_EQ(eval(t + ".getHours('100:00')"), "4");
    // Hours whose offset overflows time.Duration wrap as Go's int64 arithmetic does
    // (upstream's answers).
    EXPECT_EQ(eval(t + ".getFullYear('2562048:00')"), "1730");
    EXPECT_EQ(eval(t + ".getDate('2562048:00')"), "22");
    EXPECT_EQ(eval(t + ".getHours('2562048:00')"), "0");
    EXPECT_EQ(eval(t + ".getMinutes('2562048:00')"), "25");
    EXPECT_EQ(eval(t + ".getSeconds('2562048:00')"), "27");
}

TEST(TimeLibrary, FixedOffsetErrorsAsCelGoGivesThem) {
    const std::string t = "timestamp('2023-01-01T00:00:00Z')";
    EXPECT_TRUE(failsWith(t + ".getHours('01:60')", "timezone offset minutes out of range"));
    EXPECT_TRUE(failsWith(t + ".getHours('01:-1')", "timezone offset minutes out of range"));
    EXPECT_TRUE(failsWith(t + ".getHours(':30')", "strconv.Atoi: parsing \"\": invalid syntax"));
    EXPECT_TRUE(failsWith(t + ".getHours('1:')", "invalid syntax"));
    EXPECT_TRUE(failsWith(t + ".getHours('+:00')", "invalid syntax"));
    EXPECT_TRUE(failsWith(t + ".getHours('a:00')", "invalid syntax"));
    EXPECT_TRUE(failsWith(t + ".getHours('1:2:3')", "parsing \"2:3\": invalid syntax"));
    EXPECT_TRUE(failsWith(t + ".getHours(' 1:00')", "invalid syntax"));
    EXPECT_TRUE(failsWith(t + ".getHours('9223372036854775808:00')", "value out of range"));
    EXPECT_TRUE(failsWith(t + ".getHours('99999999999999999999x:00')", "value out of range"));
}

// Without a colon, a name as Go's time.LoadLocation reads it.
TEST(TimeLibrary, ZoneNamesAsGoLoadsThem) {
    const std::string t = "timestamp('2023-01-01T00:00:00Z')";
    EXPECT_EQ(eval(t + ".getHours('')"), "0");
    EXPECT_EQ(eval(t + ".getHours('UTC')"), "0");
    EXPECT_EQ(eval(t + ".getHours('Etc/GMT-3')"), "3");
    EXPECT_TRUE(failsWith(t + ".getHours('Z')", "unknown time zone Z"));
    EXPECT_TRUE(failsWith(t + ".getHours('utc')", "unknown time zone utc"));
    EXPECT_TRUE(failsWith(t + ".getHours('../../etc/passwd')", "invalid location name"));
    EXPECT_TRUE(failsWith(t + ".getHours('/etc/localtime')", "invalid location name"));
}

// "Local" is the process's zone, as Go's initLocal reads $TZ.
TEST(TimeLibrary, LocalIsTheZoneOfTZ) {
    const char* saved = std::getenv("TZ");
    const std::string before = saved ? saved : "";
    const std::string hours = "timestamp('2023-01-01T00:00:00Z').getHours('Local')";
    setenv("TZ", "Asia/Tokyo", 1);
    EXPECT_EQ(eval(hours), "9");
    setenv("TZ", ":Asia/Kolkata", 1);
    EXPECT_EQ(eval(hours), "5");
    setenv("TZ", "/usr/share/zoneinfo/Etc/GMT+2", 1);
    EXPECT_EQ(eval(hours), "22");
    setenv("TZ", "", 1);  // empty: UTC
    EXPECT_EQ(eval(hours), "0");
    setenv("TZ", "Nowhere/Zone", 1);  // not a zone: UTC
    EXPECT_EQ(eval(hours), "0");
    if (saved)
        setenv("TZ", before.c_str(), 1);
    else
        unsetenv("TZ");
}

// optional.ofNonZeroValue: a zero duration, and the timestamp of Go's zero time.Time
// (0001-01-01T00:00:00Z, in any offset), are zero values; the Unix epoch is not.
TEST(TimeLibrary, ZeroTimestampAndDurationAreZeroValues) {
    EXPECT_EQ(eval("optional.ofNonZeroValue(duration('0s')).hasValue()"), "false");
    EXPECT_EQ(eval("optional.ofNonZeroValue(duration('-0s')).hasValue()"), "false");
    EXPECT_EQ(eval("optional.ofNonZeroValue(duration('1ns')).hasValue()"), "true");
    EXPECT_EQ(eval("optional.ofNonZeroValue(timestamp('0001-01-01T00:00:00Z')).hasValue()"),
              "false");
    EXPECT_EQ(eval("optional.ofNonZeroValue(timestamp('0001-01-01T01:00:00+01:00')).hasValue()"),
              "false");
    EXPECT_EQ(eval("optional.ofNonZeroValue(timestamp('0001-01-01T00:00:00.000000001Z'))"
                   ".hasValue()"),
              "true");
    EXPECT_EQ(eval("optional.ofNonZeroValue(timestamp(0)).hasValue()"), "true");
    EXPECT_EQ(eval("optional.ofNonZeroValue(timestamp('1970-01-01T00:00:00Z')).hasValue()"),
              "true");
}

TEST(TimeLibrary, PrintsAsCelGoDoes) {
    EXPECT_EQ(eval("string(timestamp('2026-11-24T10:00:00.120Z'))"), "\"2026-11-24T10:00:00.12Z\"");
    // A timestamp prints in the offset it was written in (Go keeps it); equality is the instant.
    EXPECT_EQ(eval("string(timestamp('2026-11-24T10:00:00+01:00'))"),
              "\"2026-11-24T10:00:00+01:00\"");
    EXPECT_EQ(eval("timestamp('2026-11-24T10:00:00+01:00') == timestamp('2026-11-24T09:00:00Z')"),
              "true");
    EXPECT_TRUE(failsWith("timestamp('2026-11-24T10:00:00z')", "not an RFC 3339 time"));
    EXPECT_EQ(eval("string(duration('1h30m'))"), "\"5400s\"");
    EXPECT_EQ(eval("string(duration('-1.5s'))"), "\"-1.5s\"");
    EXPECT_EQ(eval("int(timestamp('1970-01-01T00:01:00Z'))"), "60");
    EXPECT_EQ(eval("timestamp(60) == timestamp('1970-01-01T00:01:00Z')"), "true");
    // The other libraries' string() still works beside this one's.
    EXPECT_EQ(eval("string(ip('10.0.0.1'))"), "\"10.0.0.1\"");
}

}  // namespace
}  // namespace numadra::dracel

namespace numadra::dracel {
namespace {

TEST(ListsLibrary, FirstAndLastAreOptionals) {
    EXPECT_EQ(eval("[1, 2].first() == optional.of(1) && [1, 2].last().value() == 2"), "true");
    EXPECT_EQ(eval("[].first().hasValue() || [].last().hasValue()"), "false");
    EXPECT_TRUE(failsWith("'ab'.first()", "no such overload"));
}

}  // namespace
}  // namespace numadra::dracel

namespace numadra::dracel {
namespace {

// format("%s") prints timestamps and durations as string() does, and as CEL literals inside a
// list (cel-go's strings extension version 2).
TEST(FormatLibrary, PrintsTimestampsAndDurations) {
    EXPECT_EQ(eval("'%s'.format([timestamp('2023-02-03T23:31:20+00:00')])"),
              "\"2023-02-03T23:31:20Z\"");
    EXPECT_EQ(eval("'%s'.format([duration('1h45m47s')])"), "\"6347s\"");
    EXPECT_EQ(eval("'%s'.format([[timestamp('2023-02-03T23:31:20Z'), duration('1.5s')]])"),
              "\"[timestamp(\\\"2023-02-03T23:31:20Z\\\"), duration(\\\"1.5s\\\")]\"");
}

TEST(FormatLibrary, RefusesHostValuesItCannotPrint) {
    EXPECT_TRUE(failsWith("'%s'.format([quantity('1')])", "was given kubernetes.Quantity"));
    EXPECT_TRUE(failsWith("'%s'.format([[semver('1.0.0')]])", "no formatting function"));
}

// Quantities beyond int64 with a power of ten are kept with arbitrary precision, as
// Kubernetes keeps them in an inf.Dec.
TEST(QuantityLibrary, BigValuesAreNotIntegers) {
    EXPECT_EQ(eval("quantity('9999999999999999999999999999999999999G').isInteger()"), "false");
    EXPECT_TRUE(failsWith("quantity('1e40').add(1).asInteger()", "cannot convert"));
}

TEST(QuantityLibrary, BigValuesCompareExactly) {
    EXPECT_EQ(eval("quantity('1e40').add(1).compareTo(quantity('"
                   "10000000000000000000000000000000000000001'))"),
              "0");
    EXPECT_EQ(eval("quantity('1e40').add(2).isGreaterThan(quantity('1e40'))"), "true");
    EXPECT_EQ(eval("quantity('-1e40').add(1).isLessThan(quantity('-1e40'))"), "false");
    EXPECT_EQ(eval("quantity('1e40') == quantity('10e39')"), "true");
}

TEST(QuantityLibrary, BigValuesConvertToTheNearestDouble) {
    EXPECT_EQ(eval("quantity('1e400').asApproximateFloat()"), "+Inf");
    EXPECT_EQ(eval("quantity('1e-400').asApproximateFloat()"), "1e-09");  // rounded up to 1n
    EXPECT_EQ(eval("quantity('9999999999999999999999999999999999999G').asApproximateFloat()"),
              "1.0000000000000001e+46");
}

TEST(QuantityLibrary, SumsLeavingInt64GoArbitraryPrecision) {
    EXPECT_EQ(eval("quantity('9223372036854775807').add(1).isInteger()"), "false");
    EXPECT_EQ(eval("quantity('9223372036854775807').add(quantity('1')).sub(1).isInteger()"),
              "false");
    EXPECT_EQ(
        eval("quantity('9223372036854775807').add(1).sub(1) == quantity('9223372036854775807')"),
        "true");
}

TEST(QuantityLibrary, IsIntegerFollowsTheRepresentation) {
    EXPECT_EQ(eval("quantity('1000m').isInteger()"), "false");
    EXPECT_EQ(eval("quantity('1k').asInteger()"), "1000");
    EXPECT_EQ(eval("quantity('1e4294967296').asInteger()"), "1");  // the exponent keeps 32 bits
}

}  // namespace
}  // namespace numadra::dracel
