#include "numadra/common/files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "numadra/common/crc32c.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::files {
namespace {

using numadra::testing::TempTree;

ino_t inodeOf(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return info.st_ino;
}

mode_t modeOf(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return info.st_mode & 07777;
}

TEST(WriteFileAtomically, WritesTheContentWithTheRequestedMode) {
    TempTree tree;
    ASSERT_TRUE(writeFileAtomically(tree.path("a.json"), "{}\n", 0600));
    EXPECT_EQ(readFile(tree.path("a.json")).value(), "{}\n");
    EXPECT_EQ(modeOf(tree.path("a.json")), 0600U);
}

TEST(WriteFileAtomically, ReplacesAnExistingFileWithANewInodeAndLeavesNoTempFile) {
    TempTree tree;
    ASSERT_TRUE(writeFileAtomically(tree.path("a"), "old"));
    const auto before = inodeOf(tree.path("a"));
    ASSERT_TRUE(writeFileAtomically(tree.path("a"), "new"));
    EXPECT_EQ(readFile(tree.path("a")).value(), "new");
    EXPECT_NE(inodeOf(tree.path("a")), before);
    EXPECT_EQ(listDirectory(tree.root()).value(), std::vector<std::string>{"a"});
}

TEST(WriteFileAtomically, FailsNamingThePathWhenTheFolderIsMissing) {
    TempTree tree;
    auto written = writeFileAtomically(tree.path("missing/a"), "x");
    ASSERT_FALSE(written);
    EXPECT_EQ(written.error().errnoValue, ENOENT);
    EXPECT_NE(written.error().message.find(tree.path("missing")), std::string::npos);
}

TEST(RewriteFileInPlace, KeepsTheInode) {
    TempTree tree;
    ASSERT_TRUE(writeFileAtomically(tree.path("m.json"), "a much longer first version"));
    const auto before = inodeOf(tree.path("m.json"));
    ASSERT_TRUE(rewriteFileInPlace(tree.path("m.json"), "short"));
    EXPECT_EQ(readFile(tree.path("m.json")).value(), "short");
    EXPECT_EQ(inodeOf(tree.path("m.json")), before);
}

TEST(RewriteFileInPlace, DoesNotCreateAMissingFile) {
    TempTree tree;
    auto written = rewriteFileInPlace(tree.path("gone"), "x");
    ASSERT_FALSE(written);
    EXPECT_EQ(written.error().errnoValue, ENOENT);
    EXPECT_FALSE(exists(tree.path("gone")));
}

TEST(ReadFile, ReportsAMissingFileWithEnoent) {
    TempTree tree;
    auto content = readFile(tree.path("nope"));
    ASSERT_FALSE(content);
    EXPECT_EQ(content.error().errnoValue, ENOENT);
}

TEST(MakeDirectories, CreatesNestedFoldersWithTheMode) {
    TempTree tree;
    ASSERT_TRUE(makeDirectories(tree.path("a/b/c"), 0700));
    EXPECT_TRUE(std::filesystem::is_directory(tree.path("a/b/c")));
    EXPECT_EQ(modeOf(tree.path("a/b/c")), 0700U);
    EXPECT_TRUE(makeDirectories(tree.path("a/b/c"), 0700));  // existing: fine
}

TEST(MakeDirectories, FailsWhenAFileIsInTheWay) {
    TempTree tree;
    tree.file("a", "x");
    auto made = makeDirectories(tree.path("a/b"));
    ASSERT_FALSE(made);
    EXPECT_NE(made.error().message.find(tree.path("a")), std::string::npos);
}

TEST(RemoveFile, RemovesAndToleratesMissing) {
    TempTree tree;
    tree.file("x", "1");
    EXPECT_TRUE(removeFile(tree.path("x")));
    EXPECT_FALSE(exists(tree.path("x")));
    EXPECT_TRUE(removeFile(tree.path("x")));
}

TEST(RemoveTree, RemovesEverythingBelowButNeverFollowsSymlinks) {
    TempTree tree;
    tree.file("outside/keep", "1");
    tree.file("victim/a/b/file", "2");
    tree.link("victim/a/escape", tree.path("outside"));
    ASSERT_TRUE(removeTree(tree.path("victim")));
    EXPECT_FALSE(exists(tree.path("victim")));
    EXPECT_TRUE(exists(tree.path("outside/keep")));
    EXPECT_TRUE(removeTree(tree.path("victim")));  // missing: fine
}

TEST(ListDirectory, ListsSortedNames) {
    TempTree tree;
    tree.file("b", "");
    tree.file("a", "");
    tree.dir("c");
    EXPECT_EQ(listDirectory(tree.root()).value(), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(listDirectory(tree.path("none")).error().errnoValue, ENOENT);
}

// The filesystem type of the mount holding `path`, from the mount table: an oracle that does not
// use statfs, which is what the code under test asks.
std::string filesystemTypeOf(const std::string& path) {
    const std::string resolved = std::filesystem::canonical(path).string();
    std::ifstream mounts("/proc/self/mounts");
    std::string line, best, bestType;
    while (std::getline(mounts, line)) {
        std::istringstream fields(line);
        std::string device, mountPoint, type;
        fields >> device >> mountPoint >> type;
        const bool below =
            resolved == mountPoint || mountPoint == "/" || resolved.rfind(mountPoint + "/", 0) == 0;
        if (below && mountPoint.size() >= best.size()) {
            best = mountPoint;
            bestType = type;
        }
    }
    return bestType;
}

TEST(IsOnVolatileFilesystem, SaysYesForATmpfs) {
    if (filesystemTypeOf("/dev/shm") != "tmpfs")
        GTEST_SKIP() << "/dev/shm is not a tmpfs here";
    const std::string folder = "/dev/shm/numadra-files-test-" + std::to_string(::getpid());
    ASSERT_TRUE(makeDirectories(folder));
    auto answer = isOnVolatileFilesystem(folder);
    ASSERT_TRUE(removeTree(folder));
    ASSERT_TRUE(answer) << answer.error().message;
    EXPECT_TRUE(*answer);
    EXPECT_EQ(durabilityFor("/dev/shm", Durability::Full), Durability::None);
}

TEST(IsOnVolatileFilesystem, SaysNoForTheSourceFolderOnADisk) {
    const std::string type = filesystemTypeOf(NUMADRA_SOURCE_DIR);
    if (type == "tmpfs" || type == "ramfs")
        GTEST_SKIP() << "the source folder is on " << type << " here";
    auto answer = isOnVolatileFilesystem(NUMADRA_SOURCE_DIR);
    ASSERT_TRUE(answer) << answer.error().message;
    EXPECT_FALSE(*answer);
    EXPECT_EQ(durabilityFor(NUMADRA_SOURCE_DIR, Durability::Content), Durability::Content);
}

TEST(IsOnVolatileFilesystem, NamesAMissingPath) {
    TempTree tree;
    auto answer = isOnVolatileFilesystem(tree.path("none"));
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().errnoValue, ENOENT);
    EXPECT_NE(answer.error().message.find(tree.path("none")), std::string::npos);
    // Not knowing is answered with the durability asked for: the safe side.
    EXPECT_EQ(durabilityFor(tree.path("none"), Durability::Full), Durability::Full);
}

TEST(WriteFileAtomically, EveryDurabilityWritesTheWholeContentAndLeavesNoTempFile) {
    TempTree tree;
    for (auto durability : {Durability::None, Durability::Content, Durability::Full}) {
        const std::string content(5000, static_cast<char>('a' + static_cast<int>(durability)));
        ASSERT_TRUE(writeFileAtomically(tree.path("f"), content, 0600, durability));
        EXPECT_EQ(readFile(tree.path("f")).value(), content);
    }
    EXPECT_EQ(listDirectory(tree.root()).value(), std::vector<std::string>{"f"});
}

TEST(Crc32c, MatchesTheStandardCheckValue) {
    EXPECT_EQ(crc32c("123456789"), 0xE3069283U);  // RFC 3720 check value
    EXPECT_EQ(crc32c(""), 0U);
}

}  // namespace
}  // namespace numadra::files
