// What the API server takes, as the daemon learns it: one value, each capability withdrawn once.

#include "../server_capabilities.hpp"

#include <gtest/gtest.h>

namespace numadra::daemon {
namespace {

TEST(NegotiatedCapabilities, EveryCapabilityIsTakenUntilRefused) {
    NegotiatedCapabilities capabilities;
    const auto taken = capabilities.current();
    EXPECT_TRUE(taken.deviceTaints);
    EXPECT_TRUE(taken.listAttributes);
    EXPECT_TRUE(taken.nodeAllocatable);
}

TEST(NegotiatedCapabilities, OnlyTheFirstRefusalWithdraws) {
    NegotiatedCapabilities capabilities;
    EXPECT_TRUE(capabilities.withdraw(&ServerCapabilities::listAttributes));
    EXPECT_FALSE(capabilities.withdraw(&ServerCapabilities::listAttributes));
    EXPECT_FALSE(capabilities.current().listAttributes);
}

TEST(NegotiatedCapabilities, WithdrawingOneLeavesTheOthers) {
    NegotiatedCapabilities capabilities;
    capabilities.withdraw(&ServerCapabilities::nodeAllocatable);
    const auto taken = capabilities.current();
    EXPECT_FALSE(taken.nodeAllocatable);
    EXPECT_TRUE(taken.deviceTaints);
    EXPECT_TRUE(taken.listAttributes);
}

}  // namespace
}  // namespace numadra::daemon
