// cel_conformance: runs the CEL project's conformance tests (exported to JSON by
// fetch_cel_spec.sh) against numadra's CEL interpreter and reports, per file, how many passed,
// failed and were skipped because they need a feature outside the interpreter's scope. Every
// failure is printed (expression, expected, got) and every skipped test is listed with its
// reason. Exits 1 when a test failed or a file is missing, 2 on a usage error.
//
//   cel_conformance --data <dir> [--files basic,lists,...] [--filter text] [--run-unsupported]
//                   [--verbose]

#include <exception>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "harness.hpp"

namespace {

namespace cel = numadra::cel;
namespace conf = numadra::cel::conformance;

// The files that cover the interpreter's subset (issue 6) and the Kubernetes CEL environment's
// optionals, two-variable comprehensions and cel.bind.
constexpr std::string_view kDefaultFiles =
    "basic,comparisons,logic,lists,macros,macros2,string,string_ext,conversions,integer_math,"
    "optionals,bindings_ext,fields,parse,plumbing";

struct Options {
    std::filesystem::path data;
    std::vector<std::string> files;
    std::string filter;
    bool runUnsupported = false;
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
              << "usage: cel_conformance --data <dir> [--files a,b,...] [--filter text]"
                 " [--run-unsupported] [--verbose]\n"
              << "  --data             the JSON folder written by fetch_cel_spec.sh\n"
              << "  --files            test files to run (default " << kDefaultFiles << ")\n"
              << "  --filter           run only tests whose file/section/name contains text\n"
              << "  --run-unsupported  also run the out-of-scope tests (reported apart, never"
                 " counted as failures)\n"
              << "  --verbose          print every test, not only failures and skips\n";
    return 2;
}

struct Outcome {
    bool passed = false;
    cel::Value got;
};

Outcome run(const conf::TestCase& test) {
    Outcome outcome;
    try {
        cel::Activation activation;
        for (const auto& [name, value] : test.bindings) {
            activation.bind(name, value);
        }
        cel::CompileOptions options;
        options.declarations = test.declarations;
        auto program = cel::Program::compile(test.expr, options);
        if (!program) {
            outcome.got = cel::Value::error("compile error: " + program.error().message);
        } else {
            outcome.got = program->evaluate(activation, cel::Environment{});
        }
    } catch (const std::exception& e) {
        outcome.got = cel::Value::error(std::string("exception thrown: ") + e.what());
        outcome.passed = false;
        return outcome;
    }
    outcome.passed =
        test.expectError ? outcome.got.isError() : conf::sameValue(test.expected, outcome.got);
    return outcome;
}

std::string expectation(const conf::TestCase& test) {
    if (test.expectError) {
        return "an error (upstream: \"" + test.expectedErrorText + "\")";
    }
    return conf::describe(test.expected);
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

struct Counts {
    int passed = 0;
    int failed = 0;
    int skipped = 0;
    int unsupportedPassed = 0;  // with --run-unsupported
    int unsupportedFailed = 0;
};

std::string summaryLine(const std::string& name, const Counts& c, bool runUnsupported) {
    std::string line = name + ": " + std::to_string(c.passed) + " passed, " +
                       std::to_string(c.failed) + " failed, " + std::to_string(c.skipped) +
                       " skipped (unsupported)";
    if (runUnsupported) {
        line += " [of the unsupported: " + std::to_string(c.unsupportedPassed) + " pass, " +
                std::to_string(c.unsupportedFailed) + " fail]";
    }
    return line;
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    options.files = splitList(kDefaultFiles);
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        if (arg == "--data") {
            const char* v = next();
            if (v == nullptr) {
                return usage("--data needs a folder");
            }
            options.data = v;
        } else if (arg == "--files") {
            const char* v = next();
            if (v == nullptr) {
                return usage("--files needs a list");
            }
            options.files = splitList(v);
        } else if (arg == "--filter") {
            const char* v = next();
            if (v == nullptr) {
                return usage("--filter needs a text");
            }
            options.filter = v;
        } else if (arg == "--run-unsupported") {
            options.runUnsupported = true;
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
    if (options.files.empty()) {
        return usage("no test file selected");
    }

    // Optional extension functions: their tests run when the interpreter implements them.
    conf::Extensions supported;
    std::string found;
    std::string missing;
    for (const auto& [name, probe] : conf::extensionProbes()) {
        conf::TestCase test;
        test.expr = probe;
        test.expected = cel::Value(true);
        if (run(test).passed) {
            supported.insert(name);
            found += (found.empty() ? "" : ", ") + name;
        } else {
            missing += (missing.empty() ? "" : ", ") + name;
        }
    }
    std::cout << "optional extension functions implemented (their tests run): "
              << (found.empty() ? "none" : found) << "\n"
              << "optional extension functions not implemented (their tests are skipped): "
              << (missing.empty() ? "none" : missing) << "\n";

    bool ok = true;
    Counts total;
    std::vector<std::string> summary;
    for (const auto& name : options.files) {
        const auto path = options.data / (name + ".json");
        auto file = conf::loadTestFile(path, supported);
        if (!file) {
            std::cout << "== " << name << "\n  ERROR " << file.error().message << "\n";
            summary.push_back(name + ": ERROR, " + file.error().message);
            ok = false;
            continue;
        }
        std::cout << "== " << name << " (" << file->tests.size() << " tests)\n";
        Counts counts;
        std::vector<std::string> skips;
        for (const auto& test : file->tests) {
            const std::string full = test.fullName(name);
            if (!options.filter.empty() && full.find(options.filter) == std::string::npos) {
                continue;
            }
            if (test.malformed) {
                ++counts.failed;
                printFailure("FAIL", name, test, "(unreadable test: " + *test.malformed + ")",
                             "(not run)");
                continue;
            }
            if (test.unsupported) {
                ++counts.skipped;
                std::string line = "  skip " + full + ": unsupported: " + *test.unsupported;
                if (options.runUnsupported) {
                    const auto outcome = run(test);
                    ++(outcome.passed ? counts.unsupportedPassed : counts.unsupportedFailed);
                    line += outcome.passed ? " [would pass]" : " [would fail]";
                }
                skips.push_back(line);
                continue;
            }
            const auto outcome = run(test);
            if (outcome.passed) {
                ++counts.passed;
                if (options.verbose) {
                    std::cout << "  pass " << full << "\n";
                }
            } else {
                ++counts.failed;
                printFailure("FAIL", name, test, expectation(test), conf::describe(outcome.got));
            }
        }
        for (const auto& line : skips) {
            std::cout << line << "\n";
        }
        if (counts.passed + counts.failed + counts.skipped == 0 && options.filter.empty()) {
            std::cout << "  ERROR " << path.string() << " holds no test\n";
            ok = false;
        }
        const auto line = summaryLine(name, counts, options.runUnsupported);
        std::cout << line << "\n";
        summary.push_back(line);
        total.passed += counts.passed;
        total.failed += counts.failed;
        total.skipped += counts.skipped;
        total.unsupportedPassed += counts.unsupportedPassed;
        total.unsupportedFailed += counts.unsupportedFailed;
    }

    std::cout << "\n== CEL conformance summary (data: " << options.data.string() << ")\n";
    for (const auto& line : summary) {
        std::cout << line << "\n";
    }
    std::cout << summaryLine("total", total, options.runUnsupported) << "\n";
    if (total.failed > 0) {
        ok = false;
    }
    std::cout << (ok ? "RESULT: PASS" : "RESULT: FAIL") << "\n";
    return ok ? 0 : 1;
}
