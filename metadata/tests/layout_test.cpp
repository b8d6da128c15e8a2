#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "numadra/common/files.hpp"
#include "numadra/metadata/device_metadata.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::metadata {
namespace {

using numadra::testing::TempTree;
using Strings = std::vector<std::string>;

constexpr const char* kDriver = "numa.example.com";
constexpr const char* kUid = "0b6a3c1e-7d2f-4a9b-8c3d-2e1f0a9b8c7d";

Layout layoutIn(const TempTree& tree) {
    return Layout{kDriver, tree.path("plugins/numa.example.com/dra-device-metadata"),
                  tree.path("cdi")};
}

DeviceMetadata metadataFor(const std::optional<std::string>& podClaimName = std::nullopt) {
    DeviceMetadata m;
    m.claimName = "my-claim";
    m.claimNamespace = "default";
    m.claimUid = kUid;
    m.podClaimName = podClaimName;
    m.requestName = "gpu";
    Device d;
    d.driver = kDriver;
    d.pool = "node-1";
    d.name = "gpu-0";
    d.attributes["resource.kubernetes.io/numaNode"] = std::int64_t{1};
    m.devices.push_back(d);
    return m;
}

RequestFiles filesFor(const TempTree& tree,
                      const std::optional<std::string>& podClaimName = std::nullopt) {
    auto files = requestFiles(layoutIn(tree), "default", "my-claim", kUid, "gpu", podClaimName);
    EXPECT_TRUE(files.ok()) << files.error().message;
    return files.ok() ? *files : RequestFiles{};
}

struct stat statOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st;
}

DeviceMetadata readBack(const std::string& path) {
    auto content = files::readFile(path);
    EXPECT_TRUE(content.ok()) << content.error().message;
    if (!content.ok())
        return {};
    auto decoded = decodeStream(*content, path);
    EXPECT_TRUE(decoded.ok()) << decoded.error().message;
    return decoded.ok() ? *decoded : DeviceMetadata{};
}

TEST(RequestFiles, ClaimReferencedByName) {
    TempTree tree;
    const auto files = filesFor(tree);
    const auto metadataDir = tree.path("plugins/numa.example.com/dra-device-metadata");
    EXPECT_EQ(files.claimDirectory, metadataDir + "/default_my-claim");
    EXPECT_EQ(files.hostFile, metadataDir + "/default_my-claim/gpu/metadata.json");
    EXPECT_EQ(files.containerPath,
              "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/my-claim/gpu/"
              "numa.example.com-metadata.json");
    EXPECT_EQ(files.cdiSpecFile,
              tree.path("cdi") + "/numa.example.com_metadata_" + kUid + "_gpu.json");
    EXPECT_EQ(files.cdiKind, "numa.example.com/metadata");
    EXPECT_EQ(files.cdiDeviceName, std::string(kUid) + "_gpu");
    EXPECT_EQ(files.cdiDeviceId, "numa.example.com/metadata=" + std::string(kUid) + "_gpu");
}

TEST(RequestFiles, ClaimFromATemplateUsesThePodClaimName) {
    TempTree tree;
    const auto files = filesFor(tree, std::string("gpus"));
    EXPECT_EQ(files.containerPath,
              "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/gpus/gpu/"
              "numa.example.com-metadata.json");
    // The host side is keyed by the claim, whatever its origin.
    EXPECT_EQ(files.hostFile, tree.path("plugins/numa.example.com/dra-device-metadata") +
                                  "/default_my-claim/gpu/metadata.json");
}

TEST(RequestFiles, SubrequestUsesTheBaseRequestInEveryPath) {
    TempTree tree;
    auto files = requestFiles(layoutIn(tree), "default", "my-claim", kUid, "gpu/large", {});
    ASSERT_TRUE(files.ok()) << files.error().message;
    EXPECT_EQ(files->hostFile, files->claimDirectory + "/gpu/metadata.json");
    EXPECT_EQ(files->containerPath,
              "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/my-claim/gpu/"
              "numa.example.com-metadata.json");
    EXPECT_EQ(files->cdiDeviceName, std::string(kUid) + "_gpu");
}

TEST(RequestFiles, TrailingSlashesInTheLayoutAreNormalised) {
    TempTree tree;
    auto layout = layoutIn(tree);
    layout.metadataDir += "/";
    layout.cdiDir += "//";
    auto files = requestFiles(layout, "default", "my-claim", kUid, "gpu", {});
    ASSERT_TRUE(files.ok()) << files.error().message;
    EXPECT_EQ(files->claimDirectory,
              tree.path("plugins/numa.example.com/dra-device-metadata/default_my-claim"));
    EXPECT_EQ(files->cdiSpecFile,
              tree.path("cdi") + "/numa.example.com_metadata_" + kUid + "_gpu.json");
}

TEST(RequestFiles, RelativeLayoutIsRejected) {
    auto files = requestFiles(Layout{kDriver, "metadata", "/var/run/cdi"}, "default", "my-claim",
                              kUid, "gpu", {});
    EXPECT_FALSE(files.ok());
}

TEST(RequestFiles, DottedClaimNameIsAValidSubdomain) {
    TempTree tree;
    auto files = requestFiles(layoutIn(tree), "default", "a.b-c.d", kUid, "gpu", {});
    ASSERT_TRUE(files.ok()) << files.error().message;
    EXPECT_EQ(std::filesystem::path(files->claimDirectory).filename(), "default_a.b-c.d");
}

TEST(CdiSpec, BindMountsTheFileReadOnly) {
    TempTree tree;
    const auto files = filesFor(tree);
    const auto spec = cdiSpec(files);
    EXPECT_EQ(spec.cdiVersion, "");  // written as the minimum the content needs
    EXPECT_EQ(spec.kind, "numa.example.com/metadata");
    ASSERT_EQ(spec.devices.size(), 1u);
    EXPECT_EQ(spec.devices[0].name, files.cdiDeviceName);
    const auto& edits = spec.devices[0].containerEdits;
    EXPECT_TRUE(edits.env.empty());
    EXPECT_TRUE(edits.deviceNodes.empty());
    ASSERT_EQ(edits.mounts.size(), 1u);
    EXPECT_EQ(edits.mounts[0].hostPath, files.hostFile);
    EXPECT_EQ(edits.mounts[0].containerPath, files.containerPath);
    EXPECT_EQ(edits.mounts[0].options, (Strings{"ro", "bind"}));
    EXPECT_EQ(edits.mounts[0].type, "");
    EXPECT_TRUE(spec.containerEdits.empty());
}

TEST(CdiSpec, PassesTheRuntimesValidation) {
    TempTree tree;
    const auto spec = cdiSpec(filesFor(tree));
    auto valid = cdi::validate(spec);
    EXPECT_TRUE(valid.ok()) << valid.error().message;
    // The device name starts with the claim UID: a digit needs 0.5.0.
    EXPECT_EQ(cdi::minimumVersion(spec), "0.5.0");
    EXPECT_EQ(cdi::parse(cdi::serialize(spec), "written")->cdiVersion, "0.5.0");
}

TEST(CdiSpec, IsWrittenAtTheLowestVersionItsContentNeeds) {
    // A UID that starts with a letter: 0.3.0, which every CDI-capable runtime reads.
    TempTree tree;
    auto files = requestFiles(layoutIn(tree), "default", "claim",
                              "b7c1e0aa-0000-4000-8000-000000000001", "gpu", {});
    ASSERT_TRUE(files.ok()) << files.error().message;
    const auto spec = cdiSpec(*files);
    EXPECT_EQ(cdi::minimumVersion(spec), "0.3.0");
    EXPECT_EQ(cdi::parse(cdi::serialize(spec), "written")->cdiVersion, "0.3.0");
}

TEST(CreateFile, WritesAReadableFileWithMode0644) {
    TempTree tree;
    const auto files = filesFor(tree);
    const auto m = metadataFor();
    auto created = createFile(files, m, {kV1beta1, kV1alpha1});
    ASSERT_TRUE(created.ok()) << created.error().message;
    EXPECT_EQ(statOf(files.hostFile).st_mode & 07777, 0644u);
    EXPECT_EQ(readBack(files.hostFile), m);
    auto content = files::readFile(files.hostFile);
    ASSERT_TRUE(content.ok());
    EXPECT_EQ(*content, encodeStream(m, {kV1beta1, kV1alpha1}));
}

TEST(CreateFile, LeavesNothingButTheFileInTheRequestFolder) {
    TempTree tree;
    const auto files = filesFor(tree);
    ASSERT_TRUE(createFile(files, metadataFor(), {kV1alpha1}).ok());
    auto entries = files::listDirectory(files.claimDirectory + "/gpu");
    ASSERT_TRUE(entries.ok()) << entries.error().message;
    EXPECT_EQ(*entries, (Strings{"metadata.json"}));
}

TEST(CreateFile, RejectsAnInvalidVersionListWithoutWriting) {
    TempTree tree;
    const auto files = filesFor(tree);
    EXPECT_FALSE(createFile(files, metadataFor(), {}).ok());
    EXPECT_FALSE(files::exists(files.hostFile));
}

TEST(UpdateFile, IncrementsTheGenerationEachTime) {
    TempTree tree;
    const auto files = filesFor(tree);
    ASSERT_TRUE(createFile(files, metadataFor(), {kV1alpha1}).ok());
    EXPECT_EQ(readBack(files.hostFile).generation, 1);
    for (std::int64_t expected : {2, 3}) {
        auto updated = updateFile(files, metadataFor(), {kV1alpha1});
        ASSERT_TRUE(updated.ok()) << updated.error().message;
        EXPECT_EQ(*updated, expected);
        EXPECT_EQ(readBack(files.hostFile).generation, expected);
    }
}

TEST(UpdateFile, KeepsTheStoredPodClaimName) {
    TempTree tree;
    const auto files = filesFor(tree, std::string("gpus"));
    ASSERT_TRUE(createFile(files, metadataFor(std::string("gpus")), {kV1alpha1}).ok());
    // The updater does not know the pod claim name.
    ASSERT_TRUE(updateFile(files, metadataFor(), {kV1alpha1}).ok());
    EXPECT_EQ(readBack(files.hostFile).podClaimName, std::optional<std::string>("gpus"));
}

TEST(UpdateFile, WritesTheNewDevices) {
    TempTree tree;
    const auto files = filesFor(tree);
    ASSERT_TRUE(createFile(files, metadataFor(), {kV1alpha1}).ok());
    auto m = metadataFor();
    m.devices[0].networkData = NetworkData{"eth1", {"192.0.2.5/24"}, ""};
    ASSERT_TRUE(updateFile(files, m, {kV1beta1, kV1alpha1}).ok());
    m.generation = 2;
    EXPECT_EQ(readBack(files.hostFile), m);
}

TEST(UpdateFile, KeepsTheInode) {
    TempTree tree;
    const auto files = filesFor(tree);
    ASSERT_TRUE(createFile(files, metadataFor(), {kV1alpha1}).ok());
    const auto before = statOf(files.hostFile);
    ASSERT_TRUE(updateFile(files, metadataFor(), {kV1beta1, kV1alpha1}).ok());
    const auto after = statOf(files.hostFile);
    EXPECT_EQ(before.st_ino, after.st_ino);
    EXPECT_EQ(before.st_dev, after.st_dev);
    EXPECT_EQ(after.st_mode & 07777, 0644u);
}

TEST(UpdateFile, MissingFileFailsWithEnoent) {
    TempTree tree;
    const auto files = filesFor(tree);
    auto updated = updateFile(files, metadataFor(), {kV1alpha1});
    ASSERT_FALSE(updated.ok());
    EXPECT_EQ(updated.error().errnoValue, ENOENT);
    EXPECT_NE(updated.error().message.find(files.hostFile), std::string::npos)
        << updated.error().message;
    EXPECT_FALSE(files::exists(files.hostFile));
}

TEST(UpdateFile, CorruptFileFailsWithoutRewritingIt) {
    TempTree tree;
    const auto files = filesFor(tree);
    tree.file(std::filesystem::path(files.hostFile).lexically_relative(tree.root()).string(),
              "{\"kind\": ");
    auto updated = updateFile(files, metadataFor(), {kV1alpha1});
    ASSERT_FALSE(updated.ok());
    EXPECT_NE(updated.error().message.find(files.hostFile), std::string::npos);
    EXPECT_EQ(*files::readFile(files.hostFile), "{\"kind\": ");
}

// ---- names that must never reach a path ------------------------------------------------------

struct Names {
    std::string ns = "default", claim = "my-claim", uid = kUid, request = "gpu", driver = kDriver;
    std::optional<std::string> podClaimName = std::string("gpus");
};

struct Field {
    const char* label;  // as the error message names it
    std::function<void(Names&, const std::string&)> set;
};

const std::vector<Field>& fields() {
    static const std::vector<Field> all = {
        {"claim namespace", [](Names& n, const std::string& v) { n.ns = v; }},
        {"claim name", [](Names& n, const std::string& v) { n.claim = v; }},
        {"request name", [](Names& n, const std::string& v) { n.request = v; }},
        {"driver name", [](Names& n, const std::string& v) { n.driver = v; }},
        {"podClaimName", [](Names& n, const std::string& v) { n.podClaimName = v; }},
        {"claim UID", [](Names& n, const std::string& v) { n.uid = v; }},
    };
    return all;
}

Result<RequestFiles> filesForNames(const TempTree& tree, const Names& names) {
    // Two levels below the sandbox, so even an accepted "../" would still land in the tree.
    const Layout layout{names.driver, tree.path("sandbox/a/b/metadata"),
                        tree.path("sandbox/a/b/cdi")};
    return requestFiles(layout, names.ns, names.claim, names.uid, names.request,
                        names.podClaimName);
}

// Fails the test if the names were accepted; then also writes, so an escape would show up in
// the tree check below.
void expectRejected(const TempTree& tree, const Field& field, const std::string& value) {
    Names names;
    field.set(names, value);
    auto files = filesForNames(tree, names);
    EXPECT_FALSE(files.ok()) << field.label << " = \"" << value << "\" was accepted";
    if (files.ok()) {
        (void)createFile(*files, metadataFor(), {kV1alpha1});
        return;
    }
    const auto& message = files.error().message;
    EXPECT_NE(message.find(field.label), std::string::npos) << message;
    if (value.find_first_of("\"\\\n") == std::string::npos) {  // those are escaped
        const std::string quoted = "\"" + value.substr(0, 64) + "\"";
        const std::string truncated = "\"" + value.substr(0, 64) + "\"...";
        EXPECT_NE(message.find(value.size() > 64 ? truncated : quoted), std::string::npos)
            << message;
    }
    EXPECT_LT(message.size(), 400u) << "a long value must be truncated in the message";
}

void expectNothingWritten(const TempTree& tree) {
    std::vector<std::string> entries;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(tree.root()))
        entries.push_back(entry.path().string());
    EXPECT_EQ(entries, (Strings{tree.path("sandbox")}));
}

TEST(ValidateNames, AcceptsTheUsualNames) {
    EXPECT_TRUE(validateNames("default", "my-claim", "gpu", kDriver, std::nullopt).ok());
    EXPECT_TRUE(
        validateNames("kube-system", "a.b.c", "gpu/large-0", "gpu.example.com", std::string("gpus"))
            .ok());
    EXPECT_TRUE(validateNames(std::string(63, 'a'), std::string(253, 'b'), std::string(63, 'c'),
                              "d", std::string(63, 'e'))
                    .ok());
}

TEST(ValidateNames, RejectsPathTricksInEveryField) {
    TempTree tree;
    tree.dir("sandbox");
    const std::vector<std::string> bad = {"../x", "..",    ".",    "",
                                          "/",    "a/b/c", "/abs", std::string(300, 'a'),
                                          "x/..", "a\nb",  "a b",  "a\\b"};
    for (const auto& field : fields()) {
        for (const auto& value : bad)
            expectRejected(tree, field, value);
    }
    expectNothingWritten(tree);
}

TEST(ValidateNames, RejectsUpperCaseInEveryKubernetesName) {
    TempTree tree;
    tree.dir("sandbox");
    for (const auto& field : fields()) {
        if (std::string_view(field.label) == "claim UID")
            continue;  // UIDs are not Kubernetes names; see AcceptsAnUpperCaseUid
        expectRejected(tree, field, "Gpu");
    }
    expectNothingWritten(tree);
}

TEST(ValidateNames, RejectsSubrequestsOutsideTheRequestName) {
    TempTree tree;
    tree.dir("sandbox");
    for (const auto& field : fields()) {
        if (std::string_view(field.label) != "request name")
            expectRejected(tree, field, "gpu/large");
    }
    expectNothingWritten(tree);
}

TEST(ValidateNames, RejectsBadRequestSplits) {
    TempTree tree;
    tree.dir("sandbox");
    for (const char* value : {"gpu/", "/gpu", "gpu//x", "gpu/..", "gpu/Large", "-gpu/x"})
        expectRejected(tree, fields()[2], value);
    expectNothingWritten(tree);
}

TEST(ValidateNames, RejectsLabelsLongerThan63AndSubdomainsLongerThan253) {
    EXPECT_FALSE(validateNames(std::string(64, 'a'), "c", "r", kDriver, {}).ok());
    EXPECT_FALSE(validateNames("n", std::string(254, 'a'), "r", kDriver, {}).ok());
    EXPECT_FALSE(validateNames("n", "c", std::string(64, 'a'), kDriver, {}).ok());
    EXPECT_FALSE(validateNames("n", "c", "r/" + std::string(64, 'a'), kDriver, {}).ok());
    EXPECT_FALSE(validateNames("n", "c", "r", std::string(254, 'a'), {}).ok());
    EXPECT_FALSE(validateNames("n", "c", "r", kDriver, std::string(64, 'a')).ok());
}

TEST(ValidateNames, PodClaimNameIsALabelNotASubdomain) {
    EXPECT_FALSE(validateNames("n", "c", "r", kDriver, std::string("a.b")).ok());
}

TEST(ValidateNames, RejectsUidsThatAreNotPlainTokens) {
    TempTree tree;
    tree.dir("sandbox");
    for (const auto& value : Strings{"-abc", "abc-", "a_b", "a.b", std::string(129, 'a')})
        expectRejected(tree, fields()[5], value);
    expectNothingWritten(tree);
}

TEST(ValidateNames, AcceptsAnUpperCaseUid) {
    // The rule for the claim UID is [A-Za-z0-9-]: it is an opaque token, not a DNS name.
    TempTree tree;
    auto files = requestFiles(layoutIn(tree), "default", "my-claim", "ABC-123", "gpu", {});
    EXPECT_TRUE(files.ok()) << files.error().message;
}

}  // namespace
}  // namespace numadra::metadata
