// GrpcServer against real clients on a real unix socket: grpc++ (the kubelet speaks grpc-go, and
// both are gRPC's own implementations of the protocol) and, for what grpc++ will not send, a bare
// nghttp2 client.

#include "numadra/plugin/grpc/server.hpp"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "numadra/testing/temp_tree.hpp"
#include "numadra/testing/threads.hpp"
#include "numadra/testing/unix_socket.hpp"
#include "pkg/apis/dra-health/v1alpha1/api.grpc.pb.h"
#include "pkg/apis/dra/v1/api.grpc.pb.h"
#include "pkg/apis/pluginregistration/v1/api.grpc.pb.h"
#include "protocol.hpp"
#include "raw_h2_client.hpp"

namespace numadra::rpc {
namespace {

using namespace std::chrono_literals;
using testing::RawH2Client;

constexpr const char* kGetInfo = "/pluginregistration.Registration/GetInfo";
constexpr const char* kNotify = "/pluginregistration.Registration/NotifyRegistrationStatus";
constexpr const char* kWatch = "/v1alpha1.DRAResourceHealth/NodeWatchResources";

std::size_t threadCount() {
    return numadra::testing::threadNames().size();
}

// Collects what handlers hand over, for the test's thread to wait on.
template <class T>
class Mailbox {
  public:
    void put(T value) {
        std::lock_guard lock(mutex_);
        values_.push_back(std::move(value));
        changed_.notify_all();
    }
    // The first `count` values, or fewer after `patience`.
    std::vector<T> wait(std::size_t count, std::chrono::milliseconds patience = 10s) {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, patience, [&] { return values_.size() >= count; });
        return values_;
    }
    T first() { return wait(1).at(0); }

  private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<T> values_;
};

// Waits until `condition` holds, up to 5 s.
template <class Condition>
bool eventually(Condition condition) {
    const auto giveUp = Clock::now() + 5s;
    while (!condition()) {
        if (Clock::now() > giveUp)
            return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

class GrpcServerTest : public ::testing::Test {
  protected:
    void start(ServerOptions options = {}, const std::function<void(GrpcServer&)>& more = {}) {
        socketPath_ = tree_.path("grpc.sock");
        listening_ = numadra::testing::listenOnUnixSocket(socketPath_);
        loop_ = std::move(EventLoop::create().value());
        loop_->start();
        server_ = std::make_unique<GrpcServer>(*loop_, options);
        registerHandlers(*server_);
        if (more)
            more(*server_);
        ASSERT_TRUE(server_->serve(listening_.get()).ok());
    }
    void TearDown() override {
        if (server_)
            server_->stop(0ms);
        server_.reset();
        if (loop_)
            loop_->stop();
    }

    // GetInfo answers at once; NotifyRegistrationStatus and NodeWatchResources hand their call to
    // the test (unaryCalls_, streams_).
    void registerHandlers(GrpcServer& server) {
        server.addUnary(kGetInfo,
                        [](const std::shared_ptr<UnaryCall>& call, const std::string& request) {
                            pluginregistration::InfoRequest info;
                            pluginregistration::PluginInfo reply;
                            if (!info.ParseFromString(request)) {
                                call->finish({StatusCode::InvalidArgument, "bad request"});
                                return;
                            }
                            reply.set_type("DRAPlugin");
                            reply.set_name("numa.example.com");
                            call->finish(RpcStatus::ok(), reply.SerializeAsString());
                        });
        server.addUnary(kNotify,
                        [this](const std::shared_ptr<UnaryCall>& call, const std::string& request) {
                            pluginregistration::RegistrationStatus status;
                            status.ParseFromString(request);
                            unaryCalls_.put({call, status.error()});
                        });
        server.addServerStreaming(kWatch, [this](const std::shared_ptr<ServerStream>& stream,
                                                 const std::string&) { streams_.put(stream); });
    }

    std::shared_ptr<grpc::Channel> channel(int distinct = 0) const {
        grpc::ChannelArguments arguments;
        // Separate channels share one connection unless told otherwise.
        arguments.SetInt("numadra.test.channel", distinct);
        arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        return grpc::CreateCustomChannel("unix:" + socketPath_, grpc::InsecureChannelCredentials(),
                                         arguments);
    }
    std::unique_ptr<pluginregistration::Registration::Stub> registration(int distinct = 0) const {
        return pluginregistration::Registration::NewStub(channel(distinct));
    }

    struct HeldCall {
        std::shared_ptr<UnaryCall> call;
        std::string error;  // RegistrationStatus.error, to tell calls apart
    };

    numadra::testing::TempTree tree_;
    std::string socketPath_;
    UniqueFd listening_;
    std::unique_ptr<EventLoop> loop_;
    std::unique_ptr<GrpcServer> server_;
    Mailbox<HeldCall> unaryCalls_;
    Mailbox<std::shared_ptr<ServerStream>> streams_;
};

// Sends NotifyRegistrationStatus(error = `tag`) on another thread; the handler holds the call.
std::future<grpc::Status> notifyAsync(pluginregistration::Registration::Stub& stub,
                                      grpc::ClientContext& context, const std::string& tag = "") {
    return std::async(std::launch::async, [&stub, &context, tag] {
        pluginregistration::RegistrationStatus request;
        request.set_error(tag);
        pluginregistration::RegistrationStatusResponse response;
        return stub.NotifyRegistrationStatus(&context, request, &response);
    });
}

TEST_F(GrpcServerTest, AnswersAUnaryCall) {
    start();
    grpc::ClientContext context;
    pluginregistration::PluginInfo reply;
    const auto status = registration()->GetInfo(&context, {}, &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(reply.type(), "DRAPlugin");
    EXPECT_EQ(reply.name(), "numa.example.com");
}

TEST_F(GrpcServerTest, AnUnknownMethodIsUnimplemented) {
    start();
    auto stub = k8s::io::kubelet::pkg::apis::dra::v1::DRAPlugin::NewStub(channel());
    grpc::ClientContext context;
    k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse reply;
    const auto status = stub->NodePrepareResources(&context, {}, &reply);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << status.error_message();
}

TEST_F(GrpcServerTest, TheHandlerSeesTheClientsDeadline) {
    start();
    auto stub = registration();
    grpc::ClientContext context;
    const auto sent = Clock::now();
    context.set_deadline(std::chrono::system_clock::now() + 30s);
    auto result = notifyAsync(*stub, context);
    auto held = unaryCalls_.first();
    ASSERT_TRUE(held.call->deadline());
    EXPECT_GT(*held.call->deadline(), sent + 29s);
    EXPECT_LT(*held.call->deadline(), sent + 31s);
    held.call->finish(RpcStatus::ok(), "");
    EXPECT_TRUE(result.get().ok());
}

TEST_F(GrpcServerTest, ATooSlowHandlerEndsInDeadlineExceeded) {
    start();
    auto stub = registration();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 200ms);
    auto result = notifyAsync(*stub, context);
    auto held = unaryCalls_.first();
    EXPECT_EQ(result.get().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    EXPECT_TRUE(eventually([&] { return held.call->cancelled(); }));
}

// grpc++ enforces its deadline itself: a bare client shows that the server sends the status.
TEST_F(GrpcServerTest, TheServerSendsDeadlineExceededItself) {
    start();
    RawH2Client client(socketPath_);
    const auto id = client.submit(kNotify, detail::frameMessage(""), {{"grpc-timeout", "100m"}});
    const auto response = client.wait(id, 5s);
    EXPECT_EQ(response.fields.at("grpc-status"), "4");
    EXPECT_TRUE(unaryCalls_.first().call->cancelled());
}

TEST_F(GrpcServerTest, TheHandlerSeesTheClientCancel) {
    start();
    auto stub = registration();
    grpc::ClientContext context;
    auto result = notifyAsync(*stub, context);
    auto held = unaryCalls_.first();
    std::promise<void> cancelled;
    held.call->onCancel([&cancelled] { cancelled.set_value(); });
    context.TryCancel();
    EXPECT_EQ(cancelled.get_future().wait_for(5s), std::future_status::ready);
    EXPECT_TRUE(held.call->cancelled());
    EXPECT_EQ(result.get().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(GrpcServerTest, AHandlerFinishesFromAnotherThread) {
    start();
    auto stub = registration();
    grpc::ClientContext context;
    auto result = notifyAsync(*stub, context, "from a worker");
    auto held = unaryCalls_.first();
    std::thread worker([call = held.call] {
        std::this_thread::sleep_for(50ms);
        pluginregistration::RegistrationStatusResponse reply;
        call->finish(RpcStatus::ok(), reply.SerializeAsString());
    });
    EXPECT_TRUE(result.get().ok());
    worker.join();
    EXPECT_EQ(held.error, "from a worker");
}

TEST_F(GrpcServerTest, AnErrorStatusKeepsItsMessage) {
    start();
    auto stub = registration();
    grpc::ClientContext context;
    auto result = notifyAsync(*stub, context);
    // Percent-encoded on the wire (a '%', a newline, UTF-8), decoded by the client.
    unaryCalls_.first().call->finish({StatusCode::FailedPrecondition, "100% full\nno é"});
    const auto status = result.get();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(status.error_message(), "100% full\nno é");
}

TEST_F(GrpcServerTest, AServerStreamDeliversEveryWriteThenItsStatus) {
    start();
    auto stub = v1alpha1::DRAResourceHealth::NewStub(channel());
    grpc::ClientContext context;
    auto reader = stub->NodeWatchResources(&context, {});
    auto stream = streams_.first();
    for (int i = 0; i < 3; ++i) {
        v1alpha1::NodeWatchResourcesResponse update;
        update.add_devices()->set_message("update " + std::to_string(i));
        ASSERT_EQ(stream->write(update.SerializeAsString()), ServerStream::WriteResult::Queued);
    }
    stream->finish(RpcStatus::ok());
    v1alpha1::NodeWatchResourcesResponse update;
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(reader->Read(&update));
        EXPECT_EQ(update.devices(0).message(), "update " + std::to_string(i));
    }
    EXPECT_FALSE(reader->Read(&update));
    EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(GrpcServerTest, AServerStreamOpensBeforeItsFirstMessageWhenItSendsItsHeaders) {
    start();
    auto stub = v1alpha1::DRAResourceHealth::NewStub(channel());
    grpc::ClientContext context;
    auto reader = stub->NodeWatchResources(&context, {});
    auto stream = streams_.first();
    stream->sendHeaders();
    reader->WaitForInitialMetadata();  // returns only once the headers arrived
    v1alpha1::NodeWatchResourcesResponse update;
    update.add_devices()->set_message("after the headers");
    ASSERT_EQ(stream->write(update.SerializeAsString()), ServerStream::WriteResult::Queued);
    stream->finish(RpcStatus::ok());
    ASSERT_TRUE(reader->Read(&update));
    EXPECT_EQ(update.devices(0).message(), "after the headers");
    EXPECT_FALSE(reader->Read(&update));
    EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(GrpcServerTest, AServerStreamEndedWithAnErrorDeliversItsQueuedMessagesFirst) {
    start();
    auto stub = v1alpha1::DRAResourceHealth::NewStub(channel());
    grpc::ClientContext context;
    auto reader = stub->NodeWatchResources(&context, {});
    auto stream = streams_.first();
    v1alpha1::NodeWatchResourcesResponse update;
    ASSERT_EQ(stream->write(update.SerializeAsString()), ServerStream::WriteResult::Queued);
    ASSERT_EQ(stream->write(update.SerializeAsString()), ServerStream::WriteResult::Queued);
    stream->finish({StatusCode::Unavailable, "going away"});
    EXPECT_TRUE(reader->Read(&update));
    EXPECT_TRUE(reader->Read(&update));
    EXPECT_FALSE(reader->Read(&update));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

// Messages HTTP/2 flow control still holds back (the client has not read yet) are not dropped
// by a finish with an error status.
TEST_F(GrpcServerTest, AServerStreamEndedWithAnErrorKeepsWhatFlowControlHeldBack) {
    start();
    RawH2Client client(socketPath_);
    const auto id = client.submit(kWatch, detail::frameMessage(""));
    client.send();
    auto stream = streams_.first();
    const std::string message(std::size_t{40} * 1024,
                              'm');  // three of them overflow the 64 KiB window
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(stream->write(message), ServerStream::WriteResult::Queued);
    stream->finish({StatusCode::Unavailable, "going away"});
    const auto response = client.wait(id, 5s);
    EXPECT_EQ(response.body.size(), 3 * detail::frameMessage(message).size());
    EXPECT_EQ(response.fields.at("grpc-status"), "14");
}

TEST_F(GrpcServerTest, AServerStreamRefusesWritesAfterItsFinish) {
    start();
    auto stub = v1alpha1::DRAResourceHealth::NewStub(channel());
    grpc::ClientContext context;
    auto reader = stub->NodeWatchResources(&context, {});
    auto stream = streams_.first();
    stream->finish(RpcStatus::ok());
    EXPECT_EQ(stream->write("late"), ServerStream::WriteResult::Closed);
    EXPECT_TRUE(reader->Finish().ok());
}

// The messages already sent stay; the status that ends the stream is the deadline's.
TEST_F(GrpcServerTest, AServerStreamPastItsDeadlineEndsInDeadlineExceeded) {
    start();
    RawH2Client client(socketPath_);
    const auto id = client.submit(kWatch, detail::frameMessage(""), {{"grpc-timeout", "200m"}});
    client.send();
    auto stream = streams_.first();
    ASSERT_EQ(stream->write("first"), ServerStream::WriteResult::Queued);
    const auto response = client.wait(id, 5s);
    EXPECT_EQ(response.body, detail::frameMessage("first"));
    EXPECT_EQ(response.fields.at("grpc-status"), "4");
    EXPECT_TRUE(stream->cancelled());
}

TEST_F(GrpcServerTest, StopCancelsAnOpenServerStreamPastTheGrace) {
    start();
    auto stub = v1alpha1::DRAResourceHealth::NewStub(channel());
    grpc::ClientContext context;
    auto reader = stub->NodeWatchResources(&context, {});
    auto stream = streams_.first();
    server_->stop(100ms);
    EXPECT_TRUE(stream->cancelled());
    v1alpha1::NodeWatchResourcesResponse update;
    EXPECT_FALSE(reader->Read(&update));
    EXPECT_FALSE(reader->Finish().ok());
}

TEST_F(GrpcServerTest, AServerStreamSeesTheClientCancel) {
    start();
    auto stub = v1alpha1::DRAResourceHealth::NewStub(channel());
    grpc::ClientContext context;
    auto reader = stub->NodeWatchResources(&context, {});
    auto stream = streams_.first();
    std::promise<void> cancelled;
    stream->onCancel([&cancelled] { cancelled.set_value(); });
    v1alpha1::NodeWatchResourcesResponse update;
    ASSERT_EQ(stream->write(update.SerializeAsString()), ServerStream::WriteResult::Queued);
    ASSERT_TRUE(reader->Read(&update));
    context.TryCancel();
    EXPECT_EQ(cancelled.get_future().wait_for(5s), std::future_status::ready);
    EXPECT_EQ(stream->write(update.SerializeAsString()), ServerStream::WriteResult::Closed);
}

TEST_F(GrpcServerTest, AServerStreamRefusesWritesPastItsBound) {
    ServerOptions options;
    options.maxStreamQueuedBytes = 64;
    start(options);
    auto stub = v1alpha1::DRAResourceHealth::NewStub(channel());
    grpc::ClientContext context;
    auto reader = stub->NodeWatchResources(&context, {});
    auto stream = streams_.first();
    // Hold the loop so that nothing queued can leave yet.
    std::promise<void> release;
    loop_->post([done = release.get_future().share()] { done.wait(); });
    EXPECT_EQ(stream->write(std::string(40, 'a')), ServerStream::WriteResult::Queued);
    EXPECT_EQ(stream->write(std::string(40, 'b')), ServerStream::WriteResult::Full);
    release.set_value();
    context.TryCancel();
}

TEST_F(GrpcServerTest, AMessageOverTheLimitIsResourceExhausted) {
    ServerOptions options;
    options.maxReceiveMessageBytes = 1024;
    start(options);
    auto stub = registration();
    grpc::ClientContext context;
    const auto status = notifyAsync(*stub, context, std::string(4096, 'x')).get();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    EXPECT_TRUE(unaryCalls_.wait(1, 200ms).empty());
}

TEST_F(GrpcServerTest, AHandlerThatThrowsAnswersUnknown) {
    start({}, [](GrpcServer& server) {
        server.addUnary("/test.Broken/Throw",
                        [](const std::shared_ptr<UnaryCall>&, const std::string&) {
                            throw std::runtime_error("broken");
                        });
    });
    RawH2Client client(socketPath_);
    const auto id = client.submit("/test.Broken/Throw", detail::frameMessage(""));
    EXPECT_EQ(client.wait(id, 5s).fields.at("grpc-status"), "2");
    grpc::ClientContext context;
    pluginregistration::PluginInfo reply;
    EXPECT_TRUE(registration()->GetInfo(&context, {}, &reply).ok());
}

TEST_F(GrpcServerTest, AStatusMessageTooLongForTrailersIsCut) {
    start();
    auto stub = registration();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 5s);
    auto result = notifyAsync(*stub, context);
    unaryCalls_.first().call->finish(
        {StatusCode::Aborted, std::string(std::size_t{100} * 1024, '\n')});
    const auto status = result.get();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED);
    EXPECT_EQ(status.error_message(), std::string(detail::kMaxStatusMessageValueBytes / 3, '\n'));
}

TEST_F(GrpcServerTest, ARequestThatIsNotPostIsRefusedWith405) {
    start();
    RawH2Client client(socketPath_);
    const auto id = client.submit(kGetInfo, std::nullopt, {{":method", "GET"}});
    const auto response = client.wait(id, 5s);
    EXPECT_EQ(response.fields.at(":status"), "405");
    EXPECT_EQ(response.fields.at("grpc-status"), "13");
}

TEST_F(GrpcServerTest, AWrongContentTypeIsRefusedWith415) {
    start();
    RawH2Client client(socketPath_);
    const auto id =
        client.submit(kGetInfo, detail::frameMessage(""), {{"content-type", "application/json"}});
    const auto response = client.wait(id, 5s);
    EXPECT_EQ(response.fields.at(":status"), "415");
    EXPECT_EQ(response.fields.at("grpc-status"), "13");
}

TEST_F(GrpcServerTest, ACompressedMessageIsUnimplemented) {
    start();
    RawH2Client client(socketPath_);
    std::string compressed = detail::frameMessage("x");
    compressed[0] = '\1';
    const auto id = client.submit(kGetInfo, compressed, {{"grpc-encoding", "gzip"}});
    EXPECT_EQ(client.wait(id, 5s).fields.at("grpc-status"), "12");
}

TEST_F(GrpcServerTest, AUnaryRequestWithoutAMessageIsAnError) {
    start();
    RawH2Client client(socketPath_);
    const auto id = client.submit(kGetInfo, std::nullopt);
    EXPECT_EQ(client.wait(id, 5s).fields.at("grpc-status"), "13");
}

TEST_F(GrpcServerTest, AUnaryRequestWithTwoMessagesIsAnError) {
    start();
    RawH2Client client(socketPath_);
    const auto id = client.submit(kGetInfo, detail::frameMessage("") + detail::frameMessage(""));
    EXPECT_EQ(client.wait(id, 5s).fields.at("grpc-status"), "13");
}

// The handler holds every call until all are in: they can only complete if served concurrently.
TEST_F(GrpcServerTest, ServesFiftyConcurrentCallsOnOneConnection) {
    start();
    auto stub = registration();
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::future<grpc::Status>> results;
    for (int i = 0; i < 50; ++i) {
        contexts.push_back(std::make_unique<grpc::ClientContext>());
        contexts.back()->set_deadline(std::chrono::system_clock::now() + 20s);
        results.push_back(notifyAsync(*stub, *contexts.back(), std::to_string(i)));
    }
    auto held = unaryCalls_.wait(50);
    ASSERT_EQ(held.size(), 50U);
    EXPECT_EQ(server_->stats().connections, 1U);
    for (auto& call : held)
        call.call->finish(RpcStatus::ok(), "");
    for (auto& result : results)
        EXPECT_TRUE(result.get().ok());
}

TEST_F(GrpcServerTest, ServesFiftyConcurrentCallsOnTenConnections) {
    start();
    std::vector<std::unique_ptr<pluginregistration::Registration::Stub>> stubs;
    for (int i = 0; i < 10; ++i)
        stubs.push_back(registration(i + 1));
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::future<grpc::Status>> results;
    for (int i = 0; i < 50; ++i) {
        contexts.push_back(std::make_unique<grpc::ClientContext>());
        contexts.back()->set_deadline(std::chrono::system_clock::now() + 20s);
        results.push_back(notifyAsync(*stubs[static_cast<std::size_t>(i % 10)], *contexts.back(),
                                      std::to_string(i)));
    }
    auto held = unaryCalls_.wait(50);
    ASSERT_EQ(held.size(), 50U);
    EXPECT_EQ(server_->stats().connections, 10U);
    for (auto& call : held)
        call.call->finish(RpcStatus::ok(), "");
    for (auto& result : results)
        EXPECT_TRUE(result.get().ok());
}

TEST_F(GrpcServerTest, StopLetsARunningCallFinishWithinTheGrace) {
    start();
    auto stub = registration();
    grpc::ClientContext context;
    auto result = notifyAsync(*stub, context);
    auto held = unaryCalls_.first();
    auto stopped = std::async(std::launch::async, [this] { server_->stop(5s); });
    std::this_thread::sleep_for(100ms);
    held.call->finish(RpcStatus::ok(), "");
    EXPECT_TRUE(result.get().ok());
    EXPECT_EQ(stopped.wait_for(5s), std::future_status::ready);
    EXPECT_FALSE(held.call->cancelled());
}

TEST_F(GrpcServerTest, StopCancelsACallPastTheGrace) {
    start();
    auto stub = registration();
    grpc::ClientContext context;
    auto result = notifyAsync(*stub, context);
    auto held = unaryCalls_.first();
    const auto before = Clock::now();
    server_->stop(200ms);
    EXPECT_GE(Clock::now() - before, 200ms);
    EXPECT_TRUE(held.call->cancelled());
    EXPECT_FALSE(result.get().ok());
}

TEST_F(GrpcServerTest, StopRefusesNewConnections) {
    start();
    server_->stop(0ms);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 500ms);
    pluginregistration::PluginInfo reply;
    EXPECT_FALSE(registration()->GetInfo(&context, {}, &reply).ok());
}

TEST_F(GrpcServerTest, GarbageClosesThatConnectionOnly) {
    start();
    auto garbage = testing::connectUnix(socketPath_);
    const std::string bytes = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(garbage.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
    std::array<char, 256> buffer{};
    ssize_t received = 0;
    do {
        received = ::recv(garbage.get(), buffer.data(), buffer.size(), 0);  // until EOF or reset
    } while (received > 0);
    EXPECT_TRUE(eventually([&] { return server_->stats().connectionsFailed == 1; }));
    grpc::ClientContext context;
    pluginregistration::PluginInfo reply;
    EXPECT_TRUE(registration()->GetInfo(&context, {}, &reply).ok());
}

// Past a valid preface, bytes that are frames of nothing: nghttp2 ends each such connection and
// the server goes on serving.
TEST_F(GrpcServerTest, RandomFramesAfterAValidPrefaceCloseOnlyTheirConnection) {
    start();
    std::mt19937 noiseSource(27);  // fixed: the same bytes every run
    for (int connection = 0; connection < 20; ++connection) {
        auto socket = testing::connectUnix(socketPath_);
        std::string bytes(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
        bytes.append(std::string("\0\0\0\4\0\0\0\0\0", 9));  // an empty SETTINGS frame
        const std::size_t noise = 1 + noiseSource() % 4096;
        for (std::size_t i = 0; i < noise; ++i)
            bytes.push_back(static_cast<char>(noiseSource() & 0xffU));
        (void)::send(socket.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
        // Noise can announce a frame longer than what follows: the end of our side ends it.
        ::shutdown(socket.get(), SHUT_WR);
        const timeval patience{5, 0};
        ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
        std::array<char, 4096> buffer{};
        ssize_t received = 0;
        do {
            received = ::recv(socket.get(), buffer.data(), buffer.size(), 0);
        } while (received > 0);
        EXPECT_TRUE(received == 0 || errno == ECONNRESET)
            << "connection " << connection << " still open";
    }
    EXPECT_TRUE(eventually([&] { return server_->stats().connections == 0; }));
    grpc::ClientContext context;
    pluginregistration::PluginInfo reply;
    EXPECT_TRUE(registration()->GetInfo(&context, {}, &reply).ok());
}

TEST_F(GrpcServerTest, ConnectionsOverTheLimitAreClosed) {
    ServerOptions options;
    options.maxConnections = 1;
    start(options);
    RawH2Client first(socketPath_);
    const auto id = first.submit(kGetInfo, detail::frameMessage(""));
    ASSERT_EQ(first.wait(id, 5s).fields.at("grpc-status"), "0");
    RawH2Client second(socketPath_);
    EXPECT_TRUE(second.closedByServer(5s));
    EXPECT_EQ(server_->stats().connectionsRefused, 1U);
}

// A client that keeps sending requests and never reads an answer: the server stops reading it
// once its output bound is full, so its memory stays bounded, and it keeps serving the others.
TEST_F(GrpcServerTest, AClientThatNeverReadsCannotGrowTheServersMemory) {
    ServerOptions options;
    options.maxConnectionOutputBytes = std::size_t{64} * 1024;
    start(options);
    // Requests for unknown methods with long paths: each answer (trailers-only, UNIMPLEMENTED)
    // names the path, and HTTP/2 flow control holds back neither (DATA would stop at the first
    // window): only the server's own bound can. Paths differ, so that HPACK cannot shrink them.
    RawH2Client greedy(socketPath_, 100000);
    constexpr std::size_t kRequests = 2000;
    constexpr std::size_t kPathBytes = std::size_t{8} * 1024;
    for (std::size_t i = 0; i < kRequests; ++i) {
        std::string path = "/test.Unknown/" + std::to_string(10000000 + i);
        path.resize(kPathBytes, 'p');
        greedy.submit(path, std::nullopt);
    }
    const std::size_t written = greedy.writeWithoutReading(500ms);
    const auto stats = server_->stats();
    EXPECT_LT(written, kRequests * kPathBytes / 4)
        << "the server never stopped reading: peak output " << stats.peakConnectionOutputBytes;
    // The bound, plus at most one frame nghttp2 serialized before the check.
    EXPECT_LE(stats.peakConnectionOutputBytes,
              options.maxConnectionOutputBytes + std::size_t{16} * 1024);
    EXPECT_LE(stats.activeCalls, options.maxConcurrentStreams);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 5s);
    pluginregistration::PluginInfo reply;
    EXPECT_TRUE(registration()->GetInfo(&context, {}, &reply).ok());
}

// The whole server is one thread: run in its own process (ctest runs each case alone), with no
// grpc++ client, whose threads would count.
TEST(GrpcServerThreads, ServingAddsOnlyTheLoopThread) {
    numadra::testing::TempTree tree;
    const std::string path = tree.path("grpc.sock");
    auto listening = numadra::testing::listenOnUnixSocket(path);
    const std::size_t before = threadCount();
    auto loop = std::move(EventLoop::create().value());
    loop->start();
    {
        GrpcServer server(*loop);
        server.addUnary(kGetInfo, [](const std::shared_ptr<UnaryCall>& call, const std::string&) {
            call->finish(RpcStatus::ok(), "");
        });
        ASSERT_TRUE(server.serve(listening.get()).ok());
        std::vector<std::unique_ptr<RawH2Client>> clients;
        for (int i = 0; i < 5; ++i) {
            clients.push_back(std::make_unique<RawH2Client>(path));
            const auto id = clients.back()->submit(kGetInfo, detail::frameMessage(""));
            ASSERT_EQ(clients.back()->wait(id, 5s).fields.at("grpc-status"), "0");
        }
        EXPECT_EQ(threadCount(), before + 1);
        server.stop(0ms);
    }
    loop->stop();
    EXPECT_EQ(threadCount(), before);
}

}  // namespace
}  // namespace numadra::rpc
