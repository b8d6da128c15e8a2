#include "numadra/probe/probe.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <sstream>

#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::probe {
namespace {

struct Run {
    int code;
    std::string out;
    std::string err;
};

Run probe(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    int code = runNumaProbe(args, out, err);
    return {code, out.str(), err.str()};
}

std::string epyc() {
    return numadra::testing::machineRoot("epyc-2s-nps4");
}

TEST(NumaProbe, HelpAndVersionExitZero) {
    auto help = probe({"--help"});
    EXPECT_EQ(help.code, 0);
    EXPECT_NE(help.out.find("--sysfs-root"), std::string::npos);
    auto version = probe({"--version"});
    EXPECT_EQ(version.code, 0);
    EXPECT_EQ(version.out.rfind("numa-probe ", 0), 0u);
}

// --help and --version answer before anything is read: a root that does not exist is no error.
TEST(NumaProbe, HelpAndVersionReadNothing) {
    for (const char* flag : {"--help", "--version"}) {
        EXPECT_EQ(probe({"--sysfs-root", "/nonexistent/numadra", flag}).code, 0) << flag;
        EXPECT_EQ(probe({flag, "--sysfs-root", "/nonexistent/numadra"}).code, 0) << flag;
    }
    EXPECT_EQ(probe({"--sysfs-root", "/nonexistent/numadra"}).code, 2) << "the check can fail";
}

TEST(NumaProbe, UnknownFlagIsAUsageError) {
    auto run = probe({"--bogus"});
    EXPECT_EQ(run.code, 2);
    EXPECT_NE(run.err.find("unknown argument '--bogus'"), std::string::npos);
    EXPECT_NE(run.err.find("Usage:"), std::string::npos);
}

TEST(NumaProbe, MissingValueAndBadOutputAreUsageErrors) {
    EXPECT_EQ(probe({"--sysfs-root"}).code, 2);
    auto run = probe({"--output", "xml", "--sysfs-root", epyc()});
    EXPECT_EQ(run.code, 2);
    EXPECT_NE(run.err.find("'xml'"), std::string::npos);
    EXPECT_EQ(probe({"--numa-list=yes"}).code, 2);
}

TEST(NumaProbe, InvalidNodeNameIsAUsageError) {
    auto run = probe({"--sysfs-root", epyc(), "--node-name", "Bad_Name"});
    EXPECT_EQ(run.code, 2);
    EXPECT_NE(run.err.find("--node-name 'Bad_Name'"), std::string::npos);
}

TEST(NumaProbe, RootThatIsNotSysfsExitsTwo) {
    numadra::testing::TempTree tree;
    auto run = probe({"--sysfs-root", tree.root(), "--node-name", "n"});
    EXPECT_EQ(run.code, 2);
    EXPECT_NE(run.err.find("does not look like sysfs"), std::string::npos);
}

TEST(NumaProbe, TableShowsSocketsNodesDevicesAndLists) {
    auto run = probe({"--sysfs-root", epyc(), "--node-name", "n"});
    ASSERT_EQ(run.code, 0) << run.err;
    for (const char* expected :
         {"Socket 0", "Socket 1", "NUMA node 5", "list [5,4,6,7]", "list [6,4,5,7]", "ens5f0np0",
          "ResourceSlices", "n-numa.dra.dev-00000"}) {
        EXPECT_NE(run.out.find(expected), std::string::npos) << expected << "\n" << run.out;
    }
}

TEST(NumaProbe, TableShowsTheDeviceSerialNumber) {
    auto run = probe({"--sysfs-root", epyc(), "--node-name", "n"});
    ASSERT_EQ(run.code, 0) << run.err;
    // The H100 at 0000:21:00.0, as the generator derives it.
    EXPECT_NE(run.out.find("serial number 82-a3-d7-5c-05-44-0c-62"), std::string::npos) << run.out;
}

TEST(NumaProbe, JsonIsAListOfResourceSlices) {
    auto run =
        probe({"--sysfs-root", epyc(), "--node-name", "n", "--numa-list", "--output", "json"});
    ASSERT_EQ(run.code, 0) << run.err;
    auto json = nlohmann::json::parse(run.out);
    EXPECT_EQ(json["kind"], "List");
    ASSERT_FALSE(json["items"].empty());
    for (const auto& item : json["items"]) {
        EXPECT_EQ(item["kind"], "ResourceSlice");
        EXPECT_EQ(item["spec"]["nodeName"], "n");
        EXPECT_EQ(item["spec"]["pool"]["name"], "n");
    }
}

TEST(NumaProbe, YamlHoldsTheSameSlicesAsJson) {
    auto json = nlohmann::json::parse(
        probe({"--sysfs-root", epyc(), "--node-name", "n", "--output", "json"}).out);
    auto yaml = probe({"--sysfs-root", epyc(), "--node-name", "n", "--output=yaml"});
    ASSERT_EQ(yaml.code, 0) << yaml.err;
    auto documents = YAML::LoadAll(yaml.out);
    ASSERT_EQ(documents.size(), json["items"].size());
    for (size_t i = 0; i < documents.size(); ++i) {
        EXPECT_EQ(documents[i]["metadata"]["name"].as<std::string>(),
                  json["items"][i]["metadata"]["name"]);
        EXPECT_EQ(documents[i]["spec"]["devices"].size(),
                  json["items"][i]["spec"]["devices"].size());
    }
}

TEST(NumaProbe, MalformedFilesWarnOnStderrButStillSucceed) {
    auto run =
        probe({"--sysfs-root", numadra::testing::machineRoot("bad-files"), "--node-name", "n"});
    EXPECT_EQ(run.code, 0);
    EXPECT_NE(run.err.find("warning: path="), std::string::npos);
    EXPECT_NE(run.err.find("numa_node"), std::string::npos);
}

TEST(NumaProbe, SameInputGivesByteIdenticalOutput) {
    std::vector<std::string> args{"--sysfs-root", epyc(), "--node-name", "n",
                                  "--output",     "yaml", "--numa-list"};
    EXPECT_EQ(probe(args).out, probe(args).out);
}

}  // namespace
}  // namespace numadra::probe
