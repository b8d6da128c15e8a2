#include "numadra/discovery/sysfs.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "numadra/testing/temp_tree.hpp"

namespace numadra::discovery {
namespace {

TEST(CleanPath, CollapsesDotsAndSlashes) {
    EXPECT_EQ(cleanPath("bus/pci/devices/../../../devices/pci0000:00/0000:00:01.0/"),
              "devices/pci0000:00/0000:00:01.0");
    EXPECT_EQ(cleanPath("a/./b//c"), "a/b/c");
    EXPECT_EQ(cleanPath("../../x"), "x");
}

TEST(Sysfs, ResolvesRelativeLinkLexically) {
    testing::TempTree tree;
    tree.file("devices/pci0000:00/0000:00:01.0/class", "0x030000\n");
    tree.link("bus/pci/devices/0000:00:01.0", "../../../devices/pci0000:00/0000:00:01.0/");
    Sysfs sysfs(tree.root());
    auto resolved = sysfs.resolveLink("bus/pci/devices/0000:00:01.0");
    ASSERT_TRUE(resolved.ok()) << resolved.error().message;
    EXPECT_EQ(resolved.value(), "devices/pci0000:00/0000:00:01.0");
}

TEST(Sysfs, ReadErrorNamesTheFullPath) {
    testing::TempTree tree;
    Sysfs sysfs(tree.root());
    auto content = sysfs.read("devices/system/node/online");
    ASSERT_FALSE(content.ok());
    EXPECT_NE(content.error().message.find(tree.root() + "/devices/system/node/online"),
              std::string::npos);
}

TEST(Sysfs, ListIsSortedAndEmptyForMissingFolder) {
    testing::TempTree tree;
    tree.file("d/b", "");
    tree.file("d/a", "");
    Sysfs sysfs(tree.root());
    EXPECT_EQ(sysfs.list("d"), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(sysfs.list("missing").empty());
}

}  // namespace
}  // namespace numadra::discovery
