#include "numadra/slices/publisher.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>

namespace numadra::slices {
namespace {

// An in-memory API server for the publisher's logic; the HTTP path is covered by the daemon's
// tests against the fake API server.
class MemoryApi : public SliceApi {
  public:
    std::map<std::string, api::Json> objects;
    std::vector<std::string> calls;
    int version = 1;
    bool dropListAttributes = false;
    // A 422 with these causes for every create and update, as the kube client reports one.
    std::vector<FieldCause> invalidCauses;
    // When set, the answer to every create and update (a 403 of an admission plugin...).
    std::optional<Error> refusal;
    int conflictsToInject = 0;

    Result<std::vector<api::Json>> list() override {
        std::lock_guard lock(mutex_);
        calls.emplace_back("list");
        std::vector<api::Json> out;
        out.reserve(objects.size());
        for (auto& [name, object] : objects)
            out.push_back(object);
        return out;
    }
    Result<api::Json> create(const api::Json& slice) override {
        const std::string name = slice["metadata"]["name"];
        std::lock_guard lock(mutex_);  // the publisher writes from several threads
        calls.push_back("create " + name);
        if (refusal)
            return *refusal;
        if (!invalidCauses.empty())
            return answer(422, "Invalid", "HTTP 422 Invalid", invalidCauses);
        if (objects.count(name))
            return answer(409, "AlreadyExists", "exists");
        return store(slice);
    }
    // A dry run: create's answers, nothing stored.
    Result<api::Json> tryCreate(const api::Json& slice) override {
        std::lock_guard lock(mutex_);
        calls.push_back("try " + slice["metadata"]["name"].get<std::string>());
        if (refusal)
            return *refusal;
        return slice;
    }
    Result<api::Json> update(const api::Json& slice) override {
        const std::string name = slice["metadata"]["name"];
        std::lock_guard lock(mutex_);
        calls.push_back("update " + name);
        if (refusal)
            return *refusal;
        if (conflictsToInject > 0) {
            --conflictsToInject;
            return answer(409, "Conflict", "conflict");
        }
        auto it = objects.find(name);
        if (it == objects.end())
            return answer(404, "NotFound", "not found");
        if (it->second["metadata"]["resourceVersion"] != slice["metadata"]["resourceVersion"]) {
            return answer(409, "Conflict", "conflict");
        }
        return store(slice);
    }
    Status remove(const std::string& name, const std::string&) override {
        std::lock_guard lock(mutex_);
        calls.push_back("delete " + name);
        objects.erase(name);
        return Status::Ok();
    }

    // An Error as the kube client makes it of an API server's Status (kube/errors.hpp: slices
    // does not see the client, so the kinds are spelled out here).
    static Error answer(int status, std::string reason, std::string message,
                        std::vector<FieldCause> causes = {}) {
        const ErrorKind kind = status == 422               ? ErrorKind::InvalidArgument
                               : status == 404             ? ErrorKind::NotFound
                               : status == 403             ? ErrorKind::PermissionDenied
                               : reason == "AlreadyExists" ? ErrorKind::AlreadyExists
                                                           : ErrorKind::Conflict;
        return Error{.message = std::move(message),
                     .kind = kind,
                     .httpStatus = status,
                     .reason = std::move(reason),
                     .causes = std::move(causes)};
    }

  private:
    std::mutex mutex_;
    Result<api::Json> store(api::Json slice) {
        slice["metadata"]["resourceVersion"] = std::to_string(++version);
        if (dropListAttributes && slice["spec"].contains("devices")) {
            for (auto& device : slice["spec"]["devices"]) {
                if (!device.contains("attributes"))
                    continue;
                for (auto& [key, value] : device["attributes"].items())
                    value.erase("ints");
            }
        }
        objects[slice["metadata"]["name"]] = slice;
        return slice;
    }
};

api::ResourceSlice slice(const std::string& name, const std::vector<std::string>& devices) {
    api::ResourceSlice s;
    s.name = name;
    s.driver = "numa.dra.dev";
    s.nodeName = "node-a";
    s.pool.name = "node-a";
    for (const auto& d : devices) {
        api::Device device;
        device.name = d;
        device.attributes["type"] = std::string("gpu");
        s.devices.push_back(device);
    }
    return s;
}

std::int64_t generationOf(const api::Json& object) {
    return object["spec"]["pool"]["generation"];
}

struct PublisherTest : ::testing::Test {
    MemoryApi api;
    Publisher publisher{api, "numa.dra.dev", "node-a", NodeOwner{"node-a", "uid-1"}};
};

TEST_F(PublisherTest, CreatesEverythingOnAnEmptyCluster) {
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"}), slice("s1", {"gpu-1"})});
    ASSERT_TRUE(stats.ok()) << stats.error().message;
    EXPECT_EQ(stats->created, 2u);
    EXPECT_EQ(stats->generation, 1);
    ASSERT_EQ(api.objects.size(), 2u);
    EXPECT_EQ(api.objects["s0"]["spec"]["pool"]["resourceSliceCount"], 2);
    EXPECT_EQ(api.objects["s0"]["metadata"]["ownerReferences"][0]["kind"], "Node");
    EXPECT_EQ(api.objects["s0"]["metadata"]["ownerReferences"][0]["uid"], "uid-1");
}

// Each create waits until another is in flight too (or gives up after 5 s): written one after
// the other, every create would fail.
class OverlapApi : public MemoryApi {
  public:
    Result<api::Json> create(const api::Json& slice) override {
        {
            std::unique_lock lock(overlapMutex_);
            ++inFlight_;
            maxInFlight = std::max(maxInFlight, inFlight_);
            overlap_.notify_all();
            const bool together =
                overlap_.wait_for(lock, std::chrono::seconds(5), [&] { return maxInFlight >= 2; });
            --inFlight_;
            if (!together)
                return Error{"no other write was in flight"};
        }
        return MemoryApi::create(slice);
    }
    int maxInFlight = 0;

  private:
    std::mutex overlapMutex_;
    std::condition_variable overlap_;
    int inFlight_ = 0;
};

TEST(PublisherWrites, ANodesSlicesAreWrittenInParallel) {
    OverlapApi api;
    Publisher publisher{api, "numa.dra.dev", "node-a", NodeOwner{"node-a", "uid-1"}};
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"}), slice("s1", {"gpu-1"}),
                                      slice("s2", {"gpu-2"}), slice("s3", {"gpu-3"})});
    ASSERT_TRUE(stats.ok()) << stats.error().message;
    EXPECT_EQ(stats->created, 4u);
    EXPECT_GE(api.maxInFlight, 2);
    EXPECT_EQ(api.objects.size(), 4u);
}

TEST_F(PublisherTest, NothingChangedMeansNoWrites) {
    ASSERT_TRUE(publisher.reconcile({slice("s0", {"gpu-0"})}).ok());
    api.calls.clear();
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"})});
    ASSERT_TRUE(stats.ok());
    EXPECT_FALSE(stats->changed());
    EXPECT_EQ(api.calls, (std::vector<std::string>{"list"}));
}

TEST_F(PublisherTest, OneChangedSliceKeepsTheGeneration) {
    ASSERT_TRUE(publisher.reconcile({slice("s0", {"gpu-0"}), slice("s1", {"gpu-1"})}).ok());
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"}), slice("s1", {"gpu-9"})});
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->updated, 1u);
    EXPECT_EQ(stats->generation, 1);
    EXPECT_EQ(api.objects["s1"]["spec"]["devices"][0]["name"], "gpu-9");
}

TEST_F(PublisherTest, ALiftedTaintIsAnUpdateOfThatSliceOnly) {
    auto tainted = slice("s1", {"gpu-1"});
    tainted.devices[0].taints.push_back({"numa.dra.dev/unhealthy", "aer-fatal", "NoSchedule"});
    ASSERT_TRUE(publisher.reconcile({slice("s0", {"gpu-0"}), tainted}).ok());
    ASSERT_TRUE(api.objects["s1"]["spec"]["devices"][0].contains("taints"));
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"}), slice("s1", {"gpu-1"})});
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->updated, 1u);
    EXPECT_FALSE(api.objects["s1"]["spec"]["devices"][0].contains("taints"));
}

TEST_F(PublisherTest, ATaintTheServerStampedIsNoDifference) {
    auto tainted = slice("s0", {"gpu-0"});
    tainted.devices[0].taints.push_back({"numa.dra.dev/unhealthy", "aer-fatal", "NoSchedule"});
    ASSERT_TRUE(publisher.reconcile({tainted}).ok());
    api.objects["s0"]["spec"]["devices"][0]["taints"][0]["timeAdded"] = "2026-11-22T00:00:00Z";
    api.calls.clear();
    auto stats = publisher.reconcile({tainted});
    ASSERT_TRUE(stats.ok());
    EXPECT_FALSE(stats->changed());  // no update loop while the device stays unhealthy
}

TEST_F(PublisherTest, ZeroValuesTheServerAddsAreNoDifference) {
    ASSERT_TRUE(publisher.reconcile({slice("s0", {"gpu-0"})}).ok());
    api.objects["s0"]["spec"]["devices"][0]["allowMultipleAllocations"] = false;
    api.objects["s0"]["spec"]["devices"][0]["taints"] = api::Json::array();
    api.calls.clear();
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"})});
    ASSERT_TRUE(stats.ok());
    EXPECT_FALSE(stats->changed());
}

TEST_F(PublisherTest, AddingASliceBumpsTheGenerationEverywhere) {
    ASSERT_TRUE(publisher.reconcile({slice("s0", {"gpu-0"})}).ok());
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"}), slice("s1", {"gpu-1"})});
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->generation, 2);
    EXPECT_EQ(generationOf(api.objects["s0"]), 2);
    EXPECT_EQ(generationOf(api.objects["s1"]), 2);
    EXPECT_EQ(api.objects["s0"]["spec"]["pool"]["resourceSliceCount"], 2);
}

TEST_F(PublisherTest, ObsoleteSlicesAreDeletedFirst) {
    ASSERT_TRUE(publisher.reconcile({slice("s0", {"gpu-0"}), slice("s1", {"gpu-1"})}).ok());
    api.calls.clear();
    auto stats = publisher.reconcile({slice("s0", {"gpu-0", "gpu-1"})});
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->deleted, 1u);
    ASSERT_GE(api.calls.size(), 3u);
    EXPECT_EQ(api.calls[1], "delete s1");
    EXPECT_EQ(api.calls[2], "update s0");
    EXPECT_EQ(api.objects.size(), 1u);
    EXPECT_EQ(generationOf(api.objects["s0"]), 2);
}

TEST_F(PublisherTest, ExternallyDeletedSliceIsRecreated) {
    ASSERT_TRUE(publisher.reconcile({slice("s0", {"gpu-0"}), slice("s1", {"gpu-1"})}).ok());
    api.objects.erase("s1");  // as the kubelet does after 30 s without the driver
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"}), slice("s1", {"gpu-1"})});
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->created, 1u);
    EXPECT_EQ(api.objects.size(), 2u);
    EXPECT_EQ(generationOf(api.objects["s1"]), generationOf(api.objects["s0"]));
}

TEST_F(PublisherTest, ConflictsAreRetriedWithAFreshList) {
    ASSERT_TRUE(publisher.reconcile({slice("s0", {"gpu-0"})}).ok());
    api.conflictsToInject = 2;
    auto stats = publisher.reconcile({slice("s0", {"gpu-1"})});
    ASSERT_TRUE(stats.ok()) << stats.error().message;
    EXPECT_EQ(api.objects["s0"]["spec"]["devices"][0]["name"], "gpu-1");
}

TEST_F(PublisherTest, DroppedListAttributesAreAFatalConfigurationError) {
    api.dropListAttributes = true;
    auto s = slice("s0", {"gpu-0"});
    s.devices[0].attributes["resource.kubernetes.io/numaNode"] =
        std::vector<std::int64_t>{5, 4, 6, 7};
    auto stats = publisher.reconcile({s});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::DroppedFields);
    EXPECT_NE(stats.error().message.find("resource.kubernetes.io/numaNode"), std::string::npos)
        << stats.error().message;
    EXPECT_NE(stats.error().message.find("DRAListTypeAttributes"), std::string::npos);
}

// kube-apiserver 1.37.2's cause for an attribute whose list value it stripped (seen by the
// end-to-end tests against the real server), and the words of its handwritten validation.
const FieldCause kNumaNodeValueRequired{
    "spec.devices[0].attributes[resource.kubernetes.io/numaNode]",
    "Invalid value: \"\": must specify one of: `int`, `bool`, `string`, `version`, `ints`, "
    "`bools`, `strings`, `versions`"};
const FieldCause kNumaNodeExactlyOneValue{
    "spec.devices[0].attributes[resource.kubernetes.io/numaNode]",
    "Required value: exactly one value must be specified"};

TEST_F(PublisherTest, ARefusedListAttributeIsRecognised) {
    api.invalidCauses = {kNumaNodeValueRequired};
    auto s = slice("s0", {"gpu-0"});
    s.devices[0].attributes["resource.kubernetes.io/numaNode"] =
        std::vector<std::int64_t>{5, 4, 6, 7};
    auto stats = publisher.reconcile({s});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::ListAttributesRefused);
    for (const char* named : {"ResourceSlice s0", "resource.kubernetes.io/numaNode",
                              "DRAListTypeAttributes", "--numa-list=auto", "HTTP 422"}) {
        EXPECT_NE(stats.error().message.find(named), std::string::npos)
            << named << " not in: " << stats.error().message;
    }
}

TEST_F(PublisherTest, ARefusedListAttributeIsRecognisedInTheHandwrittenValidationsWords) {
    api.invalidCauses = {kNumaNodeExactlyOneValue};
    auto s = slice("s0", {"gpu-0"});
    s.devices[0].attributes["resource.kubernetes.io/numaNode"] = std::vector<std::int64_t>{5, 4};
    auto stats = publisher.reconcile({s});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::ListAttributesRefused);
}

TEST_F(PublisherTest, A422AboutAScalarAttributeIsAnOrdinaryError) {
    api.invalidCauses = {kNumaNodeValueRequired};
    auto s = slice("s0", {"gpu-0"});
    s.devices[0].attributes["resource.kubernetes.io/numaNode"] = std::int64_t{5};
    auto stats = publisher.reconcile({s});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(stats.error().kind, ErrorKind::InvalidArgument);
    EXPECT_EQ(stats.error().httpStatus, 422);
    EXPECT_EQ(refusalOf(stats.error()), Refusal::None);
}

TEST_F(PublisherTest, A422NamingAnotherDeviceIsAnOrdinaryError) {
    api.invalidCauses = {{"spec.devices[1].attributes[resource.kubernetes.io/numaNode]",
                          kNumaNodeValueRequired.message}};
    auto s = slice("s0", {"gpu-0"});
    s.devices[0].attributes["resource.kubernetes.io/numaNode"] = std::vector<std::int64_t>{5, 4};
    auto stats = publisher.reconcile({s});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(stats.error().kind, ErrorKind::InvalidArgument);
    EXPECT_EQ(stats.error().httpStatus, 422);
    EXPECT_EQ(refusalOf(stats.error()), Refusal::None);
}

// The structure of kube-apiserver v1.37.2's cause (apierrors.NewInvalid of field.Invalid(path,
// "", ...)), decisive whatever the message's words.
TEST_F(PublisherTest, ARefusedListAttributeIsRecognisedByAnInvalidEmptyValueCause) {
    api.invalidCauses = {{"spec.devices[0].attributes[resource.kubernetes.io/numaNode]",
                          "Invalid value: \"\": words of a later release", "FieldValueInvalid"}};
    auto s = slice("s0", {"gpu-0"});
    s.devices[0].attributes["resource.kubernetes.io/numaNode"] = std::vector<std::int64_t>{5, 4};
    auto stats = publisher.reconcile({s});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::ListAttributesRefused);
    EXPECT_EQ(stats.error().kind, ErrorKind::FailedPrecondition);
    EXPECT_EQ(stats.error().causes, api.invalidCauses);
}

TEST_F(PublisherTest, ARefusedListAttributeIsRecognisedByARequiredValueCause) {
    api.invalidCauses = {{"spec.devices[0].attributes[resource.kubernetes.io/numaNode]",
                          "Required value", "FieldValueRequired"}};
    auto s = slice("s0", {"gpu-0"});
    s.devices[0].attributes["resource.kubernetes.io/numaNode"] = std::vector<std::int64_t>{5, 4};
    auto stats = publisher.reconcile({s});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::ListAttributesRefused);
}

TEST_F(PublisherTest, ARefusedListAttributeIsRecognisedInTheServersWordsWithItsReason) {
    FieldCause cause = kNumaNodeValueRequired;
    cause.reason = "FieldValueInvalid";  // all of what kube-apiserver 1.37.2 sends
    api.invalidCauses = {cause};
    auto s = slice("s0", {"gpu-0"});
    s.devices[0].attributes["resource.kubernetes.io/numaNode"] = std::vector<std::int64_t>{5, 4};
    auto stats = publisher.reconcile({s});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::ListAttributesRefused);
}

TEST_F(PublisherTest, AnInvalidListValueIsAnOrdinaryError) {
    // A bad value that is not empty: the list was kept and found wrong, not stripped.
    api.invalidCauses = {{"spec.devices[0].attributes[resource.kubernetes.io/numaNode]",
                          "Invalid value: [5,4]: some other rule", "FieldValueInvalid"}};
    auto s = slice("s0", {"gpu-0"});
    s.devices[0].attributes["resource.kubernetes.io/numaNode"] = std::vector<std::int64_t>{5, 4};
    auto stats = publisher.reconcile({s});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(stats.error().httpStatus, 422);
    EXPECT_EQ(refusalOf(stats.error()), Refusal::None);
}

// kube-apiserver v1.37.2's NodeDeclaredFeatureValidator: apierrors.NewForbidden, reason Forbidden,
// no causes, the feature in the message.
Error forbidden(std::string message, std::vector<FieldCause> causes = {}) {
    return Error{.message = std::move(message),
                 .kind = ErrorKind::PermissionDenied,
                 .httpStatus = 403,
                 .reason = "Forbidden",
                 .causes = std::move(causes)};
}

TEST_F(PublisherTest, ARefusedNodeAllocatableIsRecognisedInTheServersWords) {
    api.refusal = forbidden(
        "POST /apis/resource.k8s.io/v1/resourceslices: HTTP 403 Forbidden: "
        "resourceslices.resource.k8s.io \"s0\" is forbidden: node \"node-a\" does not support "
        "DRANodeAllocatableResources feature");
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"})});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::NodeAllocatableRefused);
    EXPECT_NE(stats.error().message.find("does not support"), std::string::npos);
}

TEST_F(PublisherTest, ARefusedNodeAllocatableIsRecognisedInOtherWordsNamingTheFeature) {
    api.refusal = forbidden("node \"node-a\" has not declared DRANodeAllocatableResources");
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"})});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::NodeAllocatableRefused);
}

TEST_F(PublisherTest, ARefusedNodeAllocatableIsRecognisedByACauseOnTheField) {
    api.refusal = forbidden("resourceslices.resource.k8s.io \"s0\" is forbidden",
                            {{"spec.devices[0].nodeAllocatableResources",
                              "Forbidden: the node does not declare it", "FieldValueForbidden"}});
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"})});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::NodeAllocatableRefused);
}

TEST_F(PublisherTest, ARefusedNodeAllocatableIsRecognisedByACauseNamingTheFeature) {
    api.refusal = forbidden("resourceslices.resource.k8s.io \"s0\" is forbidden",
                            {{"", "DRANodeAllocatableResources is not declared", ""}});
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"})});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::NodeAllocatableRefused);
}

// Asked before the first write (a dry run), the API server's refusal is the same Refusal, and
// nothing is stored.
TEST_F(PublisherTest, ATriedPublishingMeetsTheRefusalWithoutWriting) {
    api.refusal = forbidden(
        "resourceslices.resource.k8s.io \"s0\" is forbidden: node \"node-a\" does not support "
        "DRANodeAllocatableResources feature");
    const Status tried = publisher.tryPublishing(slice("s0", {"gpu-0"}));
    ASSERT_FALSE(tried.ok());
    EXPECT_EQ(refusalOf(tried.error()), Refusal::NodeAllocatableRefused);
    EXPECT_EQ(api.calls, std::vector<std::string>{"try s0"});
    EXPECT_TRUE(api.objects.empty());
}

TEST_F(PublisherTest, ATriedPublishingTheServerAcceptsIsOk) {
    EXPECT_TRUE(publisher.tryPublishing(slice("s0", {"gpu-0"})).ok());
    EXPECT_TRUE(api.objects.empty());
}

TEST_F(PublisherTest, AnRbacRefusalIsAnOrdinaryError) {
    api.refusal = forbidden(
        "resourceslices.resource.k8s.io is forbidden: User \"system:serviceaccount:x:y\" cannot "
        "create resource \"resourceslices\" in API group \"resource.k8s.io\" at the cluster scope");
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"})});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(stats.error().kind, ErrorKind::PermissionDenied);
    EXPECT_EQ(refusalOf(stats.error()), Refusal::None);
}

TEST_F(PublisherTest, AnUnmappedDeviceIsAnOrdinaryError) {
    // The same admission plugin's other refusal: the feature is not what is missing.
    api.refusal = forbidden(
        "resourceslices.resource.k8s.io \"s0\" is forbidden: device \"gpu-0\" in ResourceSlice "
        "has NodeAllocatableResources but does not map to any nodes");
    auto stats = publisher.reconcile({slice("s0", {"gpu-0"})});
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(refusalOf(stats.error()), Refusal::None);
}

TEST(RefusalOf, AnApiAnswerIsNeverARefusal) {
    EXPECT_EQ(refusalOf(Error{.message = "x",
                              .kind = ErrorKind::FailedPrecondition,
                              .httpStatus = 412,
                              .reason = "DroppedFields"}),
              Refusal::None);
    EXPECT_EQ(refusalOf(Error{"x"}), Refusal::None);
}

TEST_F(PublisherTest, RemoveAllDeletesOnlyThisDriversSlices) {
    ASSERT_TRUE(publisher.reconcile({slice("s0", {"gpu-0"})}).ok());
    api::Json other = api::toJson(slice("other", {"x"}));
    other["spec"]["driver"] = "other.example.com";
    api.objects["other"] = other;
    auto removed = publisher.removeAll();
    ASSERT_TRUE(removed.ok());
    EXPECT_EQ(*removed, 1u);
    EXPECT_EQ(api.objects.count("other"), 1u);
}

TEST(SentFields, QuantitiesCompareByValue) {
    api::Json sent = {{"value", "1000M"}, {"n", 1}};
    api::Json stored = {{"value", "1G"}, {"n", 1}, {"added", true}};
    EXPECT_TRUE(sentFieldsPreserved(sent, stored));
    std::vector<std::string> dropped;
    EXPECT_FALSE(sentFieldsPreserved({{"x", 1}}, api::Json::object(), &dropped));
    EXPECT_EQ(dropped, (std::vector<std::string>{".x"}));
}

}  // namespace
}  // namespace numadra::slices
