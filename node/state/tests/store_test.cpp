#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "numadra/common/files.hpp"
#include "numadra/state/checkpoint.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::state {
namespace {

using numadra::testing::TempTree;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Names = std::vector<std::string>;

ClaimRecord recordFor(const std::string& uid) {
    ClaimRecord record;
    record.claimNamespace = "default";
    record.claimName = "claim-" + uid;
    record.claimUid = uid;
    record.state = ClaimState::PrepareCompleted;
    record.bootId = "boot-1";
    DeviceRecord device;
    device.request = "gpu";
    device.pool = "node-1";
    device.device = "gpu-0";
    device.kind = "gpu";
    device.pciAddress = "0000:41:00.0";
    device.vendorId = 0x10de;
    device.deviceId = 0x2330;
    device.cdiDeviceIds = {"numa.dra.example.com/gpu=" + uid};
    record.devices = {device};
    record.files = {"/var/run/cdi/" + uid + ".json"};
    record.metadataGenerations = {{"gpu", 1}};
    return record;
}

mode_t modeOf(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return info.st_mode & 07777;
}

Names list(const std::string& path) {
    auto names = files::listDirectory(path);
    EXPECT_TRUE(names.ok()) << names.error().message;
    return names.ok() ? *names : Names{};
}

// Every path below `root`, relative to it: proves nothing was created anywhere unexpected.
std::set<std::string> everything(const std::string& root) {
    std::set<std::string> paths;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
        paths.insert(std::filesystem::relative(entry.path(), root).string());
    return paths;
}

std::string read(const std::string& path) {
    auto content = files::readFile(path);
    EXPECT_TRUE(content.ok()) << content.error().message;
    return content.ok() ? *content : std::string{};
}

class StoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto opened = CheckpointStore::open(stateDir());
        ASSERT_TRUE(opened.ok()) << opened.error().message;
        store_.emplace(std::move(opened).value());
    }
    std::string stateDir() const { return tree_.path("var/lib/numadra"); }
    std::string checkpoints() const { return stateDir() + "/checkpoints"; }
    std::string quarantine() const { return stateDir() + "/quarantine"; }
    CheckpointStore& store() { return *store_; }

    LoadedCheckpoint load() {
        auto loaded = store().load();
        EXPECT_TRUE(loaded.ok()) << loaded.error().message;
        return loaded.ok() ? *loaded : LoadedCheckpoint{};
    }

    TempTree tree_;
    std::optional<CheckpointStore> store_;
};

TEST_F(StoreTest, OpenCreatesBothFoldersWithMode0700) {
    EXPECT_EQ(store().directory(), checkpoints());
    EXPECT_EQ(modeOf(checkpoints()), 0700U);
    EXPECT_EQ(modeOf(quarantine()), 0700U);
}

TEST_F(StoreTest, OpenAgainKeepsTheRecords) {
    ASSERT_TRUE(store().save(recordFor("a")));
    auto reopened = CheckpointStore::open(stateDir());
    ASSERT_TRUE(reopened.ok()) << reopened.error().message;
    auto loaded = reopened->load();
    ASSERT_TRUE(loaded.ok());
    ASSERT_EQ(loaded->records.size(), 1U);
    EXPECT_EQ(loaded->records[0], recordFor("a"));
}

TEST(StoreOpen, FailsNamingTheFolderWhenItCannotBeCreated) {
    TempTree tree;
    tree.file("state/checkpoints", "a file where the folder should be");
    auto opened = CheckpointStore::open(tree.path("state"));
    ASSERT_FALSE(opened.ok());
    EXPECT_THAT(opened.error().message, HasSubstr(tree.path("state/checkpoints")));
}

TEST_F(StoreTest, RecordPathIsTheUidDotJsonInTheCheckpointFolder) {
    EXPECT_EQ(store().recordPath("abc-1"), checkpoints() + "/abc-1.json");
}

TEST_F(StoreTest, SavedRecordsLoadBackSortedByUid) {
    for (const char* uid : {"c-3", "a", "B-2", "a-b"})
        ASSERT_TRUE(store().save(recordFor(uid)));
    const auto loaded = load();
    EXPECT_TRUE(loaded.quarantined.empty());
    ASSERT_EQ(loaded.records.size(), 4U);
    EXPECT_EQ(loaded.records[0], recordFor("B-2"));
    EXPECT_EQ(loaded.records[1], recordFor("a"));
    EXPECT_EQ(loaded.records[2], recordFor("a-b"));
    EXPECT_EQ(loaded.records[3], recordFor("c-3"));
}

TEST_F(StoreTest, EmptyStoreLoadsNothing) {
    const auto loaded = load();
    EXPECT_TRUE(loaded.records.empty());
    EXPECT_TRUE(loaded.quarantined.empty());
}

TEST_F(StoreTest, SaveWritesOneFileWithMode0600AndNoTempFile) {
    ASSERT_TRUE(store().save(recordFor("a")));
    EXPECT_EQ(list(checkpoints()), Names{"a.json"});
    EXPECT_EQ(modeOf(store().recordPath("a")), 0600U);
    EXPECT_EQ(read(store().recordPath("a")), encode(recordFor("a")));
}

TEST_F(StoreTest, SaveReplacesTheRecordKeepingOneFile) {
    auto record = recordFor("a");
    ASSERT_TRUE(store().save(record));
    record.state = ClaimState::PrepareStarted;
    record.files.push_back("/tmp/more");
    ASSERT_TRUE(store().save(record));
    EXPECT_EQ(list(checkpoints()), Names{"a.json"});
    const auto loaded = load();
    ASSERT_EQ(loaded.records.size(), 1U);
    EXPECT_EQ(loaded.records[0], record);
}

TEST_F(StoreTest, SaveRefusesTextThatIsNotUtf8) {
    auto record = recordFor("a");
    record.files = {std::string("/bad/\xff\xfe")};
    auto saved = store().save(record);
    ASSERT_FALSE(saved);
    EXPECT_THAT(saved.error().message, HasSubstr("not valid UTF-8"));
    EXPECT_TRUE(list(checkpoints()).empty());
}

TEST_F(StoreTest, RemoveDeletesTheRecordAndMissingIsSuccess) {
    ASSERT_TRUE(store().save(recordFor("a")));
    ASSERT_TRUE(store().save(recordFor("b")));
    EXPECT_TRUE(store().remove("a"));
    EXPECT_EQ(list(checkpoints()), Names{"b.json"});
    EXPECT_TRUE(store().remove("a"));
}

TEST_F(StoreTest, LoadQuarantinesADamagedFileAndKeepsLoadingTheOthers) {
    ASSERT_TRUE(store().save(recordFor("a")));
    ASSERT_TRUE(store().save(recordFor("b")));
    ASSERT_TRUE(store().save(recordFor("c")));
    auto damaged = read(store().recordPath("b"));
    damaged[damaged.find("gpu-0") + 4] = '7';
    tree_.file("var/lib/numadra/checkpoints/b.json", damaged);

    const auto loaded = load();
    ASSERT_EQ(loaded.records.size(), 2U);
    EXPECT_EQ(loaded.records[0].claimUid, "a");
    EXPECT_EQ(loaded.records[1].claimUid, "c");
    ASSERT_EQ(loaded.quarantined.size(), 1U);
    const auto& moved = loaded.quarantined[0];
    EXPECT_THAT(moved.path, StartsWith(quarantine() + "/b.json."));
    EXPECT_THAT(moved.reason, HasSubstr("checksum mismatch: file is damaged"));
    EXPECT_THAT(moved.reason, HasSubstr(store().recordPath("b")));

    // Moved, not deleted, and with its reason beside it.
    EXPECT_FALSE(files::exists(store().recordPath("b")));
    EXPECT_EQ(read(moved.path), damaged);
    EXPECT_THAT(read(moved.path + ".reason"), HasSubstr("checksum mismatch: file is damaged"));
    EXPECT_EQ(list(quarantine()).size(), 2U);
    EXPECT_EQ(list(checkpoints()), (Names{"a.json", "c.json"}));
}

TEST_F(StoreTest, QuarantinedFileIsNamedAfterTheUnixTime) {
    tree_.file("var/lib/numadra/checkpoints/x.json", "{");
    const auto before = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const auto loaded = load();
    ASSERT_EQ(loaded.quarantined.size(), 1U);
    const std::string prefix = quarantine() + "/x.json.";
    ASSERT_THAT(loaded.quarantined[0].path, StartsWith(prefix));
    const auto seconds = std::stoll(loaded.quarantined[0].path.substr(prefix.size()));
    EXPECT_GE(seconds, before);
    EXPECT_LE(seconds, before + 5);
}

TEST_F(StoreTest, LoadQuarantinesATruncatedFile) {
    ASSERT_TRUE(store().save(recordFor("a")));
    const auto content = read(store().recordPath("a"));
    tree_.file("var/lib/numadra/checkpoints/a.json", content.substr(0, content.size() / 2));
    const auto loaded = load();
    EXPECT_TRUE(loaded.records.empty());
    ASSERT_EQ(loaded.quarantined.size(), 1U);
    EXPECT_THAT(loaded.quarantined[0].reason, HasSubstr("not valid JSON"));
}

TEST_F(StoreTest, LoadQuarantinesAFileOfANewerVersionInsteadOfFailing) {
    tree_.file("var/lib/numadra/checkpoints/a.json", R"({"version": 2})");
    const auto loaded = load();
    EXPECT_TRUE(loaded.records.empty());
    ASSERT_EQ(loaded.quarantined.size(), 1U);
    EXPECT_THAT(loaded.quarantined[0].reason, HasSubstr("refusing to guess"));
}

TEST_F(StoreTest, LoadQuarantinesARecordWhoseUidDiffersFromItsFileName) {
    tree_.file("var/lib/numadra/checkpoints/b.json", encode(recordFor("a")));
    const auto loaded = load();
    EXPECT_TRUE(loaded.records.empty());
    ASSERT_EQ(loaded.quarantined.size(), 1U);
    EXPECT_THAT(loaded.quarantined[0].path, StartsWith(quarantine() + "/b.json."));
    EXPECT_THAT(loaded.quarantined[0].reason, HasSubstr("\"a\""));
    EXPECT_FALSE(files::exists(store().recordPath("b")));
}

TEST_F(StoreTest, LoadQuarantinesAJsonFileWhoseNameIsNotAUid) {
    tree_.file("var/lib/numadra/checkpoints/a.b.json", encode(recordFor("a")));
    const auto loaded = load();
    EXPECT_TRUE(loaded.records.empty());
    ASSERT_EQ(loaded.quarantined.size(), 1U);
    EXPECT_THAT(loaded.quarantined[0].reason, HasSubstr("not a claim UID"));
}

TEST_F(StoreTest, LoadRemovesLeftoversOfInterruptedWritesAndLeavesOtherFilesAlone) {
    ASSERT_TRUE(store().save(recordFor("a")));
    tree_.file("var/lib/numadra/checkpoints/.a.json.tmp.0123456789ab", "{\"vers");
    tree_.file("var/lib/numadra/checkpoints/README.txt", "notes");
    const auto loaded = load();
    ASSERT_EQ(loaded.records.size(), 1U);
    EXPECT_TRUE(loaded.quarantined.empty());
    EXPECT_EQ(list(checkpoints()), (Names{"README.txt", "a.json"}));
    EXPECT_TRUE(list(quarantine()).empty());
}

TEST_F(StoreTest, LoadFailsWhenTheCheckpointFolderIsGone) {
    tree_.remove("var/lib/numadra/checkpoints");
    auto loaded = store().load();
    ASSERT_FALSE(loaded.ok());
    EXPECT_THAT(loaded.error().message, HasSubstr(checkpoints()));
}

TEST_F(StoreTest, QuarantineMovesTheRecordWithItsReason) {
    ASSERT_TRUE(store().save(recordFor("a")));
    const auto content = read(store().recordPath("a"));
    ASSERT_TRUE(store().quarantine("a", "device 0000:41:00.0 is now a different device"));
    EXPECT_FALSE(files::exists(store().recordPath("a")));
    const auto names = list(quarantine());
    ASSERT_EQ(names.size(), 2U);
    EXPECT_THAT(names[0], StartsWith("a.json."));
    EXPECT_EQ(names[1], names[0] + ".reason");
    EXPECT_EQ(read(quarantine() + "/" + names[0]), content);
    EXPECT_EQ(read(quarantine() + "/" + names[1]),
              "device 0000:41:00.0 is now a different device\n");
    EXPECT_TRUE(load().records.empty());
}

TEST_F(StoreTest, QuarantiningTheSameClaimTwiceKeepsBothFiles) {
    ASSERT_TRUE(store().save(recordFor("a")));
    ASSERT_TRUE(store().quarantine("a", "first"));
    ASSERT_TRUE(store().save(recordFor("a")));
    ASSERT_TRUE(store().quarantine("a", "second"));
    EXPECT_EQ(list(quarantine()).size(), 4U);
}

TEST_F(StoreTest, QuarantineOfAMissingRecordFails) {
    auto moved = store().quarantine("a", "why");
    ASSERT_FALSE(moved);
    EXPECT_EQ(moved.error().errnoValue, ENOENT);
    EXPECT_TRUE(list(quarantine()).empty());
}

TEST_F(StoreTest, RemoveQuarantinedDropsOnlyThatClaimsFiles) {
    for (const char* uid : {"ab", "abc", "b"}) {
        ASSERT_TRUE(store().save(recordFor(uid)));
        ASSERT_TRUE(store().quarantine(uid, "reason"));
    }
    ASSERT_TRUE(store().save(recordFor("ab")));
    ASSERT_TRUE(store().quarantine("ab", "again"));
    EXPECT_EQ(list(quarantine()).size(), 8U);

    ASSERT_TRUE(store().removeQuarantined("ab"));
    const auto names = list(quarantine());
    ASSERT_EQ(names.size(), 4U);
    for (const auto& name : names)
        EXPECT_FALSE(name.starts_with("ab.json.")) << name;
    EXPECT_TRUE(store().removeQuarantined("ab"));  // nothing left is success
}

TEST_F(StoreTest, QuarantinedUidsListsEachQuarantinedClaimOnce) {
    EXPECT_TRUE(store().quarantinedUids().value().empty());
    for (const char* uid : {"b", "ab", "ab"}) {
        ASSERT_TRUE(store().save(recordFor(uid)));
        ASSERT_TRUE(store().quarantine(uid, "reason"));
    }
    ASSERT_TRUE(store().save(recordFor("c")));  // not quarantined
    EXPECT_EQ(store().quarantinedUids().value(), (std::vector<std::string>{"ab", "b"}));
}

TEST_F(StoreTest, BadUidsAreRejectedByEveryMethodAndCreateNothing) {
    ASSERT_TRUE(store().save(recordFor("victim")));
    const auto before = everything(tree_.root());
    for (const std::string& uid :
         {std::string("../x"), std::string("../../../../x"), std::string("a/b"), std::string(""),
          std::string(200, 'a'), std::string("a.b"), std::string("a b"), std::string("\x01")}) {
        auto record = recordFor("victim");
        record.claimUid = uid;
        EXPECT_FALSE(store().save(record)) << uid;
        EXPECT_FALSE(store().remove(uid)) << uid;
        EXPECT_FALSE(store().quarantine(uid, "reason")) << uid;
        EXPECT_FALSE(store().removeQuarantined(uid)) << uid;
        auto saved = store().save(record);
        ASSERT_FALSE(saved);
        EXPECT_THAT(saved.error().message, HasSubstr("invalid claim UID"));
    }
    EXPECT_EQ(everything(tree_.root()), before);
    EXPECT_FALSE(files::exists(tree_.path("var/lib/x.json")));
    EXPECT_FALSE(
        std::filesystem::exists(std::filesystem::path(tree_.root()).parent_path() / "x.json"));
}

TEST(StoreUid, IsValidUidAcceptsOnlyWhatCanNameAFile) {
    EXPECT_TRUE(CheckpointStore::isValidUid("0f1e2d3c-4b5a-6978-8796-A5B4C3D2E1F0"));
    EXPECT_TRUE(CheckpointStore::isValidUid(std::string(128, 'a')));
    for (const std::string& uid : {std::string(""), std::string(129, 'a'), std::string("../x"),
                                   std::string("a/b"), std::string("a.b"), std::string("a_b")})
        EXPECT_FALSE(CheckpointStore::isValidUid(uid)) << uid;
}

TEST_F(StoreTest, LongestValidUidIsAccepted) {
    const std::string uid(128, 'f');
    ASSERT_TRUE(store().save(recordFor(uid)));
    ASSERT_EQ(load().records.size(), 1U);
    EXPECT_TRUE(store().quarantine(uid, "r"));
    EXPECT_TRUE(store().removeQuarantined(uid));
    EXPECT_TRUE(store().remove(uid));
}

TEST(ReadBootId, ReturnsTheTrimmedId) {
    TempTree tree;
    tree.file("proc/sys/kernel/random/boot_id", "  3c1b0d1e-9a0b-4c1d-8e2f-1a2b3c4d5e6f\n");
    auto id = readBootId(tree.path("proc"));
    ASSERT_TRUE(id.ok()) << id.error().message;
    EXPECT_EQ(*id, "3c1b0d1e-9a0b-4c1d-8e2f-1a2b3c4d5e6f");
}

TEST(ReadBootId, MissingFileIsAnErrorNamingIt) {
    TempTree tree;
    auto id = readBootId(tree.path("proc"));
    ASSERT_FALSE(id.ok());
    EXPECT_THAT(id.error().message, HasSubstr(tree.path("proc/sys/kernel/random/boot_id")));
    EXPECT_EQ(id.error().errnoValue, ENOENT);
}

TEST(ReadBootId, BlankFileIsAnErrorNamingIt) {
    TempTree tree;
    tree.file("proc/sys/kernel/random/boot_id", " \n");
    auto id = readBootId(tree.path("proc"));
    ASSERT_FALSE(id.ok());
    EXPECT_THAT(id.error().message, HasSubstr(tree.path("proc/sys/kernel/random/boot_id")));
}

}  // namespace
}  // namespace numadra::state
