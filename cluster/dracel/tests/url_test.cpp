// The Kubernetes URL library (url, isURL, the getters) with Go's net/url semantics, evaluated
// through the interpreter. The expected errors are Go's own wording, as upstream reports them.

#include "../url.hpp"

#include <gtest/gtest.h>

#include <string>

#include "numadra/dracel/environment.hpp"

namespace numadra::dracel {
namespace {

// The result as cel::toString prints it ("true", "\"x\"", "error(...)").
std::string eval(const std::string& expr) {
    auto program = cel::Program::compile(expr);
    if (!program)
        return "compile error: " + program.error().message;
    return cel::toString(program->evaluate(cel::Activation{}, draEnvironment()));
}

std::string errorOf(const std::string& expr) {
    const auto program = cel::Program::compile(expr);
    if (!program)
        return "compile error: " + program.error().message;
    const cel::Value result = program->evaluate(cel::Activation{}, draEnvironment());
    return result.isError() ? result.as<cel::ErrorValue>().message : "no error";
}

TEST(UrlLibrary, ReadsTheParts) {
    const std::string u = "url('https://user:pw@example.com:8443/a%20b/c?x=1&y=2&x=3#frag')";
    EXPECT_EQ(eval(u + ".getScheme()"), "\"https\"");
    EXPECT_EQ(eval(u + ".getHost()"), "\"example.com:8443\"");
    EXPECT_EQ(eval(u + ".getHostname()"), "\"example.com\"");
    EXPECT_EQ(eval(u + ".getPort()"), "\"8443\"");
    EXPECT_EQ(eval(u + ".getEscapedPath()"), "\"/a%20b/c\"");
}

TEST(UrlLibrary, QueryIsAMapOfLists) {
    EXPECT_EQ(eval("url('https://a/?x=1&y=2&x=3').getQuery() == {'x': ['1', '3'], 'y': ['2']}"),
              "true");
    EXPECT_EQ(eval("url('https://a/?a+b=c%20d').getQuery()['a b'] == ['c d']"), "true");
    EXPECT_EQ(eval("url('https://a/?k').getQuery() == {'k': ['']}"), "true");
    EXPECT_EQ(eval("size(url('https://a/').getQuery())"), "0");
}

TEST(UrlLibrary, QueryDropsMalformedPairs) {
    EXPECT_EQ(eval("url('https://a/?a=1;b=2&c=%zz&d=4').getQuery() == {'d': ['4']}"), "true");
}

TEST(UrlLibrary, Ipv6HostnameLosesItsBrackets) {
    EXPECT_EQ(eval("url('http://[::1]:80/').getHostname()"), "\"::1\"");
    EXPECT_EQ(eval("url('http://[::1]:80/').getHost()"), "\"[::1]:80\"");
    EXPECT_EQ(eval("url('http://[fe80::1%25en0]/').getHostname()"), "\"fe80::1%en0\"");
}

TEST(UrlLibrary, PortIsEmptyWithoutOne) {
    EXPECT_EQ(eval("url('http://example.com/').getPort()"), "\"\"");
    EXPECT_EQ(eval("url('http://example.com:/').getPort()"), "\"\"");
}

TEST(UrlLibrary, AbsolutePathsAreUrls) {
    EXPECT_EQ(eval("url('/just/a/path').getEscapedPath()"), "\"/just/a/path\"");
    EXPECT_EQ(eval("url('/just/a/path').getHost()"), "\"\"");
}

TEST(UrlLibrary, IsUrlTakesWhatParseRequestUriTakes) {
    EXPECT_EQ(eval("isURL('https://example.com')"), "true");
    EXPECT_EQ(eval("isURL('mailto:someone@example.com')"), "true");
    EXPECT_EQ(eval("isURL('relative/path')"), "false");
    EXPECT_EQ(eval("isURL('')"), "false");
    EXPECT_EQ(eval("isURL('http://a b')"), "false");
    EXPECT_EQ(eval("isURL('http://a\\u0001')"), "false");
}

TEST(UrlLibrary, HttpHostsHaveOneColon) {
    EXPECT_EQ(eval("isURL('http://a:1:2/')"), "false");
    EXPECT_EQ(eval("isURL('mongodb://a:1,b:2/')"), "true");
    EXPECT_EQ(eval("url('mongodb://a:1:2/').getPort()"), "\"2\"");
}

TEST(UrlLibrary, ErrorsAreGosWords) {
    const std::string prefix = "URL parse error during conversion from string: ";
    EXPECT_EQ(errorOf("url('x y')"), prefix + "parse \"x y\": invalid URI for request");
    EXPECT_EQ(errorOf("url('')"), prefix + "parse \"\": empty url");
    EXPECT_EQ(errorOf("url(':x')"), prefix + "parse \":x\": missing protocol scheme");
    EXPECT_EQ(errorOf("url('http://a b/')"),
              prefix + "parse \"http://a b/\": invalid character \" \" in host name");
    EXPECT_EQ(errorOf("url('http://a:x/')"),
              prefix + "parse \"http://a:x/\": invalid port \":x\" after host");
    EXPECT_EQ(errorOf("url('http://a/%zz')"),
              prefix + "parse \"http://a/%zz\": invalid URL escape \"%zz\"");
    EXPECT_EQ(errorOf("url('http://a\\t/')"),
              prefix + "parse \"http://a\\t/\": net/url: invalid control character in URL");
}

TEST(UrlLibrary, BracketedHostsMustBeIpv6) {
    const std::string prefix = "URL parse error during conversion from string: parse ";
    EXPECT_EQ(errorOf("url('http://[1.2.3.4]/')"),
              prefix + "\"http://[1.2.3.4]/\": invalid IP-literal");
    EXPECT_EQ(errorOf("url('http://[::1/')"), prefix + "\"http://[::1/\": missing ']' in host");
    EXPECT_EQ(errorOf("url('http://[1::2::3]/')"),
              prefix +
                  "\"http://[1::2::3]/\": invalid host: ParseAddr(\"1::2::3\"): multiple :: "
                  "in address (at \":3\")");
    EXPECT_EQ(eval("isURL('http://[::ffff:1.2.3.4]/')"), "true");
}

TEST(UrlLibrary, FragmentIsCutOff) {
    EXPECT_EQ(eval("url('https://a/p?q=1#x').getEscapedPath()"), "\"/p\"");
    EXPECT_EQ(eval("url('https://a/p#x') == url('https://a/p#x')"), "true");
    EXPECT_EQ(eval("url('https://a/p#x') == url('https://a/p')"), "false");
}

TEST(UrlLibrary, EqualityComparesTheUrlsText) {
    EXPECT_EQ(eval("url('HTTPS://a/b') == url('https://a/b')"), "true");
    EXPECT_EQ(eval("url('https://a/%62') == url('https://a/b')"), "false");
    EXPECT_EQ(eval("url('https://a/b') != url('https://a/c')"), "true");
}

TEST(UrlLibrary, TypeIsKubernetesUrl) {
    EXPECT_EQ(eval("type(url('https://a'))"), "kubernetes.URL");
}

TEST(UrlLibrary, WrongArgumentsAreNoSuchOverload) {
    EXPECT_EQ(errorOf("url(1)"), "no such overload: url(int)");
    EXPECT_EQ(errorOf("isURL(true)"), "no such overload: isURL(bool)");
    EXPECT_EQ(errorOf("'x'.getHost()"), "no such overload: getHost(string)");
}

TEST(UrlLibrary, EscapedPathKeepsAValidRawForm) {
    EXPECT_EQ(eval("url('https://a/x%2Fy').getEscapedPath()"), "\"/x%2Fy\"");
    EXPECT_EQ(eval("url('https://a/é').getEscapedPath()"), "\"/%C3%A9\"");
}

}  // namespace
}  // namespace numadra::dracel
