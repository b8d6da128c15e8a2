#pragma once
// Where the API server is and how to authenticate to it: from the pod's service account
// (in-cluster) or from a kubeconfig file (development, tests).

#include <map>
#include <string>

#include "numadra/common/result.hpp"

namespace numadra::kube {

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct ClusterConfig {
    std::string server;       // https://host:port or http://127.0.0.1:port
    std::string bearerToken;  // a literal token, or
    std::string tokenFile;    // re-read when it changes (service-account token rotation); wins
    std::string caFile;       // PEM file; empty with empty caData = the system's CAs
    std::string caData;       // PEM bytes (decoded from certificate-authority-data)
    std::string clientCertFile, clientKeyFile;  // PEM files
    std::string clientCertData, clientKeyData;  // PEM bytes
    bool insecureSkipTlsVerify = false;         // only when the kubeconfig says so
};

// KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT from `environment` (an IPv6 host gets
// brackets), the token file <serviceAccountDir>/token and the CA <serviceAccountDir>/ca.crt.
// The environment is passed in so that tests need not change the process's.
Result<ClusterConfig> loadInClusterConfig(
    const std::map<std::string, std::string>& environment,
    const std::string& serviceAccountDir = kServiceAccountDir);

// The cluster and user of `context` (empty: the current-context). Relative file paths resolve
// against the kubeconfig's folder. Errors name the file and the key, e.g.
// "kubeconfig /x: users[0].user.client-key-data: not base64".
Result<ClusterConfig> loadKubeconfig(const std::string& path, const std::string& context = "");

}  // namespace numadra::kube
