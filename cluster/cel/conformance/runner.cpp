// cel_conformance: runs the CEL project's conformance tests (exported to JSON by
// fetch_cel_spec.sh) against numadra's CEL interpreter in the Kubernetes environment numadra
// ships (numadra::dracel: its functions at run time, upstream's declarations for the type
// checker), and holds the outcome to the committed expectations.
//
// A test is passed, failed, skipped because its data puts it out of scope (protobuf messages or
// enums, a feature Kubernetes' CEL environment does not have: the class is printed), or skipped
// by name in the expectations file (its reason printed). A test skipped by name still runs: when
// it passes, the skip is stale and counts as a failure. With --expectations, every file's counts
// (passed, and skipped per class) must be the ones committed, so a new skip or a lost pass fails
// the run; without --files, every file of the package must be listed there.
//
//   cel_conformance --data <dir> [--expectations <file>] [--files basic,lists,...]
//                   [--filter text] [--verbose]
//
// Exits 1 when a test failed, a count differs from the expectations or a file is missing,
// 2 on a usage error.

#include <algorithm>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "harness.hpp"
#include "numadra/dracel/environment.hpp"

namespace {

namespace cel = numadra::cel;
namespace conf = numadra::cel::conformance;

struct Options {
    std::filesystem::path data;
    std::optional<std::filesystem::path> expectations;
    std::vector<std::string> files;  // empty: every file index.json lists
    std::string filter;
    bool verbose = false;
};

std::vector<std::string> splitList(std::string_view text) {
    std::vector<std::string> out;
    std::string item;
    std::istringstream in{std::string(text)};
    while (std::getline(in, item, ',')) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

int usage(std::string_view problem) {
    std::cerr << "cel_conformance: " << problem << "\n"
              << "usage: cel_conformance --data <dir> [--expectations <file>] [--files a,b,...]"
                 " [--filter text] [--verbose]\n"
              << "  --data          the JSON folder written by fetch_cel_spec.sh\n"
              << "  --expectations  the committed counts and listed skips (expectations.txt);\n"
              << "                  without it nothing is pinned\n"
              << "  --files         test files to run (default: every file index.json lists)\n"
              << "  --filter        run only tests whose file/section/name contains text (the\n"
              << "                  counts are then not compared)\n"
              << "  --verbose       print every test, not only failures and skips\n";
    return 2;
}

struct Outcome {
    bool passed = false;
    std::string got;
};

// Compiles as the test asks (checked: with the type checker), compares the deduced type when
// the test gives one, then evaluates in the Kubernetes environment. A compile error passes only
// a test expecting an error.
Outcome run(const conf::TestCase& test) {
    try {
        auto program = cel::Program::compile(test.expr, conf::compileOptionsFor(test));
        if (!program) {
            return {test.expectError, "compile error: " + program.error().message};
        }
        if (test.expectedType) {
            const cel::TypePtr type = program->checkedType();
            if (!type || !cel::isExactType(*type, *test.expectedType)) {
                return {false, "deduced type " + (type ? cel::formatType(*type) : "(none)")};
            }
            if (test.checkOnly) {
                return {true, "deduced type " + cel::formatType(*type)};
            }
        }
        cel::Activation activation;
        for (const auto& [name, value] : test.bindings) {
            activation.bind(name, value);
        }
        const cel::Value got = program->evaluate(activation, numadra::dracel::draEnvironment());
        const bool passed = test.expectError ? got.isError() : conf::sameValue(test.expected, got);
        return {passed, conf::describe(got)};
    } catch (const std::exception& e) {
        return {false, std::string("exception thrown: ") + e.what()};
    }
}

std::string expectation(const conf::TestCase& test) {
    std::string text;
    if (test.expectedType) {
        text = "deduced type " + cel::formatType(*test.expectedType);
        if (test.checkOnly) {
            return text;
        }
        text += ", ";
    }
    if (test.expectError) {
        return text + "an error (upstream: \"" + test.expectedErrorText + "\")";
    }
    return text + conf::describe(test.expected);
}

void printFailure(std::string_view label, const std::string& file, const conf::TestCase& test,
                  const std::string& expected, const std::string& got) {
    std::cout << "  " << label << " " << test.fullName(file) << "\n";
    if (!test.description.empty()) {
        std::cout << "      what:     " << test.description << "\n";
    }
    std::cout << "      expr:     " << conf::printable(test.expr) << "\n";
    for (const auto& [name, value] : test.bindings) {
        std::cout << "      binding:  " << name << " = " << conf::describe(value) << "\n";
    }
    std::cout << "      expected: " << expected << "\n"
              << "      got:      " << got << "\n";
}

// Per file: "passed", "failed", "listed" and one entry per out-of-scope class.
using Counts = std::map<std::string, int, std::less<>>;

int skipped(const Counts& counts) {
    int total = 0;
    for (const auto& [name, count] : counts) {
        total += name == "passed" || name == "failed" || name == "unchecked" ? 0 : count;
    }
    return total;
}

int count(const Counts& counts, std::string_view name) {
    const auto it = counts.find(name);
    return it == counts.end() ? 0 : it->second;
}

std::string summaryLine(const std::string& name, const Counts& counts) {
    std::string line = name + ": " + std::to_string(count(counts, "passed")) + " passed, " +
                       std::to_string(count(counts, "unchecked")) + " passed unchecked, " +
                       std::to_string(count(counts, "failed")) + " failed, " +
                       std::to_string(skipped(counts)) + " skipped";
    std::string classes;
    for (const auto& [key, value] : counts) {
        if (key != "passed" && key != "failed" && key != "unchecked" && value > 0) {
            classes += (classes.empty() ? "" : ", ") + key + " " + std::to_string(value);
        }
    }
    return classes.empty() ? line : line + " (" + classes + ")";
}

// The differences between a file's counts and its committed ones, one line each.
std::vector<std::string> countDifferences(const Counts& counts,
                                          const conf::FileExpectation& expected) {
    std::set<std::string, std::less<>> keys;
    for (const auto& [key, value] : counts) {
        if (key != "failed") {
            keys.insert(key);
        }
    }
    for (const auto& [key, value] : expected.counts) {
        keys.insert(key);
    }
    std::vector<std::string> out;
    for (const auto& key : keys) {
        const auto it = expected.counts.find(key);
        const int want = it == expected.counts.end() ? 0 : it->second;
        if (count(counts, key) != want) {
            out.push_back(key + " " + std::to_string(count(counts, key)) + ", expected " +
                          std::to_string(want));
        }
    }
    return out;
}

struct FileResult {
    Counts counts;
    bool ok = true;
};

// A test skipped by name: its answer must start as listed; kubernetes-differs and engine-gap
// must still fail (a pass makes the skip stale); kubernetes-refuses must be refused by the type
// checker, then pass unchecked.
void judgeListed(const std::string& file, const conf::TestCase& test,
                 const conf::ListedSkip& listed, const Outcome& outcome, FileResult& result,
                 std::vector<std::string>& skips) {
    const std::string full = test.fullName(file);
    const bool refuses = listed.reasonClass == conf::kListedKubernetesRefuses;
    const bool stale = refuses ? !outcome.got.starts_with("compile error:") : outcome.passed;
    if (stale) {
        ++result.counts["failed"];
        printFailure(refuses ? "STALE SKIP (the type checker accepts it now: remove its skip line)"
                             : "STALE SKIP (the test passes now: remove its skip line)",
                     file, test, expectation(test), outcome.got);
        return;
    }
    if (!outcome.got.starts_with(listed.answer)) {
        ++result.counts["failed"];
        printFailure("SKIP REASON NO LONGER HOLDS (numadra answers otherwise than listed)", file,
                     test, "the listed answer " + listed.answer, outcome.got);
        return;
    }
    if (!refuses) {
        ++result.counts["listed"];
        skips.push_back("  skip " + full + ": " + listed.reasonClass + ": " + listed.reason +
                        " [numadra: " + outcome.got + "]");
        return;
    }
    if (test.checkOnly) {
        ++result.counts["failed"];
        std::cout << "  FAIL " << full << ": a check-only test has nothing to evaluate unchecked;"
                  << " list it kubernetes-differs\n";
        return;
    }
    conf::TestCase unchecked = test;
    unchecked.checked = false;
    const auto evaluated = run(unchecked);
    if (!evaluated.passed) {
        ++result.counts["failed"];
        printFailure("FAIL (unchecked, as Kubernetes refuses it checked)", file, test,
                     expectation(test), evaluated.got);
        return;
    }
    ++result.counts["unchecked"];
    skips.push_back("  unchecked " + full + ": " + listed.reason + " [checked: " + outcome.got +
                    "]");
}

FileResult runFile(const std::string& name, const conf::TestFile& file, const Options& options,
                   const conf::Expectations* expectations) {
    FileResult result;
    std::vector<std::string> skips;
    std::set<std::string> seen;  // full names, for listed skips naming no test
    for (const auto& test : file.tests) {
        const std::string full = test.fullName(name);
        seen.insert(full);
        if (!options.filter.empty() && full.find(options.filter) == std::string::npos) {
            continue;
        }
        const conf::ListedSkip* listed = nullptr;
        if (expectations != nullptr) {
            const auto it = expectations->skips.find(full);
            listed = it == expectations->skips.end() ? nullptr : &it->second;
        }
        if (test.malformed) {
            ++result.counts["failed"];
            printFailure("FAIL", name, test, "(unreadable test: " + *test.malformed + ")",
                         "(not run)");
            continue;
        }
        if (test.outOfScope) {
            if (listed != nullptr) {
                ++result.counts["failed"];
                std::cout << "  FAIL " << full << ": listed as " << listed->reasonClass
                          << " but already out of scope (" << test.outOfScope->reasonClass << ": "
                          << test.outOfScope->detail << "); remove the listing\n";
                continue;
            }
            ++result.counts[test.outOfScope->reasonClass];
            skips.push_back("  skip " + full + ": " + test.outOfScope->reasonClass + ": " +
                            test.outOfScope->detail);
            continue;
        }
        const auto outcome = run(test);
        if (listed != nullptr) {
            judgeListed(name, test, *listed, outcome, result, skips);
            continue;
        }
        if (outcome.passed) {
            ++result.counts["passed"];
            if (options.verbose) {
                std::cout << "  pass " << full << "\n";
            }
        } else {
            ++result.counts["failed"];
            printFailure("FAIL", name, test, expectation(test), outcome.got);
        }
    }
    for (const auto& line : skips) {
        std::cout << line << "\n";
    }
    if (expectations != nullptr && options.filter.empty()) {
        for (const auto& [full, skip] : expectations->skips) {
            if (full.starts_with(name + "/") && !seen.contains(full)) {
                std::cout << "  ERROR the expectations skip " << full
                          << ", which this file does not hold\n";
                result.ok = false;
            }
        }
    }
    return result;
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        if (arg == "--data" || arg == "--expectations" || arg == "--files" || arg == "--filter") {
            const char* v = next();
            if (v == nullptr) {
                return usage(std::string(arg) + " needs a value");
            }
            if (arg == "--data") {
                options.data = v;
            } else if (arg == "--expectations") {
                options.expectations = v;
            } else if (arg == "--files") {
                options.files = splitList(v);
                if (options.files.empty()) {
                    return usage("no test file selected");
                }
            } else {
                options.filter = v;
            }
        } else if (arg == "--verbose") {
            options.verbose = true;
        } else if (arg == "--help" || arg == "-h") {
            usage("help");
            return 0;
        } else {
            return usage("unknown argument " + std::string(arg));
        }
    }
    if (options.data.empty()) {
        return usage("--data is required");
    }

    bool ok = true;
    std::optional<conf::Expectations> expectations;
    if (options.expectations) {
        auto loaded = conf::loadExpectations(*options.expectations);
        if (!loaded) {
            std::cout << "ERROR " << loaded.error().message << "\nRESULT: FAIL\n";
            return 1;
        }
        expectations = std::move(*loaded);
    }
    const bool allFiles = options.files.empty();
    if (allFiles) {
        auto index = conf::loadIndex(options.data);
        if (!index) {
            std::cout << "ERROR " << index.error().message << "\nRESULT: FAIL\n";
            return 1;
        }
        options.files = std::move(*index);
        if (expectations) {
            for (const auto& [name, file] : expectations->files) {
                if (std::find(options.files.begin(), options.files.end(), name) ==
                    options.files.end()) {
                    std::cout << "ERROR the expectations list file " << name
                              << ", which the package does not hold\n";
                    ok = false;
                }
            }
        }
    }

    Counts total;
    std::vector<std::string> summary;
    for (const auto& name : options.files) {
        const auto path = options.data / (name + ".json");
        auto file = conf::loadTestFile(path);
        if (!file) {
            std::cout << "== " << name << "\n  ERROR " << file.error().message << "\n";
            summary.push_back(name + ": ERROR, " + file.error().message);
            ok = false;
            continue;
        }
        std::cout << "== " << name << " (" << file->tests.size() << " tests)\n";
        auto result = runFile(name, *file, options, expectations ? &*expectations : nullptr);
        ok = ok && result.ok;
        std::string line = summaryLine(name, result.counts);
        if (expectations && options.filter.empty()) {
            const auto expected = expectations->files.find(name);
            if (expected == expectations->files.end()) {
                line += " [NOT IN THE EXPECTATIONS: add `file " + name + " ...`]";
                ok = false;
            } else if (const auto differences = countDifferences(result.counts, expected->second);
                       !differences.empty()) {
                line += " [DIFFERS FROM THE EXPECTATIONS:";
                for (const auto& difference : differences) {
                    line += " " + difference + ";";
                }
                line += "]";
                ok = false;
            }
        }
        std::cout << line << "\n";
        summary.push_back(line);
        for (const auto& [key, value] : result.counts) {
            total[key] += value;
        }
    }

    std::cout << "\n== CEL conformance summary (data: " << options.data.string() << ")\n";
    for (const auto& line : summary) {
        std::cout << line << "\n";
    }
    std::cout << summaryLine("total", total) << "\n";
    if (!expectations) {
        std::cout << "counts not pinned (no --expectations)\n";
    } else if (!options.filter.empty()) {
        std::cout << "counts not compared with the expectations (--filter)\n";
    }
    if (count(total, "failed") > 0) {
        ok = false;
    }
    std::cout << (ok ? "RESULT: PASS" : "RESULT: FAIL") << "\n";
    return ok ? 0 : 1;
}
