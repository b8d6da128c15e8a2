// HTTPS against the fake API server, with a CA and certificates made by the openssl tool at
// test time (skipped when it is not installed).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "kube_test_support.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::kube {
namespace {

using namespace std::chrono_literals;
using test::quickOptions;
using ::testing::HasSubstr;

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool run(const std::string& command) {
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA.
class Certificates {
  public:
    bool generate() {
        const std::string newKey =
            "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
        tree_.file("server.ext", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
        tree_.file("client.ext", "extendedKeyUsage=clientAuth\n");
        return run(newKey + "-x509 -days 1 -subj /CN=test-ca -keyout " + path("ca.key") + " -out " +
                   path("ca.crt")) &&
               signed_("server", "/CN=127.0.0.1") && signed_("client", "/CN=system:node:n1") &&
               // Not our CA: a server that presents this must be refused.
               run(newKey +
                   "-x509 -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
                   "-keyout " +
                   path("rogue.key") + " -out " + path("rogue.crt"));
    }

    std::string path(const std::string& name) const { return tree_.path(name); }

  private:
    bool signed_(const std::string& name, const std::string& subject) {
        return run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj " +
                   subject + " -keyout " + path(name + ".key") + " -out " + path(name + ".csr")) &&
               run("openssl x509 -req -days 1 -in " + path(name + ".csr") + " -CA " +
                   path("ca.crt") + " -CAkey " + path("ca.key") + " -CAcreateserial -extfile " +
                   path(name + ".ext") + " -out " + path(name + ".crt"));
    }

    testing::TempTree tree_;
};

class TlsTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        if (!run("openssl version"))
            return;
        certificates_ = std::make_unique<Certificates>();
        if (!certificates_->generate())
            certificates_.reset();
    }
    static void TearDownTestSuite() { certificates_.reset(); }

    void SetUp() override {
        if (!certificates_)
            GTEST_SKIP() << "the openssl tool is missing or failed: no certificates to test with";
    }

    static std::string path(const std::string& name) { return certificates_->path(name); }

    static fakes::FakeApiServerOptions serverOptions(bool requireClientCertificate = true) {
        fakes::FakeApiServerOptions options;
        options.tlsCertFile = path("server.crt");
        options.tlsKeyFile = path("server.key");
        if (requireClientCertificate)
            options.clientCaFile = path("ca.crt");
        return options;
    }

    // Client certificate and CA as a kubeconfig's *-data fields give them: PEM in memory.
    static ClusterConfig configWithData(const fakes::FakeApiServer& server) {
        ClusterConfig config;
        config.server = server.url();
        config.caData = readFile(path("ca.crt"));
        config.clientCertData = readFile(path("client.crt"));
        config.clientKeyData = readFile(path("client.key"));
        return config;
    }

    static std::unique_ptr<Certificates> certificates_;
};

std::unique_ptr<Certificates> TlsTest::certificates_;

TEST_F(TlsTest, TalksHttpsWithCaAndClientCertificateData) {
    fakes::FakeApiServer server(serverOptions());
    server.addNode("n1", "uid-1");
    EXPECT_THAT(server.url(), ::testing::StartsWith("https://"));
    KubeClient client(configWithData(server), quickOptions());
    auto node = client.getNode("n1");
    ASSERT_TRUE(node.ok()) << node.error().message;
    EXPECT_EQ((*node)["metadata"]["uid"], "uid-1");
}

TEST_F(TlsTest, TalksHttpsWithCaAndClientCertificateFiles) {
    fakes::FakeApiServer server(serverOptions());
    server.addNode("n1", "uid-1");
    ClusterConfig config;
    config.server = server.url();
    config.caFile = path("ca.crt");
    config.clientCertFile = path("client.crt");
    config.clientKeyFile = path("client.key");
    KubeClient client(config, quickOptions());
    auto node = client.getNode("n1");
    ASSERT_TRUE(node.ok()) << node.error().message;
}

TEST_F(TlsTest, WatchesOverHttps) {
    fakes::FakeApiServer server(serverOptions());
    // The watch's connect timeout covers the TLS handshake, which a loaded 2-core machine
    // running the whole suite can stretch past quickOptions()' 2 s.
    ClientOptions options = quickOptions();
    options.requestTimeout = 15s;
    KubeClient client(configWithData(server), options);
    test::BackgroundWatch watch(client, "", std::to_string(server.currentResourceVersion()));
    ASSERT_TRUE(client.createResourceSlice(test::sliceJson("s", "n1")).ok());
    // TLS under the sanitizers on a loaded 2-core machine can take seconds to set up.
    ASSERT_TRUE(watch.waitForChanges(1, 20s)) << "the watch ended: " << [&] {
        const auto ended = watch.waitForEnd(0s);
        return !ended        ? std::string("no, still open")
               : ended->ok() ? std::string("ok")
                             : ended->error().message;
    }();
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(watch.stop().ok());
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              5s);  // far below the watch timeout: stop interrupts it
}

TEST_F(TlsTest, RefusesAServerSignedByAnotherCa) {
    fakes::FakeApiServerOptions options;
    options.tlsCertFile = path("rogue.crt");
    options.tlsKeyFile = path("rogue.key");
    fakes::FakeApiServer server(options);
    ClientOptions clientOptions = quickOptions();
    clientOptions.maxAttempts = 1;
    KubeClient client(configWithData(server), clientOptions);
    auto node = client.getNode("n1");
    ASSERT_FALSE(node.ok());
    EXPECT_EQ(node.error().httpStatus, 0);
    EXPECT_EQ(server.requestCount("", ""), 0);
}

TEST_F(TlsTest, InsecureSkipTlsVerifyAcceptsAnyServer) {
    fakes::FakeApiServerOptions options;
    options.tlsCertFile = path("rogue.crt");
    options.tlsKeyFile = path("rogue.key");
    fakes::FakeApiServer server(options);
    server.addNode("n1", "uid-1");
    ClusterConfig config;
    config.server = server.url();
    config.insecureSkipTlsVerify = true;
    KubeClient client(config, quickOptions());
    auto node = client.getNode("n1");
    EXPECT_TRUE(node.ok()) << node.error().message;
}

TEST_F(TlsTest, AServerThatWantsAClientCertificateRefusesAClientWithout) {
    fakes::FakeApiServer server(serverOptions(/*requireClientCertificate=*/true));
    ClusterConfig config;
    config.server = server.url();
    config.caFile = path("ca.crt");
    ClientOptions clientOptions = quickOptions();
    clientOptions.maxAttempts = 1;
    KubeClient client(config, clientOptions);
    auto node = client.getNode("n1");
    ASSERT_FALSE(node.ok());
    EXPECT_EQ(node.error().httpStatus, 0);
}

TEST_F(TlsTest, MalformedCaDataIsAnError) {
    fakes::FakeApiServer server(serverOptions(false));
    ClusterConfig config;
    config.server = server.url();
    config.caData = "not a certificate";
    ClientOptions clientOptions = quickOptions();
    clientOptions.maxAttempts = 1;
    KubeClient client(config, clientOptions);
    auto node = client.getNode("n1");
    ASSERT_FALSE(node.ok());
    EXPECT_THAT(node.error().message, HasSubstr("GET /api/v1/nodes/n1"));
}

}  // namespace
}  // namespace numadra::kube
