#include "numadra/kube/errors.hpp"

#include <gtest/gtest.h>

namespace numadra::kube {
namespace {

TEST(ErrorKindOfHttp, TheReasonTellsTwo409sApart) {
    EXPECT_EQ(errorKindOfHttp(409, "AlreadyExists"), ErrorKind::AlreadyExists);
    EXPECT_EQ(errorKindOfHttp(409, "Conflict"), ErrorKind::Conflict);
    EXPECT_EQ(errorKindOfHttp(409), ErrorKind::Conflict);
}

TEST(ErrorKindOfHttp, TheStatusDecidesWithoutAReasonWeKnow) {
    EXPECT_EQ(errorKindOfHttp(400), ErrorKind::InvalidArgument);
    EXPECT_EQ(errorKindOfHttp(401), ErrorKind::Unauthenticated);
    EXPECT_EQ(errorKindOfHttp(403, "SomethingNew"), ErrorKind::PermissionDenied);
    EXPECT_EQ(errorKindOfHttp(404), ErrorKind::NotFound);
    EXPECT_EQ(errorKindOfHttp(410), ErrorKind::Expired);
    EXPECT_EQ(errorKindOfHttp(415), ErrorKind::Unsupported);
    EXPECT_EQ(errorKindOfHttp(422), ErrorKind::InvalidArgument);
    EXPECT_EQ(errorKindOfHttp(429), ErrorKind::Unavailable);
    EXPECT_EQ(errorKindOfHttp(500), ErrorKind::Internal);
    EXPECT_EQ(errorKindOfHttp(503), ErrorKind::Unavailable);
    EXPECT_EQ(errorKindOfHttp(504), ErrorKind::DeadlineExceeded);
    EXPECT_EQ(errorKindOfHttp(418), ErrorKind::Unknown);
}

TEST(ErrorKindOfHttp, KubernetesReasons) {
    EXPECT_EQ(errorKindOfHttp(410, "Expired"), ErrorKind::Expired);
    EXPECT_EQ(errorKindOfHttp(410, "Gone"), ErrorKind::Expired);
    EXPECT_EQ(errorKindOfHttp(422, "Invalid"), ErrorKind::InvalidArgument);
    EXPECT_EQ(errorKindOfHttp(403, "Forbidden"), ErrorKind::PermissionDenied);
    EXPECT_EQ(errorKindOfHttp(500, "ServerTimeout"), ErrorKind::Unavailable);
    EXPECT_EQ(errorKindOfHttp(504, "Timeout"), ErrorKind::DeadlineExceeded);
}

TEST(ErrorFromHttp, KeepsTheDetails) {
    const Error error = errorFromHttp(422, "Invalid", "HTTP 422 Invalid: x",
                                      {{"spec.x", "Required value", "FieldValueRequired"}});
    EXPECT_EQ(error.kind, ErrorKind::InvalidArgument);
    EXPECT_EQ(error.httpStatus, 422);
    EXPECT_EQ(error.reason, "Invalid");
    EXPECT_EQ(error.errnoValue, 0);
    ASSERT_EQ(error.causes.size(), 1u);
    EXPECT_EQ(error.causes[0].reason, "FieldValueRequired");
    EXPECT_EQ(error.message, "HTTP 422 Invalid: x");
}

}  // namespace
}  // namespace numadra::kube
