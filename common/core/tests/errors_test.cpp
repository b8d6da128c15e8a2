#include "numadra/common/errors.hpp"

#include <gtest/gtest.h>

#include <cerrno>

namespace numadra {
namespace {

TEST(ErrorFromErrno, NamesTheCallAndKeepsTheErrno) {
    const Error error = errorFromErrno(ENOENT, "opening /x");
    EXPECT_EQ(error.message, "opening /x: No such file or directory");
    EXPECT_EQ(error.kind, ErrorKind::NotFound);
    EXPECT_EQ(error.errnoValue, ENOENT);
    EXPECT_EQ(error.httpStatus, 0);
}

TEST(ErrorFromErrno, WithoutWhatIsTheDescriptionAlone) {
    EXPECT_EQ(errorFromErrno(EACCES, "").message, "Permission denied");
}

TEST(ErrorFromErrno, KindsCallersDecideBy) {
    EXPECT_EQ(errorKindOfErrno(ENOENT), ErrorKind::NotFound);
    EXPECT_EQ(errorKindOfErrno(EEXIST), ErrorKind::AlreadyExists);
    EXPECT_EQ(errorKindOfErrno(EADDRINUSE), ErrorKind::AlreadyExists);
    EXPECT_EQ(errorKindOfErrno(EACCES), ErrorKind::PermissionDenied);
    EXPECT_EQ(errorKindOfErrno(EPERM), ErrorKind::PermissionDenied);
    EXPECT_EQ(errorKindOfErrno(EINVAL), ErrorKind::InvalidArgument);
    EXPECT_EQ(errorKindOfErrno(ENOSPC), ErrorKind::ResourceExhausted);
    EXPECT_EQ(errorKindOfErrno(EAGAIN), ErrorKind::Unavailable);
    EXPECT_EQ(errorKindOfErrno(ETIMEDOUT), ErrorKind::DeadlineExceeded);
    EXPECT_EQ(errorKindOfErrno(ENOTEMPTY), ErrorKind::FailedPrecondition);
    EXPECT_EQ(errorKindOfErrno(ENOSYS), ErrorKind::Unsupported);
    EXPECT_EQ(errorKindOfErrno(0), ErrorKind::Unknown);
}

TEST(Error, TextAloneIsAnUnknownKind) {
    const Error error{"text"};
    EXPECT_EQ(error.kind, ErrorKind::Unknown);
    EXPECT_EQ(error.errnoValue, 0);
    EXPECT_TRUE(error.reason.empty());
}

TEST(Error, WithMessageKeepsKindAndDetails) {
    const Error rephrased = errorFromErrno(ENOENT, "x").withMessage("reading the config: x");
    EXPECT_EQ(rephrased.message, "reading the config: x");
    EXPECT_TRUE(rephrased.is(ErrorKind::NotFound));
    EXPECT_EQ(rephrased.errnoValue, ENOENT);
}

}  // namespace
}  // namespace numadra
