#include "numadra/kube/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "numadra/common/errors.hpp"
#include "numadra/kube/base64.hpp"

namespace numadra::kube {
namespace {

namespace fs = std::filesystem;

Result<std::string> readWholeFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return errorFromErrno(errno, "");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool isPresent(const YAML::Node& node) {
    return node.IsDefined() && !node.IsNull();
}

bool isHttpUrl(const std::string& url) {
    return url.starts_with("https://") || url.starts_with("http://");
}

// One element of the kubeconfig's contexts/clusters/users lists, with its YAML path
// ("users[2].user") so that errors can point at the key at fault.
struct Entry {
    YAML::Node body;
    std::string yamlPath;

    std::string field(const std::string& key) const { return yamlPath + "." + key; }
};

class KubeconfigReader {
  public:
    KubeconfigReader(std::string path, const YAML::Node& root)
        : path_(std::move(path)), root_(root), folder_(fs::path(path_).parent_path()) {}

    Result<ClusterConfig> read(const std::string& requestedContext) const {
        auto contextName = selectContext(requestedContext);
        if (!contextName)
            return contextName.error();
        auto context = findEntry("contexts", "context", *contextName);
        if (!context)
            return context.error();
        auto clusterName = optionalString(*context, "cluster");
        if (!clusterName)
            return clusterName.error();
        if (!clusterName->has_value())
            return error(context->field("cluster"), "missing");
        auto cluster = findEntry("clusters", "cluster", **clusterName);
        if (!cluster)
            return cluster.error();

        ClusterConfig config;
        if (Status read = readCluster(*cluster, config); !read)
            return read.error();

        // A context without a user is valid: the server may allow anonymous requests.
        auto userName = optionalString(*context, "user");
        if (!userName)
            return userName.error();
        if (userName->has_value() && !(*userName)->empty()) {
            auto user = findEntry("users", "user", **userName);
            if (!user)
                return user.error();
            if (Status read = readUser(*user, config); !read)
                return read.error();
        }
        return config;
    }

  private:
    Error error(const std::string& field, const std::string& problem) const {
        return Error{"kubeconfig " + path_ + ": " + field + ": " + problem};
    }

    Result<std::string> selectContext(const std::string& requested) const {
        if (!requested.empty())
            return requested;
        const YAML::Node current = root_["current-context"];
        if (!isPresent(current) || !current.IsScalar() || current.Scalar().empty())
            return error("current-context", "missing, and no context was asked for");
        return current.Scalar();
    }

    Result<Entry> findEntry(const std::string& listKey, const std::string& bodyKey,
                            const std::string& name) const {
        const YAML::Node list = root_[listKey];
        if (isPresent(list) && !list.IsSequence())
            return error(listKey, "not a list");
        for (size_t i = 0; isPresent(list) && i < list.size(); ++i) {
            const YAML::Node item = list[i];
            const std::string itemPath = listKey + "[" + std::to_string(i) + "]";
            if (!item.IsMap())
                return error(itemPath, "not a map");
            const YAML::Node itemName = item["name"];
            if (!isPresent(itemName) || !itemName.IsScalar() || itemName.Scalar() != name)
                continue;
            Entry entry{item[bodyKey], itemPath + "." + bodyKey};
            if (!isPresent(entry.body))
                return error(entry.yamlPath, "missing");
            if (!entry.body.IsMap())
                return error(entry.yamlPath, "not a map");
            return entry;
        }
        return Error{"kubeconfig " + path_ + ": " + bodyKey + " '" + name + "' not found"};
    }

    Result<std::optional<std::string>> optionalString(const Entry& entry,
                                                      const std::string& key) const {
        const YAML::Node value = entry.body[key];
        if (!isPresent(value))
            return std::optional<std::string>{};
        if (!value.IsScalar())
            return error(entry.field(key), "not a string");
        return std::optional<std::string>{value.Scalar()};
    }

    // A string value, "" when absent.
    Result<std::string> stringOrEmpty(const Entry& entry, const std::string& key) const {
        auto value = optionalString(entry, key);
        if (!value)
            return value.error();
        return value->value_or("");
    }

    // A file path, made absolute against the kubeconfig's folder as kubectl does.
    Result<std::string> pathOrEmpty(const Entry& entry, const std::string& key) const {
        auto value = stringOrEmpty(entry, key);
        if (!value || value->empty())
            return value;
        const fs::path path(*value);
        if (path.is_absolute() || folder_.empty())
            return *value;
        return (folder_ / path).lexically_normal().string();
    }

    Result<std::string> base64OrEmpty(const Entry& entry, const std::string& key) const {
        auto value = stringOrEmpty(entry, key);
        if (!value || value->empty())
            return value;
        auto decoded = decodeBase64(*value);
        if (!decoded)
            return error(entry.field(key), "not base64");
        return std::move(*decoded);
    }

    Result<bool> boolOrFalse(const Entry& entry, const std::string& key) const {
        const YAML::Node value = entry.body[key];
        if (!isPresent(value))
            return false;
        bool flag = false;
        if (!value.IsScalar() || !YAML::convert<bool>::decode(value, flag))
            return error(entry.field(key), "not a boolean");
        return flag;
    }

    Status readCluster(const Entry& cluster, ClusterConfig& config) const {
        auto server = stringOrEmpty(cluster, "server");
        auto caFile = pathOrEmpty(cluster, "certificate-authority");
        auto caData = base64OrEmpty(cluster, "certificate-authority-data");
        auto insecure = boolOrFalse(cluster, "insecure-skip-tls-verify");
        for (const Error* failed : {errorOf(server), errorOf(caFile), errorOf(caData)}) {
            if (failed != nullptr)
                return *failed;
        }
        if (!insecure)
            return insecure.error();
        if (server->empty())
            return error(cluster.field("server"), "missing");
        if (!isHttpUrl(*server))
            return error(cluster.field("server"), "'" + *server + "' is not an http(s) URL");
        // As kubectl: trusting a CA and skipping verification contradict each other.
        if (*insecure && (!caFile->empty() || !caData->empty()))
            return error(cluster.field("insecure-skip-tls-verify"),
                         "cannot be true together with a certificate-authority");
        config.server = std::move(*server);
        config.caFile = std::move(*caFile);
        config.caData = std::move(*caData);
        config.insecureSkipTlsVerify = *insecure;
        return Status::Ok();
    }

    Status readUser(const Entry& user, ClusterConfig& config) const {
        auto token = stringOrEmpty(user, "token");
        auto tokenFile = pathOrEmpty(user, "tokenFile");
        auto certFile = pathOrEmpty(user, "client-certificate");
        auto keyFile = pathOrEmpty(user, "client-key");
        auto certData = base64OrEmpty(user, "client-certificate-data");
        auto keyData = base64OrEmpty(user, "client-key-data");
        for (const Error* failed : {errorOf(token), errorOf(tokenFile), errorOf(certFile),
                                    errorOf(keyFile), errorOf(certData), errorOf(keyData)}) {
            if (failed != nullptr)
                return *failed;
        }
        const bool hasCert = !certFile->empty() || !certData->empty();
        const bool hasKey = !keyFile->empty() || !keyData->empty();
        if (hasCert && !hasKey)
            return error(user.field("client-key"), "missing (a client certificate is set)");
        if (hasKey && !hasCert)
            return error(user.field("client-certificate"), "missing (a client key is set)");
        const bool hasCredential = hasCert || !token->empty() || !tokenFile->empty();
        for (const char* plugin : {"exec", "auth-provider"}) {
            if (!hasCredential && isPresent(user.body[plugin]))
                return error(user.field(plugin), "credential plugins are not supported");
        }
        config.bearerToken = std::move(*token);
        config.tokenFile = std::move(*tokenFile);
        config.clientCertFile = std::move(*certFile);
        config.clientKeyFile = std::move(*keyFile);
        config.clientCertData = std::move(*certData);
        config.clientKeyData = std::move(*keyData);
        return Status::Ok();
    }

    template <class T>
    static const Error* errorOf(const Result<T>& result) {
        return result.ok() ? nullptr : &result.error();
    }

    std::string path_;
    YAML::Node root_;
    fs::path folder_;
};

std::string valueOf(const std::map<std::string, std::string>& environment,
                    const std::string& name) {
    const auto found = environment.find(name);
    return found == environment.end() ? "" : found->second;
}

bool isPort(const std::string& text) {
    return !text.empty() && text.size() <= 5 &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Result<ClusterConfig> loadInClusterConfig(const std::map<std::string, std::string>& environment,
                                          const std::string& serviceAccountDir) {
    const std::string host = valueOf(environment, "KUBERNETES_SERVICE_HOST");
    const std::string port = valueOf(environment, "KUBERNETES_SERVICE_PORT");
    for (const auto& [name, value] :
         {std::pair{"KUBERNETES_SERVICE_HOST", host}, std::pair{"KUBERNETES_SERVICE_PORT", port}}) {
        if (value.empty())
            return Error{std::string("in-cluster config: ") + name +
                         " is not set (not running in a pod?)"};
    }
    if (!isPort(port))
        return Error{"in-cluster config: KUBERNETES_SERVICE_PORT: '" + port + "' is not a port"};

    ClusterConfig config;
    const bool bareIpv6 = host.find(':') != std::string::npos && !host.starts_with('[');
    config.server = "https://" + (bareIpv6 ? "[" + host + "]" : host) + ":" + port;
    config.tokenFile = serviceAccountDir + "/token";
    config.caFile = serviceAccountDir + "/ca.crt";
    for (const std::string& file : {config.tokenFile, config.caFile}) {
        std::error_code ignored;
        if (!fs::is_regular_file(file, ignored))
            return Error{"in-cluster config: " + file + ": not found"};
    }
    return config;
}

Result<ClusterConfig> loadKubeconfig(const std::string& path, const std::string& context) {
    auto text = readWholeFile(path);
    if (!text)
        return text.error().withMessage("kubeconfig " + path +
                                        ": cannot read: " + text.error().message);
    try {
        const YAML::Node root = YAML::Load(*text);
        if (!root.IsMap())
            return Error{"kubeconfig " + path + ": not a kubeconfig (the top level is not a map)"};
        return KubeconfigReader(path, root).read(context);
    } catch (const YAML::Exception& e) {
        return Error{"kubeconfig " + path + ": not valid YAML: " + e.what()};
    }
}

}  // namespace numadra::kube
