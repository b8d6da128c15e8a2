// Power cut at every step of a Prepare and of an Unprepare, then a restart: what survives must
// never be a partial file, and the restart must end with every claim either prepared whole or
// gone without a trace.
//
// How: fs_journal records every mutating file-system call of the operation. For each cut point
// k (after call k; k = all calls: after the operation answered) a DiskModel replays the first k
// calls and writes into the driver's folders the worst state a power cut could leave, under a
// conservative model of the disk:
//   - a file's data is on disk only if an fsync of it came after the write; otherwise a file
//     created since the last sync is empty, an older one has its old content;
//   - a folder entry change (create, rename, unlink, mkdir, rmdir) is on disk only if an fsync of
//     that folder came after it. Whether the disk wrote it anyway is the disk's choice: the test
//     tries "every folder lost its unsynced changes", "every folder kept them", and per-folder
//     mixes;
//   - a folder on tmpfs is empty after the reboot, and the boot id changes.
// A SIGKILL at the same point (the page cache survives, same boot) is checked as well. Before the
// restart no file a reader can reach may be partial; after it, every claim is whole or gone.
// Then it runs what the daemon runs at start (Preparer::open, restore), checks the invariants, and
// retries the operation as the kubelet would.

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "fs_journal.hpp"
#include "numadra/common/files.hpp"
#include "numadra/metadata/device_metadata.hpp"
#include "numadra/prepare/preparer.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/state/checkpoint.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::prepare {
namespace {

namespace fs = std::filesystem;
namespace journal = numadra::testing::fsjournal;
using journal::Entry;
using journal::Op;

constexpr const char* kDriver = "numa.dra.dev";
constexpr const char* kPool = "node-a";
constexpr const char* kUidA = "0b0e2c1a-aaaa-4c2d-9e0f-00000000000a";  // the claim cut short
constexpr const char* kUidB = "0b0e2c1a-bbbb-4c2d-9e0f-00000000000b";  // prepared before
constexpr int kMixesPerCut = 3;

// ----- the disk model -----

// The folder tree below one root as the page cache has it and as the disk has it.
class DiskModel {
  public:
    // What a restart finds after a cut. keptFolders: the folders (relative, "" = the root) whose
    // unsynced entry changes the disk wrote anyway.
    struct Cut {
        bool powerLost = true;  // false: SIGKILL, the page cache survives
        std::function<bool(const std::string& folder)> keepsEntries;
        std::set<std::string> volatileFolders;  // relative; emptied by a power cut
    };

    // Everything below `root` as it is now, taken as on disk.
    static DiskModel snapshot(const std::string& root) {
        DiskModel model;
        model.root_ = root;
        model.nodes_.push_back(Node{true, {}, {}, {}, {}});
        model.load(0, root);
        return model;
    }

    void apply(const Entry& entry) {
        switch (entry.op) {
            case Op::Create:
                link(entry.path, newNode(false));
                break;
            case Op::Mkdir:
                link(entry.path, newNode(true));
                break;
            case Op::Truncate:
                nodes_[find(entry.path)].data.clear();
                break;
            case Op::Write:
                nodes_[find(entry.path)].data += entry.data;
                break;
            case Op::Fsync: {
                auto& node = nodes_[find(entry.path)];
                if (node.folder)
                    node.durableEntries = node.entries;
                else
                    node.durableData = node.data;
                break;
            }
            case Op::Rename: {
                const int moved = find(entry.path);
                unlinkName(entry.path);
                link(entry.target, moved);
                break;
            }
            case Op::Unlink:
            case Op::Rmdir:
                unlinkName(entry.path);
                break;
        }
    }

    // Replaces everything below the root with the state `cut` leaves.
    void materialize(const Cut& cut) const {
        for (const auto& entry : fs::directory_iterator(root_))
            fs::remove_all(entry.path());
        write(0, "", cut);
    }

  private:
    struct Node {
        bool folder = false;
        std::string data, durableData;                       // files
        std::map<std::string, int> entries, durableEntries;  // folders
    };

    void load(int folder, const std::string& path) {
        for (const auto& entry : fs::directory_iterator(path)) {
            const std::string name = entry.path().filename().string();
            int child;
            if (entry.is_directory()) {
                child = newNode(true);
                load(child, entry.path().string());
            } else {
                child = newNode(false);
                std::ifstream in(entry.path(), std::ios::binary);
                nodes_[child].data = std::string(std::istreambuf_iterator<char>(in), {});
                nodes_[child].durableData = nodes_[child].data;
            }
            nodes_[folder].entries[name] = child;
            nodes_[folder].durableEntries[name] = child;
        }
    }

    int newNode(bool folder) {
        nodes_.push_back(Node{folder, {}, {}, {}, {}});
        return static_cast<int>(nodes_.size()) - 1;
    }

    std::string relative(const std::string& path) const {
        if (path.rfind(root_ + "/", 0) != 0)
            throw std::runtime_error("not below the model's root: " + path);
        return path.substr(root_.size() + 1);
    }

    // The folder holding `path` and the name in it.
    std::pair<int, std::string> parentOf(const std::string& path) const {
        const std::string rel = relative(path);
        const auto slash = rel.rfind('/');
        if (slash == std::string::npos)
            return {0, rel};
        return {find(root_ + "/" + rel.substr(0, slash)), rel.substr(slash + 1)};
    }

    int find(const std::string& path) const {
        if (path == root_)
            return 0;
        std::istringstream parts(relative(path));
        int node = 0;
        for (std::string part; std::getline(parts, part, '/');) {
            auto it = nodes_[node].entries.find(part);
            if (it == nodes_[node].entries.end())
                throw std::runtime_error("the model has no " + path);
            node = it->second;
        }
        return node;
    }

    void link(const std::string& path, int node) {
        auto [folder, name] = parentOf(path);
        nodes_[folder].entries[name] = node;
    }

    void unlinkName(const std::string& path) {
        auto [folder, name] = parentOf(path);
        nodes_[folder].entries.erase(name);
    }

    void write(int folder, const std::string& rel, const Cut& cut) const {
        const std::string path = rel.empty() ? root_ : root_ + "/" + rel;
        fs::create_directories(path);
        if (cut.powerLost && cut.volatileFolders.count(rel) != 0)
            return;  // tmpfs: empty after the reboot
        const auto& node = nodes_[folder];
        const bool kept = !cut.powerLost || cut.keepsEntries(rel);
        for (const auto& [name, child] : kept ? node.entries : node.durableEntries) {
            const std::string childRel = rel.empty() ? name : rel + "/" + name;
            if (nodes_[child].folder) {
                write(child, childRel, cut);
                continue;
            }
            std::ofstream out(root_ + "/" + childRel, std::ios::binary);
            out << (cut.powerLost ? nodes_[child].durableData : nodes_[child].data);
        }
    }

    std::string root_;
    std::vector<Node> nodes_;
};

// ----- the node and the driver -----

struct Layout {
    const char* name;
    bool cdiOnTmpfs, metadataOnTmpfs, stateOnTmpfs;
};

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// path -> content of every file below `folder`.
std::map<std::string, std::string> filesBelow(const std::string& folder) {
    std::map<std::string, std::string> out;
    if (!fs::exists(folder))
        return out;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
        if (entry.is_regular_file())
            out[entry.path().string()] = readAll(entry.path().string());
    }
    return out;
}

class PowerCutTest : public ::testing::TestWithParam<Layout> {
  protected:
    void SetUp() override {
        spdlog::set_level(spdlog::level::warn);  // a thousand restarts
        machine = numadra::testing::loadMachine("epyc-2s-nps4");
        slices::SliceOptions sliceOptions;
        sliceOptions.nodeName = kPool;
        for (auto& device : slices::buildPoolContent(machine, sliceOptions).devices)
            devices.emplace(device.name, device);
        dev = numadra::testing::makeDevTree(machine, tree, "dev");
        fs::create_directories(root());
        std::vector<std::string> tmpfs;
        for (const auto& [folder, onTmpfs] : {std::pair{std::string("cdi"), GetParam().cdiOnTmpfs},
                                              {"metadata", GetParam().metadataOnTmpfs},
                                              {"state", GetParam().stateOnTmpfs}}) {
            fs::create_directories(root() + "/" + folder);
            if (onTmpfs) {
                tmpfs.push_back(root() + "/" + folder);
                volatileFolders.insert(folder);
            }
        }
        journal::markVolatile(tmpfs);
        open("boot-1");
    }

    void TearDown() override {
        preparer.reset();
        journal::markVolatile({});
    }

    std::string root() const { return tree.path("node"); }

    void open(const std::string& bootId) {
        preparer.reset();
        metrics = std::make_unique<metrics::Registry>();
        Options o;
        o.driverName = kDriver;
        o.poolName = kPool;
        o.cdiDir = root() + "/cdi";
        o.metadataDir = root() + "/metadata";
        o.stateDir = root() + "/state";
        o.hostRoots = {dev.root, std::string(NUMADRA_GENERATED_SYSFS) + "/epyc-2s-nps4/proc"};
        o.bootId = bootId;
        auto opened = Preparer::open(std::move(o), *metrics);
        ASSERT_TRUE(opened) << opened.error().message;
        preparer = std::move(opened).value();
    }

    NodeView node() const { return {machine, devices}; }

    static ClaimAllocation claimA() {
        return {{"default", "claim-a", kUidA},
                std::nullopt,
                {{"gpu", kPool, "gpu-0000-21-00-0", std::nullopt, false, {}},
                 {"nic", kPool, "nic-0000-c1-00-0", std::nullopt, false, {}}}};
    }
    static ClaimAllocation claimB() {
        return {{"default", "claim-b", kUidB},
                std::nullopt,
                {{"cpu", kPool, "cpu-numa-0", std::nullopt, false, {}}}};
    }

    // Every file of a claim: CDI specs named after its UID, its metadata folder, its record.
    std::map<std::string, std::string> filesOf(const ClaimAllocation& claim) const {
        std::map<std::string, std::string> out;
        for (auto& [path, content] : filesBelow(root())) {
            const bool named = path.find(claim.claim.uid) != std::string::npos;
            const bool inFolder =
                path.find("/metadata/default_" + claim.claim.name + "/") != std::string::npos;
            if (named || inFolder)
                out.emplace(path, content);
        }
        return out;
    }

    // Metadata files carry a generation that a repair raises: compared without it.
    static bool sameContent(const std::string& path, const std::string& actual,
                            const std::string& wanted) {
        if (!path.ends_with("/metadata.json"))
            return actual == wanted;
        auto a = metadata::decodeStream(actual, path);
        auto w = metadata::decodeStream(wanted, path);
        if (!a || !w)
            return false;
        a->generation = w->generation;
        return *a == *w;
    }

    // ----- the invariants -----

    // What a reader can see after the cut, before the driver runs again: no name holds a
    // partial file. Each file holds what it held before the operation or what the operation
    // wrote. Readers: the container runtime reads the CDI specs, the restart the records, and
    // containers a metadata file through a CDI spec that mounts it (none without one).
    void expectNoPartialFile(const std::map<std::string, std::string>& before,
                             const std::map<std::string, std::string>& after) const {
        const auto now = filesBelow(root());
        auto readable = [&now, this](const std::string& path) {
            if (!path.ends_with("/metadata.json"))
                return true;
            for (const auto& [spec, content] : now) {
                if (spec.rfind(root() + "/cdi/", 0) == 0 &&
                    spec.find(".tmp.") == std::string::npos &&
                    content.find(path) != std::string::npos)
                    return true;
            }
            return false;
        };
        for (const auto& [path, content] : now) {
            if (path.find(".tmp.") != std::string::npos || !readable(path))
                continue;  // never a final name, or nothing leads a reader to it
            const bool asBefore = before.count(path) && sameContent(path, content, before.at(path));
            const bool asAfter = after.count(path) && sameContent(path, content, after.at(path));
            EXPECT_TRUE(asBefore || asAfter) << path << " holds " << content.size() << " bytes";
        }
    }

    // After the restart: nothing quarantined, no temp file, every claim whole or gone; B (and A
    // when it says) prepared.
    void expectConsistent(const std::map<std::string, std::string>& wholeA,
                          const std::map<std::string, std::string>& wholeB,
                          std::optional<bool> aMustBePrepared, bool bMustBePrepared) const {
        for (const auto& [path, content] : filesBelow(root()))
            EXPECT_EQ(path.find(".tmp."), std::string::npos) << path;
        EXPECT_TRUE(filesBelow(root() + "/state/quarantine").empty());
        auto store = state::CheckpointStore::open(root() + "/state").value();
        for (const auto* uid : {kUidA, kUidB}) {
            auto record = store.read(uid);
            const bool prepared = record.ok();
            if (!prepared) {
                EXPECT_TRUE(record.error().is(ErrorKind::NotFound)) << record.error().message;
            } else {
                EXPECT_EQ(record->state, state::ClaimState::PrepareCompleted) << uid;
            }
            const bool isA = std::string(uid) == kUidA;
            const auto& whole = isA ? wholeA : wholeB;
            const auto now = filesOf(isA ? claimA() : claimB());
            if (isA && aMustBePrepared) {
                EXPECT_EQ(prepared, *aMustBePrepared) << "the answered operation was undone";
            }
            if (!isA && bMustBePrepared) {
                EXPECT_TRUE(prepared) << "the claim prepared before was lost";
            }
            if (!prepared) {
                EXPECT_TRUE(now.empty()) << uid << " left " << ::testing::PrintToString(now);
                continue;
            }
            EXPECT_EQ(now.size(), whole.size()) << uid << ::testing::PrintToString(now);
            for (const auto& [path, content] : whole) {
                if (path.find("/state/") != std::string::npos)
                    continue;  // the record: its boot id and generations change
                ASSERT_EQ(now.count(path), 1U) << path << " is missing";
                EXPECT_TRUE(sameContent(path, now.at(path), content)) << path;
            }
        }
    }

    // ----- the cuts -----

    std::vector<DiskModel::Cut> cutsAt(size_t k) const {
        std::vector<DiskModel::Cut> cuts;
        cuts.push_back({false, {}, volatileFolders});  // SIGKILL
        cuts.push_back({true, [](const std::string&) { return false; }, volatileFolders});  // lost
        cuts.push_back({true, [](const std::string&) { return true; }, volatileFolders});   // kept
        for (int mix = 0; mix < kMixesPerCut; ++mix) {
            auto random = std::make_shared<std::mt19937>(static_cast<unsigned>(k * 31 + mix));
            auto choices = std::make_shared<std::map<std::string, bool>>();
            cuts.push_back({true,
                            [random, choices](const std::string& folder) {
                                auto [it, fresh] = choices->emplace(folder, false);
                                if (fresh)
                                    it->second = ((*random)() & 1U) != 0;
                                return it->second;
                            },
                            volatileFolders});
        }
        return cuts;
    }

    // What the files were and should be around the operation under test.
    struct Story {
        std::map<std::string, std::string> before, after;   // every file
        std::map<std::string, std::string> wholeA, wholeB;  // each claim's files when prepared
        bool prepares = true;                               // the operation: prepare or unprepare
        size_t calls = 0;                                   // journaled
    };

    // One cut: materialize it, check what a reader sees, restart, check, retry, check.
    void restartAfter(const DiskModel& replay, const DiskModel::Cut& cut, size_t k,
                      const Story& story, const std::function<void()>& retry) {
        preparer.reset();
        replay.materialize(cut);
        expectNoPartialFile(story.before, story.after);
        open(cut.powerLost ? "boot-2" : "boot-1");
        auto report = preparer->restore(node());
        ASSERT_TRUE(report) << report.error().message;
        EXPECT_EQ(report->quarantined, 0U);
        // A checkpoint on tmpfs forgets every claim in a power cut: the kubelet prepares them
        // again after the reboot. Anywhere else an answered operation must hold.
        const bool recordsSurvive = !cut.powerLost || !GetParam().stateOnTmpfs;
        std::optional<bool> answered;
        if (k == story.calls && recordsSurvive)
            answered = story.prepares;
        expectConsistent(story.wholeA, story.wholeB, answered, recordsSurvive);
        retry();
        expectConsistent(story.wholeA, story.wholeB, story.prepares, recordsSurvive);
    }

    // Runs `operation` journaled, then for every cut point and every kind of cut: restartAfter.
    void cutEverywhere(const std::function<void()>& operation, const std::function<void()>& retry,
                       bool prepares) {
        Story story;
        story.prepares = prepares;
        story.before = filesBelow(root());
        story.wholeB = filesOf(claimB());
        story.wholeA = filesOf(claimA());  // before an unprepare; a prepare's are taken after it
        const auto model = DiskModel::snapshot(root());
        journal::start(root());
        operation();
        const auto entries = journal::stop();
        ASSERT_FALSE(entries.empty());
        story.calls = entries.size();
        story.after = filesBelow(root());
        if (prepares)
            story.wholeA = filesOf(claimA());
        for (size_t k = 0; k <= entries.size(); ++k) {
            DiskModel replay = model;
            for (size_t i = 0; i < k; ++i)
                replay.apply(entries[i]);
            const auto cuts = cutsAt(k);
            for (size_t c = 0; c < cuts.size(); ++c) {
                SCOPED_TRACE("cut after call " + std::to_string(k) + " of " +
                             std::to_string(entries.size()) +
                             (k > 0 ? " (" + journal::describe(entries[k - 1]) + ")" : "") +
                             ", cut kind " + std::to_string(c));
                restartAfter(replay, cuts[c], k, story, retry);
                if (::testing::Test::HasFailure())
                    return;  // one cut's story is enough to read
            }
        }
    }

    numadra::testing::TempTree tree;
    discovery::Machine machine;
    std::map<std::string, api::Device> devices;
    numadra::testing::MockDev dev;
    std::set<std::string> volatileFolders;  // relative to root()
    std::unique_ptr<metrics::Registry> metrics;
    std::unique_ptr<Preparer> preparer;
};

TEST_P(PowerCutTest, AtEveryStepOfAPrepare) {
    ASSERT_TRUE(preparer->prepare(claimB(), node()));
    cutEverywhere([&] { ASSERT_TRUE(preparer->prepare(claimA(), node())); },
                  [&] {
                      auto again = preparer->prepare(claimA(), node());
                      ASSERT_TRUE(again) << again.error().message;
                  },
                  true);
}

TEST_P(PowerCutTest, AtEveryStepOfAnUnprepare) {
    ASSERT_TRUE(preparer->prepare(claimB(), node()));
    ASSERT_TRUE(preparer->prepare(claimA(), node()));
    cutEverywhere([&] { ASSERT_TRUE(preparer->unprepare(claimA().claim)); },
                  [&] { ASSERT_TRUE(preparer->unprepare(claimA().claim)); }, false);
}

// What the design costs, pinned: the record is the one ordering point (its file and its folder
// fsynced) and a claim's files are fsynced only on a disk, never their folders.
TEST_P(PowerCutTest, FsyncsPerPrepareAndUnprepare) {
    journal::start(root());
    ASSERT_TRUE(preparer->prepare(claimA(), node()));
    const size_t prepareSyncs = journal::countFsyncs(journal::stop());
    journal::start(root());
    ASSERT_TRUE(preparer->unprepare(claimA().claim));
    const size_t unprepareSyncs = journal::countFsyncs(journal::stop());
    // Claim A writes 2 metadata files, 2 metadata specs and its spec.
    const size_t record = GetParam().stateOnTmpfs ? 0 : 2;
    // Metadata files are read only through CDI specs: with these on tmpfs, none needs its fsync.
    const size_t metadata = GetParam().metadataOnTmpfs || GetParam().cdiOnTmpfs ? 0 : 2;
    const size_t cdi = GetParam().cdiOnTmpfs ? 0 : 3;
    EXPECT_EQ(prepareSyncs, record + metadata + cdi);
    EXPECT_EQ(unprepareSyncs, GetParam().stateOnTmpfs ? 0U : 1U);
}

INSTANTIATE_TEST_SUITE_P(Layouts, PowerCutTest,
                         ::testing::Values(Layout{"disk", false, false, false},
                                           // /var/run/cdi on tmpfs, the rest below the kubelet's
                                           // folder on disk: most nodes
                                           Layout{"node", true, false, false},
                                           Layout{"tmpfs", true, true, true}),
                         [](const ::testing::TestParamInfo<Layout>& layout) {
                             return std::string(layout.param.name);
                         });

}  // namespace
}  // namespace numadra::prepare
