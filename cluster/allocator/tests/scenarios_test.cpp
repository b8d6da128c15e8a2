// Runs every scenario under testdata/allocator/: each folder holds the inputs (every *.yaml,
// *.yml and *.json except the expected-* files, given to dra-allocate in name order, or the
// paths listed in `args`), optional flags in `args`, and the expected results: expected.yaml
// (stdout, exactly), expected-exit (the exit status, default 0) and expected-stderr (lines that
// must each appear in stderr).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "numadra/allocator/cli.hpp"

namespace numadra::allocator {
namespace {

namespace fs = std::filesystem;

const fs::path kScenarios = fs::path(NUMADRA_SOURCE_DIR) / "testdata" / "allocator";

std::string readText(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

std::vector<std::string> words(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string word; in >> word;)
        out.push_back(word);
    return out;
}

bool isExpectation(const std::string& name) {
    return name.starts_with("expected") || name == "args" || name == "README.md";
}

std::vector<std::string> scenarioNames() {
    std::vector<std::string> names;
    if (!fs::is_directory(kScenarios))
        return names;
    for (const auto& entry : fs::directory_iterator(kScenarios))
        if (entry.is_directory())
            names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

class Scenario : public testing::TestWithParam<std::string> {};

TEST_P(Scenario, GivesTheExpectedOutput) {
    const fs::path dir = kScenarios / GetParam();
    std::vector<std::string> args;
    bool pathsGiven = false;
    if (fs::exists(dir / "args")) {
        for (std::string& word : words(readText(dir / "args"))) {
            // Relative paths in args name files of the scenario (or of another scenario via ../).
            if (!word.starts_with("-") &&
                (word.ends_with(".yaml") || word.ends_with(".json") || word.ends_with("/") ||
                 word.find('/') != std::string::npos)) {
                word = (dir / word).string();
                pathsGiven = true;
            }
            args.push_back(word);
        }
    }
    if (!pathsGiven) {
        std::vector<std::string> inputs;
        for (const auto& entry : fs::directory_iterator(dir)) {
            const std::string name = entry.path().filename().string();
            if (entry.is_regular_file() && !isExpectation(name))
                inputs.push_back(entry.path().string());
        }
        std::sort(inputs.begin(), inputs.end());
        args.insert(args.end(), inputs.begin(), inputs.end());
    }
    std::istringstream in;
    std::ostringstream out;
    std::ostringstream err;
    const int status = runDraAllocate(args, in, out, err);

    int expectedStatus = 0;
    if (fs::exists(dir / "expected-exit"))
        expectedStatus = std::stoi(readText(dir / "expected-exit"));
    EXPECT_EQ(status, expectedStatus) << "stderr:\n" << err.str();
    if (fs::exists(dir / "expected.yaml")) {
        EXPECT_EQ(out.str(), readText(dir / "expected.yaml")) << "stderr:\n" << err.str();
    }
    if (fs::exists(dir / "expected-stderr")) {
        std::istringstream lines(readText(dir / "expected-stderr"));
        for (std::string line; std::getline(lines, line);) {
            if (line.empty())
                continue;
            EXPECT_NE(err.str().find(line), std::string::npos)
                << "stderr lacks: " << line << "\nstderr:\n"
                << err.str();
        }
    }
}

std::string testName(const testing::TestParamInfo<std::string>& param) {
    std::string name = param.param;
    std::replace_if(
        name.begin(), name.end(),
        [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
    return name;
}

INSTANTIATE_TEST_SUITE_P(Allocator, Scenario, testing::ValuesIn(scenarioNames()), testName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Scenario);

}  // namespace
}  // namespace numadra::allocator
