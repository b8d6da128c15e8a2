#pragma once
// The one rule for "this is CI" in the C++ tests (the scripts: scripts/lib/ci.sh, the Go tiers:
// tests/e2e's inCI, CMake: cmake/Go.cmake): CI is set to true or 1, in any case. In CI a check
// that cannot run fails; elsewhere it is reported as skipped.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace numadra::testing {

inline bool inCi() {
    const char* value = std::getenv("CI");
    if (value == nullptr)
        return false;
    std::string lowered;
    for (const char c : std::string_view(value))
        lowered += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return lowered == "true" || lowered == "1";
}

// A check that cannot run here: fails the test in CI; elsewhere returns "<what> SKIPPED: <why>"
// for the test's report.
inline std::string skippedUnlessCi(std::string_view what, std::string_view why) {
    if (inCi())
        ADD_FAILURE() << what << " cannot run here, and CI must run it: " << why;
    return std::string(what) + " SKIPPED: " + std::string(why);
}

}  // namespace numadra::testing
