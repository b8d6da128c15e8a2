#include "numadra/kube/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "numadra/testing/temp_tree.hpp"

namespace numadra::kube {
namespace {

using ::testing::HasSubstr;

// "-----BEGIN CERTIFICATE-----\nCA\n" and friends, base64-encoded as kubeconfigs hold them.
constexpr const char* kCaPem = "-----BEGIN CERTIFICATE-----\nCA\n";
constexpr const char* kCaBase64 = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==";
constexpr const char* kCertBase64 = "Y2xpZW50IGNlcnQ=";  // "client cert"
constexpr const char* kKeyBase64 = "Y2xpZW50IGtleQ==";   // "client key"

class KubeconfigTest : public ::testing::Test {
  protected:
    std::string write(const std::string& yaml) {
        std::string path = tree_.path("kubeconfig");
        tree_.file("kubeconfig", yaml);
        return path;
    }

    testing::TempTree tree_;
};

std::string oneContext(const std::string& cluster, const std::string& user) {
    return "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
           "contexts:\n- name: dev\n  context: {cluster: c1, user: u1}\n"
           "clusters:\n- name: c1\n  cluster:\n" +
           cluster + "users:\n- name: u1\n  user:\n" + user;
}

TEST_F(KubeconfigTest, ReadsTheServerAndTokenOfTheCurrentContext) {
    auto config = loadKubeconfig(
        write(oneContext("    server: https://10.0.0.1:6443\n", "    token: abc.def\n")));
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->server, "https://10.0.0.1:6443");
    EXPECT_EQ(config->bearerToken, "abc.def");
    EXPECT_FALSE(config->insecureSkipTlsVerify);
    EXPECT_TRUE(config->caFile.empty());
}

TEST_F(KubeconfigTest, DecodesCertificateData) {
    auto config = loadKubeconfig(write(
        oneContext(std::string("    server: https://h:6443\n    certificate-authority-data: ") +
                       kCaBase64 + "\n",
                   std::string("    client-certificate-data: ") + kCertBase64 +
                       "\n    client-key-data: " + kKeyBase64 + "\n")));
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->caData, kCaPem);
    EXPECT_EQ(config->clientCertData, "client cert");
    EXPECT_EQ(config->clientKeyData, "client key");
}

TEST_F(KubeconfigTest, ResolvesRelativePathsAgainstItsFolder) {
    auto config = loadKubeconfig(
        write(oneContext("    server: https://h:6443\n    certificate-authority: pki/ca.crt\n",
                         "    client-certificate: ./pki/me.crt\n    client-key: ../keys/me.key\n"
                         "    tokenFile: token\n")));
    ASSERT_TRUE(config.ok()) << config.error().message;
    const std::string folder = tree_.root();
    EXPECT_EQ(config->caFile, folder + "/pki/ca.crt");
    EXPECT_EQ(config->clientCertFile, folder + "/pki/me.crt");
    EXPECT_EQ(config->clientKeyFile,
              std::filesystem::path(folder).parent_path().string() + "/keys/me.key");
    EXPECT_EQ(config->tokenFile, folder + "/token");
}

TEST_F(KubeconfigTest, KeepsAbsolutePaths) {
    auto config = loadKubeconfig(
        write(oneContext("    server: https://h:6443\n    certificate-authority: /etc/k8s/ca.crt\n",
                         "    tokenFile: /var/run/token\n")));
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->caFile, "/etc/k8s/ca.crt");
    EXPECT_EQ(config->tokenFile, "/var/run/token");
}

TEST_F(KubeconfigTest, UsesTheContextAskedForOverTheCurrentOne) {
    const std::string path = write(R"(current-context: a
contexts:
- {name: a, context: {cluster: ca, user: ua}}
- {name: b, context: {cluster: cb, user: ub}}
clusters:
- {name: ca, cluster: {server: "https://a:6443"}}
- {name: cb, cluster: {server: "http://127.0.0.1:8080"}}
users:
- {name: ua, user: {token: token-a}}
- {name: ub, user: {token: token-b}}
)");
    auto current = loadKubeconfig(path);
    auto asked = loadKubeconfig(path, "b");
    ASSERT_TRUE(current.ok()) << current.error().message;
    ASSERT_TRUE(asked.ok()) << asked.error().message;
    EXPECT_EQ(current->server, "https://a:6443");
    EXPECT_EQ(asked->server, "http://127.0.0.1:8080");
    EXPECT_EQ(asked->bearerToken, "token-b");
}

TEST_F(KubeconfigTest, AContextWithoutAUserIsAnonymous) {
    auto config = loadKubeconfig(write(R"(current-context: a
contexts: [{name: a, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
)"));
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_TRUE(config->bearerToken.empty());
    EXPECT_TRUE(config->tokenFile.empty());
}

TEST_F(KubeconfigTest, SkipsTlsVerificationOnlyWhenItSaysSo) {
    auto unset = loadKubeconfig(write(oneContext("    server: https://h\n", "    token: t\n")));
    auto setFalse = loadKubeconfig(write(oneContext(
        "    server: https://h\n    insecure-skip-tls-verify: false\n", "    token: t\n")));
    auto setTrue = loadKubeconfig(write(oneContext(
        "    server: https://h\n    insecure-skip-tls-verify: true\n", "    token: t\n")));
    ASSERT_TRUE(unset.ok() && setFalse.ok() && setTrue.ok());
    EXPECT_FALSE(unset->insecureSkipTlsVerify);
    EXPECT_FALSE(setFalse->insecureSkipTlsVerify);
    EXPECT_TRUE(setTrue->insecureSkipTlsVerify);
}

TEST_F(KubeconfigTest, UnknownContextIsAnErrorNamingFileAndContext) {
    const std::string path = write(oneContext("    server: https://h\n", "    token: t\n"));
    auto config = loadKubeconfig(path, "foo");
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.error().message, "kubeconfig " + path + ": context 'foo' not found");
}

TEST_F(KubeconfigTest, UnknownClusterOrUserIsAnError) {
    auto noCluster = loadKubeconfig(write(R"(current-context: a
contexts: [{name: a, context: {cluster: missing, user: u}}]
clusters: []
)"));
    ASSERT_FALSE(noCluster.ok());
    EXPECT_THAT(noCluster.error().message, HasSubstr("cluster 'missing' not found"));

    auto noUser = loadKubeconfig(write(R"(current-context: a
contexts: [{name: a, context: {cluster: c, user: gone}}]
clusters: [{name: c, cluster: {server: "https://h"}}]
)"));
    ASSERT_FALSE(noUser.ok());
    EXPECT_THAT(noUser.error().message, HasSubstr("user 'gone' not found"));
}

TEST_F(KubeconfigTest, BadBase64NamesTheKey) {
    const std::string path = write(oneContext(
        "    server: https://h\n", std::string("    client-certificate-data: ") + kCertBase64 +
                                       "\n    client-key-data: '%%% not base64'\n"));
    auto config = loadKubeconfig(path);
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.error().message,
              "kubeconfig " + path + ": users[0].user.client-key-data: not base64");
}

TEST_F(KubeconfigTest, MissingServerNamesTheKey) {
    const std::string path = write(oneContext("    certificate-authority: ca.crt\n", ""));
    auto config = loadKubeconfig(path);
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.error().message,
              "kubeconfig " + path + ": clusters[0].cluster.server: missing");
}

TEST_F(KubeconfigTest, ServerThatIsNotAUrlIsAnError) {
    auto config = loadKubeconfig(write(oneContext("    server: h:6443\n", "    token: t\n")));
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(config.error().message, HasSubstr("clusters[0].cluster.server: 'h:6443'"));
}

TEST_F(KubeconfigTest, NonBooleanInsecureFlagNamesTheKey) {
    auto config = loadKubeconfig(write(oneContext(
        "    server: https://h\n    insecure-skip-tls-verify: maybe\n", "    token: t\n")));
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(config.error().message,
                HasSubstr("clusters[0].cluster.insecure-skip-tls-verify: not a boolean"));
}

TEST_F(KubeconfigTest, InsecureTogetherWithACaIsRejected) {
    auto config = loadKubeconfig(
        write(oneContext("    server: https://h\n    insecure-skip-tls-verify: true\n"
                         "    certificate-authority: ca.crt\n",
                         "    token: t\n")));
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(config.error().message, HasSubstr("insecure-skip-tls-verify"));
}

TEST_F(KubeconfigTest, ClientCertificateWithoutKeyNamesTheMissingKey) {
    auto config = loadKubeconfig(
        write(oneContext("    server: https://h\n", "    client-certificate: me.crt\n")));
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(config.error().message, HasSubstr("users[0].user.client-key: missing"));
}

TEST_F(KubeconfigTest, ExecPluginsAreReportedAsUnsupported) {
    auto config = loadKubeconfig(write(oneContext(
        "    server: https://h\n",
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n")));
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(config.error().message, HasSubstr("users[0].user.exec: credential plugins"));
}

TEST_F(KubeconfigTest, NoCurrentContextAndNoneAskedForIsAnError) {
    auto config = loadKubeconfig(write("contexts: []\nclusters: []\nusers: []\n"));
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(config.error().message, HasSubstr("current-context: missing"));
}

TEST_F(KubeconfigTest, WrongShapesNameTheKey) {
    auto notAList = loadKubeconfig(write("current-context: a\ncontexts: {a: b}\n"));
    ASSERT_FALSE(notAList.ok());
    EXPECT_THAT(notAList.error().message, HasSubstr("contexts: not a list"));

    auto tokenIsAMap = loadKubeconfig(
        write(oneContext("    server: https://h\n", "    token: {nested: value}\n")));
    ASSERT_FALSE(tokenIsAMap.ok());
    EXPECT_THAT(tokenIsAMap.error().message, HasSubstr("users[0].user.token: not a string"));
}

TEST_F(KubeconfigTest, UnreadableOrInvalidFilesAreErrorsNamingThem) {
    auto missing = loadKubeconfig(tree_.path("nope"));
    ASSERT_FALSE(missing.ok());
    EXPECT_THAT(missing.error().message,
                HasSubstr("kubeconfig " + tree_.path("nope") + ": cannot read"));

    auto notYaml = loadKubeconfig(write("contexts: [unclosed\n"));
    ASSERT_FALSE(notYaml.ok());
    EXPECT_THAT(notYaml.error().message, HasSubstr("not valid YAML"));

    auto scalar = loadKubeconfig(write("just a string\n"));
    ASSERT_FALSE(scalar.ok());
    EXPECT_THAT(scalar.error().message, HasSubstr("not a kubeconfig"));
}

class InClusterTest : public ::testing::Test {
  protected:
    void SetUp() override {
        tree_.file("sa/token", "token\n");
        tree_.file("sa/ca.crt", "ca\n");
    }
    std::string serviceAccountDir() const { return tree_.path("sa"); }

    testing::TempTree tree_;
};

TEST_F(InClusterTest, UsesTheServiceEnvironmentAndTheServiceAccountFiles) {
    auto config = loadInClusterConfig(
        {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
        serviceAccountDir());
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->server, "https://10.96.0.1:443");
    EXPECT_EQ(config->tokenFile, serviceAccountDir() + "/token");
    EXPECT_EQ(config->caFile, serviceAccountDir() + "/ca.crt");
    EXPECT_TRUE(config->bearerToken.empty());
    EXPECT_FALSE(config->insecureSkipTlsVerify);
}

TEST_F(InClusterTest, PutsAnIpv6HostInBrackets) {
    auto config = loadInClusterConfig(
        {{"KUBERNETES_SERVICE_HOST", "fd00:10:96::1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
        serviceAccountDir());
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->server, "https://[fd00:10:96::1]:443");
}

TEST_F(InClusterTest, MissingEnvironmentNamesTheVariable) {
    auto noHost = loadInClusterConfig({{"KUBERNETES_SERVICE_PORT", "443"}}, serviceAccountDir());
    ASSERT_FALSE(noHost.ok());
    EXPECT_THAT(noHost.error().message, HasSubstr("KUBERNETES_SERVICE_HOST is not set"));

    auto noPort =
        loadInClusterConfig({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}, serviceAccountDir());
    ASSERT_FALSE(noPort.ok());
    EXPECT_THAT(noPort.error().message, HasSubstr("KUBERNETES_SERVICE_PORT is not set"));

    auto badPort = loadInClusterConfig(
        {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "https"}},
        serviceAccountDir());
    ASSERT_FALSE(badPort.ok());
    EXPECT_THAT(badPort.error().message, HasSubstr("'https' is not a port"));
}

TEST_F(InClusterTest, MissingTokenFileIsAnErrorNamingIt) {
    auto config = loadInClusterConfig(
        {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
        tree_.path("elsewhere"));
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(config.error().message, HasSubstr(tree_.path("elsewhere") + "/token: not found"));
}

}  // namespace
}  // namespace numadra::kube
