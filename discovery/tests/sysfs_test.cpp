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

TEST(Sysfs, FolderReadsBelowItAndNamesWholePaths) {
    testing::TempTree tree;
    tree.file("devices/pci0000:00/0000:00:01.0/numa_node", "1\n");
    tree.link("devices/pci0000:00/0000:00:01.0/iommu_group", "../../../kernel/iommu_groups/7");
    Sysfs sysfs(tree.root());
    auto folder = sysfs.folder("devices/pci0000:00");
    ASSERT_TRUE(folder.has_value());
    EXPECT_EQ(folder->path("0000:00:01.0/numa_node"),
              sysfs.path("devices/pci0000:00/0000:00:01.0/numa_node"));
    auto node = folder->read("0000:00:01.0/numa_node");
    ASSERT_TRUE(node.ok()) << node.error().message;
    EXPECT_EQ(node.value(), "1\n");
    auto group = folder->readLink("0000:00:01.0/iommu_group");
    ASSERT_TRUE(group.ok()) << group.error().message;
    EXPECT_EQ(group.value(), "../../../kernel/iommu_groups/7");
    EXPECT_TRUE(folder->isDirectory("0000:00:01.0"));
    EXPECT_EQ(folder->list("0000:00:01.0"), (std::vector<std::string>{"iommu_group", "numa_node"}));
    auto missing = folder->read("0000:00:01.0/uevent");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find(tree.root() + "/devices/pci0000:00/0000:00:01.0/uevent"),
              std::string::npos);
    EXPECT_FALSE(sysfs.folder("devices/pci0000:01").has_value());
}

TEST(ResolveLinkTarget, IsWhatResolveLinkGivesForTheLinksTarget) {
    EXPECT_EQ(resolveLinkTarget("devices/pci0000:00/0000:00:01.0/virtfn0", "../0000:00:01.2"),
              "devices/pci0000:00/0000:00:01.2");
    EXPECT_EQ(resolveLinkTarget("class/net/eth0", "../../devices/pci0000:00/0000:00:01.0/net/eth0"),
              "devices/pci0000:00/0000:00:01.0/net/eth0");
    EXPECT_EQ(resolveLinkTarget("class/net/eth0", "/devices/x/../y"), "devices/y");
    EXPECT_EQ(resolveLinkTarget("a", "../../b"), "b");
}

}  // namespace
}  // namespace numadra::discovery
