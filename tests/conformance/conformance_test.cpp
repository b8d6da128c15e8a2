// The driver conformance suite: the whole driver the way a cluster drives it, per mocked machine,
// in one process tree on loopback and unix sockets. The fake API server and the daemon are real
// processes (build/bin), this test plays the kubelet (the kubelet's gRPC protos over the real
// sockets), the scheduler (dra-allocate, as a library, on the published slices) and the
// controller that stores allocations. numa-probe's JSON for the same machine and flags is the
// reference for what must be published.
//
//   1. start the API server and the daemon on a copy of the machine's sysfs, with temp folders
//   2. the kubelet's registration handshake; DRA v1 and v1beta1 on the endpoint it names
//   3. the published ResourceSlices against numa-probe and against sysfs itself
//   4. claims allocated by dra-allocate, Prepare: CDI ids, CDI specs (the official CDI library),
//      metadata, and a real container runtime (podman) given each claim's CDI ids
//   5. health streams; a device broken on disk (PCIe link, AER, removal) and repaired
//   6. SIGKILL, restart, the same Prepare answers from the checkpoint; a SIGKILL in the middle of
//      a Prepare; Unprepare leaves every folder empty
//   7. SIGTERM: sockets and slices gone
//
// Each (machine, profile) is one test; a summary line per test goes to the report folder
// (NUMADRA_CONFORMANCE_REPORT_DIR, default <build>/conformance-report) for
// scripts/conformance.sh.
//
// Why one file of ~1,800 lines: the suite is one story per machine and profile (the steps
// above) on one fixture whose live processes (API server, daemon, sockets, health streams) and
// findings every step reads; split over files, that state would move to a header and the story
// would no longer read top to bottom. The pieces that stand alone live beside it (harness.cpp,
// container_runtime.cpp, conformance_apiserver.cpp).

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "container_runtime.hpp"
#include "harness.hpp"
#include "numadra/allocator/cli.hpp"
#include "numadra/testing/ci.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/health_stream.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"
#include "pkg/apis/dra-health/v1/api.grpc.pb.h"
#include "pkg/apis/dra-health/v1alpha1/api.grpc.pb.h"
#include "pkg/apis/dra/v1/api.grpc.pb.h"
#include "pkg/apis/dra/v1beta1/api.grpc.pb.h"
#include "pkg/apis/pluginregistration/v1/api.grpc.pb.h"

namespace numadra::conformance {
namespace {

namespace fs = std::filesystem;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

constexpr const char* kDriver = "numa.dra.dev";
constexpr const char* kNode = "conformance-node";
constexpr const char* kNodeUid = "6a4f3a0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
constexpr const char* kNamespace = "conformance";
const std::string kNumaNode = "resource.kubernetes.io/numaNode";
const std::string kPciBusId = "resource.kubernetes.io/pciBusID";
const std::string kPcieRoot = "resource.kubernetes.io/pcieRoot";
const std::string kTaintKey = std::string(kDriver) + "/unhealthy";

std::string binary(const std::string& name) {
    return std::string(NUMADRA_BIN_DIR) + "/" + name;
}

// ---- parameters ---------------------------------------------------------------------------------

struct Profile {
    std::string name;
    std::vector<std::string> sliceFlags;  // given to the daemon and to numa-probe
    std::vector<std::string> metadataVersions;
};

const std::vector<Profile>& profiles() {
    static const std::vector<Profile> all{
        // The daemon's default maps the CPU devices to the node's allocatable cpu and memory
        // where the API server keeps the field (the fake does): numa-probe shows it on request.
        {"scalar", {"--node-allocatable-resources"}, {"v1alpha1"}},
        {"list", {"--numa-list", "--shared-consumable-capacity"}, {"v1beta1", "v1alpha1"}},
    };
    return all;
}

struct Case {
    std::string machine;
    Profile profile;
};

void PrintTo(const Case& c, std::ostream* out) {
    *out << c.machine << " (" << c.profile.name << ")";
}

std::vector<Case> cases() {
    std::vector<Case> out;
    for (const auto& machine : machineNames()) {
        for (const auto& profile : profiles())
            out.push_back({machine, profile});
    }
    return out;
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
    std::string name = info.param.machine + "_" + info.param.profile.name;
    std::replace_if(
        name.begin(), name.end(),
        [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
    return name;
}

// ---- JSON helpers -------------------------------------------------------------------------------

// The device's numaNode values: {n} for a scalar, the list for a list, {} when absent.
std::set<std::int64_t> numaValues(const Json& device) {
    std::set<std::int64_t> out;
    const Json& attributes = device.value("attributes", Json::object());
    const auto found = attributes.find(kNumaNode);
    if (found == attributes.end())
        return out;
    if (found->contains("int"))
        out.insert((*found)["int"].get<std::int64_t>());
    for (const auto& value : found->value("ints", Json::array()))
        out.insert(value.get<std::int64_t>());
    return out;
}

std::string stringAttribute(const Json& device, const std::string& name) {
    const Json& attributes = device.value("attributes", Json::object());
    const auto found = attributes.find(name);
    if (found == attributes.end() || !found->contains("string"))
        return "";
    return (*found)["string"].get<std::string>();
}

// gpu (GPUs and accelerators), nic (PFs and VFs), cpu.
std::string classOf(const Json& device) {
    const std::string type = stringAttribute(device, "type");
    return type == "accelerator" ? "gpu" : type;
}

bool isVf(const Json& device) {
    return stringAttribute(device, "sriovRole") == "vf";
}

bool tainted(const Json& device) {
    return device.contains("taints") && !device["taints"].empty();
}

Json withoutTaints(Json device) {
    device.erase("taints");
    return device;
}

// "gpu-0000-a3-00-0" -> "0000:a3:00.0" (the device name encodes the PCI address).
std::string addressOf(const std::string& deviceName) {
    const size_t dash = deviceName.find('-');
    std::string rest = deviceName.substr(dash + 1);
    const size_t last = rest.rfind('-');
    const size_t middle = rest.rfind('-', last - 1);
    const size_t first = rest.rfind('-', middle - 1);
    if (last == std::string::npos || middle == std::string::npos || first == std::string::npos)
        return "";
    rest[first] = ':';
    rest[middle] = ':';
    rest[last] = '.';
    return rest;
}

std::string trim(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
    size_t start = 0;
    while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start])))
        ++start;
    return text.substr(start);
}

std::optional<std::int64_t> parseInteger(const std::string& text) {
    try {
        size_t used = 0;
        const std::int64_t value = std::stoll(trim(text), &used);
        if (used == trim(text).size())
            return value;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}
std::set<int> parseCpuList(const std::string& text) {
    std::set<int> out;
    std::stringstream list(trim(text));
    for (std::string range; std::getline(list, range, ',');) {
        if (range.empty())
            continue;
        const size_t dash = range.find('-');
        const int first = std::stoi(range.substr(0, dash));
        const int last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
        for (int cpu = first; cpu <= last; ++cpu)
            out.insert(cpu);
    }
    return out;
}

// {0,1,2,3,8} -> "0-3,8"
std::string formatCpuList(const std::set<int>& cpus) {
    std::string out;
    for (auto it = cpus.begin(); it != cpus.end();) {
        int first = *it, last = *it;
        for (++it; it != cpus.end() && *it == last + 1; ++it)
            last = *it;
        out += (out.empty() ? "" : ",") + std::to_string(first) +
               (last != first ? "-" + std::to_string(last) : "");
    }
    return out;
}

// The JSON objects of a stream of concatenated documents (a metadata file).
std::vector<Json> parseJsonStream(const std::string& content) {
    std::vector<Json> out;
    std::istringstream in(content);
    while (true) {
        in >> std::ws;
        if (in.peek() == EOF)
            break;
        Json value;
        in >> value;
        out.push_back(std::move(value));
    }
    return out;
}

// ---- the API server process ---------------------------------------------------------------------

class ApiServer {
  public:
    explicit ApiServer(const std::string& logFile) {
        Process::Options options;
        options.argv = {binary("conformance-apiserver")};
        options.pipeStdin = true;
        options.pipeStdout = true;
        options.stderrFile = logFile;
        process_ = std::make_unique<Process>(options);
        const auto line = process_->readLine(30s);
        if (!line || line->rfind("http://127.0.0.1:", 0) != 0)
            throw std::runtime_error("the API server did not start (see " + logFile + ")");
        url_ = *line;
        port_ = std::stoi(url_.substr(url_.rfind(':') + 1));
    }
    ~ApiServer() {
        process_->closeStdin();
        process_->wait(10s);
    }

    const std::string& url() const { return url_; }
    Process& process() { return *process_; }

    std::string command(const Json& command) {
        process_->writeLine(command.dump());
        return process_->readLine(30s).value_or("error: no answer");
    }
    std::string putClaim(const Json& claim) {
        return command({{"op", "putClaim"}, {"object", claim}});
    }
    std::string addNode(const std::string& name, const std::string& uid) {
        return command({{"op", "addNode"}, {"name", name}, {"uid", uid}});
    }
    int requestCount(const std::string& method, const std::string& prefix) {
        const auto answer =
            parseInteger(command({{"op", "requestCount"}, {"method", method}, {"prefix", prefix}}));
        return answer ? static_cast<int>(*answer) : -1;
    }

    // GET of one object, as any client; nullopt unless 200 with JSON.
    std::optional<Json> get(const std::string& path) {
        const auto response = httpGet(port_, path);
        if (response.status != 200)
            return std::nullopt;
        const Json object = Json::parse(response.body, nullptr, false);
        return object.is_discarded() ? std::nullopt : std::optional<Json>(object);
    }

    // GET /apis/resource.k8s.io/v1/resourceslices, as any client; nullopt when it fails.
    std::optional<std::vector<Json>> slices() {
        const auto response = httpGet(port_, "/apis/resource.k8s.io/v1/resourceslices");
        if (response.status != 200)
            return std::nullopt;
        try {
            const Json list = Json::parse(response.body);
            std::vector<Json> items = list.value("items", Json::array());
            std::sort(items.begin(), items.end(), [](const Json& a, const Json& b) {
                return a["metadata"]["name"] < b["metadata"]["name"];
            });
            return items;
        } catch (const std::exception&) {
            return std::nullopt;
        }
    }

  private:
    std::unique_ptr<Process> process_;
    std::string url_;
    int port_ = 0;
};

// The devices of slices in slice-name order, and their counter sets by name.
std::vector<Json> devicesOf(const std::vector<Json>& slices) {
    std::vector<Json> out;
    for (const auto& slice : slices) {
        for (const auto& device : slice["spec"].value("devices", Json::array()))
            out.push_back(device);
    }
    return out;
}

std::map<std::string, Json> counterSetsOf(const std::vector<Json>& slices) {
    std::map<std::string, Json> out;
    for (const auto& slice : slices) {
        for (const auto& set : slice["spec"].value("sharedCounters", Json::array()))
            out[set["name"].get<std::string>()] = set;
    }
    return out;
}

// ---- the kubelet's side of the gRPC services ----------------------------------------------------

std::shared_ptr<grpc::Channel> channelTo(const std::string& socket) {
    grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(),
                                     arguments);
}

void setDeadline(grpc::ClientContext& context, std::chrono::milliseconds timeout) {
    context.set_deadline(std::chrono::system_clock::now() + scaled(timeout));
}

template <class Claim>
Claim claimRef(const std::string& name, const std::string& uid) {
    Claim claim;
    claim.set_namespace_(kNamespace);
    claim.set_name(name);
    claim.set_uid(uid);
    return claim;
}

// NodeWatchResources as the kubelet keeps it open: reads snapshots until one satisfies `done`.
template <class Stub, class Response>
class HealthWatch {
  public:
    explicit HealthWatch(Stub& stub) {
        setDeadline(context_, 300s);
        reader_ = stub.NodeWatchResources(&context_, {});
    }
    ~HealthWatch() {
        context_.TryCancel();
        Response drain;
        while (reader_->Read(&drain)) {
        }
        reader_->Finish();
    }
    template <class Predicate>
    bool readUntil(Predicate done, std::chrono::milliseconds timeout, Response* last = nullptr) {
        const auto end = std::chrono::steady_clock::now() + scaled(timeout);
        Response response;
        while (std::chrono::steady_clock::now() < end && reader_->Read(&response)) {
            if (done(response)) {
                if (last != nullptr)
                    *last = response;
                return true;
            }
        }
        return false;
    }

  private:
    grpc::ClientContext context_;
    std::unique_ptr<grpc::ClientReader<Response>> reader_;
};

using numadra::testing::healthOf;

// ---- claims -------------------------------------------------------------------------------------

struct TestClaim {
    std::string name, uid;
    Json object;  // with status.allocation once allocated
    Json results() const { return object["status"]["allocation"]["devices"]["results"]; }
    std::vector<std::string> requests() const {
        std::vector<std::string> out;
        for (const auto& request : object["spec"]["devices"]["requests"])
            out.push_back(request["name"]);
        return out;
    }
};

Json deviceClass(const std::string& name, const std::string& expression) {
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "DeviceClass"},
            {"metadata", {{"name", name}}},
            {"spec", {{"selectors", Json::array({{{"cel", {{"expression", expression}}}}})}}}};
}

Json deviceClasses() {
    const std::string driver = std::string("device.driver == \"") + kDriver + "\"";
    const std::string attributes = std::string("device.attributes[\"") + kDriver + "\"]";
    return {
        {"apiVersion", "v1"},
        {"kind", "List"},
        {"items",
         {deviceClass("gpu.conformance", driver + " && (" + attributes + ".type == \"gpu\" || " +
                                             attributes + ".type == \"accelerator\")"),
          deviceClass("nic.conformance", driver + " && " + attributes + ".type == \"nic\""),
          deviceClass("vf.conformance", driver + " && " + attributes +
                                            ".type == \"nic\" && \"sriovRole\" in " + attributes +
                                            " && " + attributes + ".sriovRole == \"vf\""),
          deviceClass("cpu.conformance", driver + " && " + attributes + ".type == \"cpu\"")}}};
}

// One request of the class `kind`; a CPU request may ask for `cpus` CPUs under `capacityKey`.
Json request(const std::string& kind, const std::string& capacityKey = "", int cpus = 0) {
    Json exactly{{"deviceClassName", kind + ".conformance"}};
    if (cpus > 0)
        exactly["capacity"] = {{"requests", {{capacityKey, std::to_string(cpus)}}}};
    return {{"name", kind}, {"exactly", exactly}};
}

Json claimObject(const std::string& name, const std::string& uid, const Json& requests,
                 bool matchNuma) {
    Json devices{{"requests", requests}};
    if (matchNuma)
        devices["constraints"] = Json::array({{{"matchAttribute", kNumaNode}}});
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaim"},
            {"metadata", {{"name", name}, {"namespace", kNamespace}, {"uid", uid}}},
            {"spec", {{"devices", devices}}}};
}

// ---- the suite ----------------------------------------------------------------------------------

class Conformance : public ::testing::TestWithParam<Case> {
  protected:
    const std::string machine = GetParam().machine;
    const Profile profile = GetParam().profile;
    numadra::testing::TempTree dirs;
    numadra::testing::TempTree sysCopy;
    numadra::testing::MockDev dev;
    std::unique_ptr<ApiServer> api;
    std::unique_ptr<Process> daemon;
    int daemonRuns = 0;
    std::chrono::steady_clock::time_point begin = std::chrono::steady_clock::now();

    // What the steps learn and the next ones use.
    std::vector<Json> referenceDevices;          // numa-probe, in slice order
    std::map<std::string, Json> published;       // the last listing, by device name
    std::map<std::string, std::string> sliceOf;  // device name -> its slice in that listing
    std::vector<TestClaim> claims;
    std::map<std::string, std::string> answers;  // claim UID -> v1 answer (DebugString)
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> filesOfClaim;
    std::vector<std::pair<std::string, std::string>> report;  // step -> what was checked

    std::string sys() const { return sysCopy.root(); }
    std::string proc() const {
        return std::string(NUMADRA_GENERATED_SYSFS) + "/" + machine + "/proc";
    }
    std::string registryDir() const { return dirs.path("registry"); }
    std::string pluginsDir() const { return dirs.path("plugins"); }
    std::string pluginDir() const { return pluginsDir() + "/" + kDriver; }
    std::string cdiDir() const { return dirs.path("cdi"); }
    std::string metadataDir() const { return dirs.path("metadata"); }
    std::string stateDir() const { return dirs.path("state"); }
    std::string draSocket() const { return pluginDir() + "/dra.sock"; }
    std::string registrationSocket() const { return registryDir() + "/" + kDriver + "-reg.sock"; }

    std::chrono::steady_clock::time_point lastNote = begin;
    void note(const std::string& step, const std::string& text) {
        const auto now = std::chrono::steady_clock::now();
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, " [%.1fs]",
                      std::chrono::duration<double>(now - lastNote).count());
        lastNote = now;
        report.emplace_back(step, text + seconds);
    }

    void SetUp() override {
        sysCopy.copyFrom(numadra::testing::machineRoot(machine));
        dev = numadra::testing::makeDevTree(numadra::testing::loadMachine(machine), dirs, "dev");
        for (const char* folder :
             {"registry", "plugins", "cdi", "metadata", "state", "logs", "scratch", "removed"})
            dirs.dir(folder);
    }

    void TearDown() override {
        if (daemon && daemon->running()) {
            daemon->signal(SIGTERM);
            daemon->wait(15s);
        }
        daemon.reset();
        if (HasFailure())
            printLogs();
        api.reset();
        writeReport();
    }

    void printLogs() const {
        for (const auto& [name, content] : filesBelow(dirs.path("logs"))) {
            std::string text = content;
            if (text.size() > 6000)
                text = "...\n" + text.substr(text.size() - 6000);
            std::cerr << "---- " << name << " ----\n" << text << "\n";
        }
    }

    void writeReport() const {
        const char* folder = std::getenv("NUMADRA_CONFORMANCE_REPORT_DIR");
        const fs::path dir = folder != nullptr ? folder : NUMADRA_CONFORMANCE_REPORT_DIR;
        std::error_code ec;
        fs::create_directories(dir, ec);
        std::ofstream out(dir / (machine + "." + profile.name + ".txt"), std::ios::trunc);
        const auto seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin);
        out << "machine=" << machine << " profile=" << profile.name
            << " result=" << (HasFailure() ? "FAIL" : "PASS") << " seconds=" << seconds.count()
            << "\n";
        for (const auto& [step, text] : report)
            out << "  " << step << ": " << text << "\n";
    }

    std::vector<std::string> daemonFlags() const {
        std::vector<std::string> flags{
            "--kubeconfig", dirs.path("kubeconfig"), "--node-name", kNode, "--sysfs-root", sys(),
            "--proc-root", proc(), "--dev-root", dev.root, "--kubelet-registry-dir", registryDir(),
            "--kubelet-plugins-dir", pluginsDir(), "--cdi-dir", cdiDir(), "--metadata-dir",
            metadataDir(), "--state-dir", stateDir(), "--nri-socket", dirs.path("nri.sock"),
            "--metrics-addr", "", "--resync-interval", "1s", "--health-interval", "200ms",
            "--health-resend-interval", "500ms", "--health-aer-recovery",
            // Long enough to see the taint; scaled on slow runs.
            std::to_string(scaled(2s).count()) + "ms", "--log-level", "info"};
        std::string versions;
        for (const auto& version : profile.metadataVersions)
            versions += (versions.empty() ? "" : ",") + version;
        flags.insert(flags.end(), {"--metadata-versions", versions});
        flags.insert(flags.end(), profile.sliceFlags.begin(), profile.sliceFlags.end());
        return flags;
    }

    // `program`: numa-dra-plugin-faults for the crash steps (fault injection, test-only).
    void startDaemon(const std::vector<std::string>& extraEnvironment = {},
                     const std::string& program = "numa-dra-plugin") {
        ++daemonRuns;
        Process::Options options;
        options.argv = {binary(program)};
        const auto flags = daemonFlags();
        options.argv.insert(options.argv.end(), flags.begin(), flags.end());
        options.env = childEnvironment(extraEnvironment);
        options.stderrFile = dirs.path("logs/daemon-" + std::to_string(daemonRuns) + ".log");
        options.stdoutFile = dirs.path("logs/daemon-" + std::to_string(daemonRuns) + ".out");
        daemon = std::make_unique<Process>(options);
    }

    // ---- step 1
    // ----------------------------------------------------------------------------------

    void startApiServerAndDaemon() {
        api = std::make_unique<ApiServer>(dirs.path("logs/apiserver.log"));
        ASSERT_EQ(api->addNode(kNode, kNodeUid), "ok");
        writeFile(dirs.path("kubeconfig"),
                  "apiVersion: v1\nkind: Config\ncurrent-context: conformance\nclusters:\n"
                  "- name: fake\n  cluster:\n    server: " +
                      api->url() +
                      "\nusers:\n- name: driver\n  user:\n    token: conformance-token\n"
                      "contexts:\n- name: conformance\n  context:\n    cluster: fake\n"
                      "    user: driver\n");
        startDaemon();
        note("1 start", "API server " + api->url() + ", daemon pid " +
                            std::to_string(daemon->pid()) + " on a copy of " + machine);
    }

    // ---- step 2
    // ----------------------------------------------------------------------------------

    // The registration sockets the kubelet's plugin watcher would pick up.
    std::vector<std::string> registrationSockets() const {
        std::vector<std::string> out;
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(registryDir(), ec)) {
            if (entry.path().filename().string().front() != '.' && entry.is_socket())
                out.push_back(entry.path().string());
        }
        return out;
    }

    static grpc::Status tryGetInfo(const std::string& socket, pluginregistration::PluginInfo& info,
                                   std::chrono::milliseconds timeout = 5s) {
        auto stub = pluginregistration::Registration::NewStub(channelTo(socket));
        grpc::ClientContext context;
        setDeadline(context, timeout);
        return stub->GetInfo(&context, pluginregistration::InfoRequest(), &info);
    }

    pluginregistration::PluginInfo getInfo(const std::string& socket) {
        pluginregistration::PluginInfo info;
        const auto status = tryGetInfo(socket, info);
        EXPECT_TRUE(status.ok()) << status.error_message();
        return info;
    }

    void registerAsKubelet() {
        std::vector<std::string> sockets;
        ASSERT_TRUE(eventually(
            [&] {
                sockets = registrationSockets();
                return !sockets.empty() || !daemon->running();
            },
            30s));
        ASSERT_TRUE(daemon->running()) << "the daemon exited with " << *daemon->exitStatus();
        ASSERT_EQ(sockets, std::vector<std::string>{registrationSocket()});

        const auto info = getInfo(sockets[0]);
        EXPECT_EQ(info.type(), "DRAPlugin");
        EXPECT_EQ(info.name(), kDriver);
        EXPECT_EQ(info.endpoint(), draSocket());
        ASSERT_GE(info.supported_versions_size(), 2);
        EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");
        EXPECT_EQ(info.supported_versions(1), "v1beta1.DRAPlugin");
        // GetInfo is cheap and gives the same answer every time.
        EXPECT_EQ(getInfo(sockets[0]).DebugString(), info.DebugString());
        ASSERT_TRUE(fs::is_socket(info.endpoint()));
        {
            auto stub = pluginregistration::Registration::NewStub(channelTo(sockets[0]));
            grpc::ClientContext context;
            setDeadline(context, 5s);
            pluginregistration::RegistrationStatus status;
            status.set_plugin_registered(true);
            pluginregistration::RegistrationStatusResponse response;
            const auto rpc = stub->NotifyRegistrationStatus(&context, status, &response);
            EXPECT_TRUE(rpc.ok()) << rpc.error_message();
        }

        // The kubelet connects with the version it picked; both must serve. An empty Prepare
        // is fine, and Unprepare of a claim the driver never saw is a success.
        {
            auto v1 = drav1::DRAPlugin::NewStub(channelTo(info.endpoint()));
            grpc::ClientContext context;
            setDeadline(context, 45s);
            drav1::NodePrepareResourcesResponse prepared;
            ASSERT_TRUE(v1->NodePrepareResources(&context, {}, &prepared).ok());
            EXPECT_TRUE(prepared.claims().empty());
            drav1::NodeUnprepareResourcesRequest request;
            *request.add_claims() =
                claimRef<drav1::Claim>("never-seen", "0000dead-0000-4000-8000-000000000001");
            drav1::NodeUnprepareResourcesResponse response;
            grpc::ClientContext unprepareContext;
            setDeadline(unprepareContext, 45s);
            ASSERT_TRUE(v1->NodeUnprepareResources(&unprepareContext, request, &response).ok());
            ASSERT_EQ(response.claims().count("0000dead-0000-4000-8000-000000000001"), 1u);
            EXPECT_EQ(response.claims().at("0000dead-0000-4000-8000-000000000001").error(), "");
        }
        {
            auto v1beta1 = drav1beta1::DRAPlugin::NewStub(channelTo(info.endpoint()));
            grpc::ClientContext context;
            setDeadline(context, 45s);
            drav1beta1::NodeUnprepareResourcesRequest request;
            *request.add_claims() =
                claimRef<drav1beta1::Claim>("never-seen", "0000dead-0000-4000-8000-000000000002");
            drav1beta1::NodeUnprepareResourcesResponse response;
            ASSERT_TRUE(v1beta1->NodeUnprepareResources(&context, request, &response).ok());
            ASSERT_EQ(response.claims().count("0000dead-0000-4000-8000-000000000002"), 1u);
            EXPECT_EQ(response.claims().at("0000dead-0000-4000-8000-000000000002").error(), "");
        }
        std::string versions;
        for (const auto& version : info.supported_versions())
            versions += (versions.empty() ? "" : ",") + version;
        note("2 kubelet", "registered " + info.name() + " at " +
                              fs::path(info.endpoint()).filename().string() + " [" + versions +
                              "], v1 and v1beta1 answer");
    }

    // ---- step 3
    // ----------------------------------------------------------------------------------

    // A listing that is the complete pool: every slice of the same generation and count.
    static bool completePool(const std::vector<Json>& slices) {
        if (slices.empty())
            return false;
        const Json& pool = slices[0]["spec"]["pool"];
        for (const auto& slice : slices) {
            const Json& other = slice["spec"]["pool"];
            if (other["generation"] != pool["generation"] ||
                other["resourceSliceCount"] != Json(slices.size()))
                return false;
        }
        return true;
    }

    std::vector<Json> publishedSlices(std::chrono::milliseconds timeout = 30s) {
        std::vector<Json> slices;
        eventually(
            [&] {
                auto listed = api->slices();
                if (!listed)
                    return false;
                slices = std::move(*listed);
                return completePool(slices);
            },
            timeout, 100ms);
        published.clear();
        sliceOf.clear();
        for (const auto& slice : slices) {
            for (const auto& device : slice["spec"].value("devices", Json::array())) {
                published[device["name"].get<std::string>()] = device;
                sliceOf[device["name"].get<std::string>()] = slice["metadata"]["name"];
            }
        }
        return slices;
    }

    void checkSlices() {
        std::vector<std::string> probe{
            binary("numa-probe"), "--sysfs-root", sys(), "--node-name", kNode, "--output", "json"};
        probe.insert(probe.end(), profile.sliceFlags.begin(), profile.sliceFlags.end());
        const auto run = runCommand(probe, "", dirs.path("scratch"));
        ASSERT_EQ(run.status, 0) << run.err;
        const Json reference = Json::parse(run.out);
        std::vector<Json> referenceSlices = reference["items"];
        std::sort(referenceSlices.begin(), referenceSlices.end(), [](const Json& a, const Json& b) {
            return a["metadata"]["name"] < b["metadata"]["name"];
        });
        referenceDevices = devicesOf(referenceSlices);
        std::set<std::string> expectedNames;
        for (const auto& device : referenceDevices)
            expectedNames.insert(device["name"]);

        std::vector<Json> slices;
        ASSERT_TRUE(eventually(
            [&] {
                slices = publishedSlices(1s);
                std::set<std::string> names;
                for (const auto& [name, device] : published)
                    names.insert(name);
                return completePool(slices) && names == expectedNames;
            },
            60s, 200ms))
            << "published " << published.size() << " devices in " << slices.size()
            << " slices, numa-probe has " << expectedNames.size();

        // Every slice: this node's pool, owned by its Node, within the API's limits.
        size_t taintedCount = 0;
        for (const auto& slice : slices) {
            SCOPED_TRACE(slice["metadata"]["name"].get<std::string>());
            EXPECT_EQ(slice["apiVersion"], "resource.k8s.io/v1");
            EXPECT_EQ(slice["spec"]["driver"], kDriver);
            EXPECT_EQ(slice["spec"]["nodeName"], kNode);
            EXPECT_EQ(slice["spec"]["pool"]["name"], kNode);
            EXPECT_EQ(slice["metadata"]["name"].get<std::string>().rfind(
                          std::string(kNode) + "-" + kDriver + "-", 0),
                      0u);
            ASSERT_TRUE(slice["metadata"].contains("ownerReferences"));
            const Json& owner = slice["metadata"]["ownerReferences"][0];
            EXPECT_EQ(owner["kind"], "Node");
            EXPECT_EQ(owner["name"], kNode);
            EXPECT_EQ(owner["uid"], kNodeUid);
            // With health on a device may get a taint at any time: 64 per slice.
            EXPECT_LE(slice["spec"].value("devices", Json::array()).size(), 64u);
            EXPECT_LE(slice["spec"].value("sharedCounters", Json::array()).size(), 8u);
            for (const auto& device : slice["spec"].value("devices", Json::array())) {
                EXPECT_LE(device.value("attributes", Json::object()).size() +
                              device.value("capacity", Json::object()).size(),
                          32u)
                    << device["name"];
            }
        }

        // The same devices as numa-probe, attribute for attribute, in the same order (the
        // scheduler's first fit walks them in this order); taints are health, checked in step 5.
        const auto devices = devicesOf(slices);
        ASSERT_EQ(devices.size(), referenceDevices.size());
        for (size_t i = 0; i < devices.size(); ++i) {
            EXPECT_EQ(withoutTaints(devices[i]), referenceDevices[i])
                << "device " << i << " differs from numa-probe's";
            if (tainted(devices[i]))
                ++taintedCount;
        }
        EXPECT_EQ(counterSetsOf(slices), counterSetsOf(referenceSlices));

        // And against sysfs itself: a PCI device's NUMA node is its numa_node file (absent when
        // the kernel does not know it), its pciBusID its address; a CPU device's CPUs are its
        // node's cpulist.
        for (const auto& device : devices) {
            const std::string name = device["name"];
            SCOPED_TRACE(name);
            const auto numa = numaValues(device);
            const std::string kind = classOf(device);
            // A VF pool (--vf-layout=pooled) sits where its PF does.
            const bool vfPool = isVf(device) && device.value("allowMultipleAllocations", false);
            const std::string address =
                vfPool ? stringAttribute(device, "pfPciBusID") : addressOf(name);
            if ((kind == "gpu" || kind == "nic") && !address.empty()) {
                const fs::path function = fs::path(sys()) / "bus/pci/devices" / address;
                ASSERT_TRUE(fs::exists(function)) << function;
                const auto node = parseInteger(readFile(function / "numa_node"));
                if (node && *node >= 0) {
                    ASSERT_FALSE(numa.empty()) << "no numaNode, numa_node is " << *node;
                    const Json& attribute = device["attributes"][kNumaNode];
                    EXPECT_EQ(attribute.contains("int") ? attribute["int"] : attribute["ints"][0],
                              Json(*node));
                } else {
                    EXPECT_TRUE(numa.empty())
                        << "numaNode published for numa_node " << readFile(function / "numa_node");
                }
                if (device["attributes"].contains(kPciBusId)) {
                    EXPECT_EQ(device["attributes"][kPciBusId]["string"], addressOf(name));
                }
            }
            if (name.rfind("cpu-numa-", 0) == 0) {
                const int node = std::stoi(name.substr(9));
                EXPECT_EQ(numa, std::set<std::int64_t>{node});
                const fs::path cpulist = fs::path(sys()) /
                                         ("devices/system/node/node" + std::to_string(node)) /
                                         "cpulist";
                // The range list is published when it fits the API's 64-byte string limit.
                if (fs::exists(cpulist)) {
                    const std::string text = stringAttribute(device, "cpus");
                    const auto online = parseCpuList(readFile(cpulist));
                    if (!text.empty() || formatCpuList(online).size() <= 64) {
                        EXPECT_EQ(parseCpuList(text), online);
                    }
                }
            }
        }

        std::map<std::string, int> perClass;
        for (const auto& device : devices)
            ++perClass[isVf(device) ? "vf" : classOf(device)];
        std::string counts;
        for (const auto& [kind, count] : perClass)
            counts += " " + kind + "=" + std::to_string(count);
        note("3 slices", std::to_string(slices.size()) + " slices, " +
                             std::to_string(devices.size()) + " devices (" + counts.substr(1) +
                             "), " + std::to_string(counterSetsOf(slices).size()) +
                             " counter sets, equal to numa-probe; " + std::to_string(taintedCount) +
                             " tainted at start");
    }

    // ---- step 4
    // ----------------------------------------------------------------------------------

    // dra-allocate (the library behind the binary) on the published slices: the claims with
    // their allocation, in order, each counted against the next; nullopt when one does not fit.
    std::optional<std::vector<Json>> allocate(const std::vector<Json>& claimObjects,
                                              std::string* explanation = nullptr) {
        auto listed = api->slices();
        if (!listed)
            return std::nullopt;
        const std::string slicesFile = dirs.path("scratch/slices.json");
        const std::string classesFile = dirs.path("scratch/classes.json");
        const std::string claimsFile = dirs.path("scratch/claims.json");
        writeFile(slicesFile,
                  Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", *listed}}.dump());
        writeFile(classesFile, deviceClasses().dump());
        writeFile(claimsFile,
                  Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", claimObjects}}.dump());
        std::istringstream in;
        std::ostringstream out, err;
        const int status = allocator::runDraAllocate(
            {"--node", kNode, "--output", "json", "--explain", slicesFile, classesFile, claimsFile},
            in, out, err);
        if (explanation != nullptr)
            *explanation = err.str();
        EXPECT_NE(status, 2) << err.str();
        if (status != 0)
            return std::nullopt;
        return Json::parse(out.str())["items"].get<std::vector<Json>>();
    }

    // Devices the scheduler could give a request of `kind`: untainted, not used by `taken`
    // (unless shared: CPU devices are handed out in shares).
    std::vector<Json> candidates(const std::string& kind,
                                 const std::set<std::string>& taken) const {
        std::vector<Json> out;
        for (const auto& [name, device] : published) {
            const bool matches = kind == "vf" ? isVf(device) : classOf(device) == kind;
            const bool shared = device.value("allowMultipleAllocations", false);
            if (matches && !tainted(device) && (shared || taken.count(name) == 0))
                out.push_back(device);
        }
        return out;
    }

    // The capacity name a CPU request uses for CPUs: the device's own capacity "cpu", or the
    // key its counters draw on (--shared-consumable-capacity).
    std::pair<std::string, int> cpuCapacity() const {
        for (const auto& device : candidates("cpu", {})) {
            if (device.contains("capacity") && device["capacity"].contains("cpu")) {
                const auto cpus =
                    parseInteger(device["capacity"]["cpu"]["value"].get<std::string>());
                return {"cpu", static_cast<int>(cpus.value_or(0))};
            }
        }
        for (const auto& device : candidates("cpu", {})) {
            for (const auto& consumption : device.value("consumesCounters", Json::array())) {
                const Json& cpu = consumption["counters"].value("cpu", Json());
                if (cpu.contains("valueFrom"))
                    return {cpu["valueFrom"]["capacityKey"], 0};
            }
        }
        return {"", 0};
    }

    void createAndAllocateClaims() {
        std::set<std::string> present;
        for (const auto& [name, device] : published) {
            if (!tainted(device))
                present.insert(classOf(device));
        }
        // 1. A GPU, a NIC and CPUs on one NUMA node (or as many of them as the node can put on
        // one): feasible exactly when one numaNode value is offered by an untainted device of
        // every class; dra-allocate must agree both ways.
        const std::vector<std::vector<std::string>> combinations{
            {"gpu", "nic", "cpu"}, {"gpu", "cpu"}, {"nic", "cpu"}, {"gpu", "nic"}};
        auto feasible = [&](const std::vector<std::string>& kinds) {
            std::map<std::int64_t, std::set<std::string>> kindsOn;
            for (const auto& kind : kinds) {
                for (const auto& device : candidates(kind, {})) {
                    for (auto value : numaValues(device))
                        kindsOn[value].insert(kind);
                }
            }
            return std::any_of(kindsOn.begin(), kindsOn.end(), [&](const auto& entry) {
                return entry.second.size() == kinds.size();
            });
        };
        std::optional<std::vector<std::string>> colocated;
        for (const auto& kinds : combinations) {
            if (!std::all_of(kinds.begin(), kinds.end(),
                             [&](const auto& kind) { return present.count(kind) > 0; }))
                continue;
            Json requests = Json::array();
            for (const auto& kind : kinds)
                requests.push_back(request(kind));
            const Json claim =
                claimObject("colocated", "c0c0c0c0-0000-4000-8000-000000000001", requests, true);
            std::string explanation;
            const auto allocated = allocate({claim}, &explanation);
            EXPECT_EQ(allocated.has_value(), feasible(kinds))
                << "dra-allocate and the slices disagree about co-placing " << requests.dump()
                << ": " << explanation;
            if (allocated) {
                colocated = kinds;
                claims.push_back({"colocated", claim["metadata"]["uid"], (*allocated)[0]});
                break;
            }
        }
        std::set<std::string> taken;
        if (colocated) {
            // The constraint holds: the devices share a NUMA node.
            std::set<std::int64_t> common;
            bool first = true;
            for (const auto& result : claims[0].results()) {
                const std::string device = result["device"];
                taken.insert(device);
                const auto values = numaValues(published.at(device));
                if (first) {
                    common = values;
                    first = false;
                } else {
                    std::set<std::int64_t> both;
                    std::set_intersection(common.begin(), common.end(), values.begin(),
                                          values.end(), std::inserter(both, both.begin()));
                    common = both;
                }
            }
            EXPECT_FALSE(common.empty())
                << "matchAttribute numaNode not honoured: " << claims[0].results().dump();
        }

        // 2. One more device of every class left (a VF too, when the machine has them), with
        // CPUs asked by count; each request is kept only if the node can still give it.
        const auto [cpuKey, cpuTotal] = cpuCapacity();
        const std::string singlesUid = "c0c0c0c0-0000-4000-8000-000000000002";
        Json requests = Json::array();
        std::optional<Json> singles;
        for (const std::string kind : {"gpu", "nic", "vf", "cpu"}) {
            if (candidates(kind, taken).empty())
                continue;
            Json attempt = requests;
            const int cpus =
                kind != "cpu" || cpuKey.empty() ? 0 : (cpuTotal == 0 || cpuTotal >= 4 ? 2 : 0);
            attempt.push_back(request(kind, cpuKey, cpus));
            std::vector<Json> objects;
            for (const auto& claim : claims)
                objects.push_back(claim.object);
            objects.push_back(claimObject("singles", singlesUid, attempt, false));
            if (const auto allocated = allocate(objects)) {
                requests = attempt;
                singles = allocated->back();
            }
        }
        if (singles)
            claims.push_back({"singles", singlesUid, *singles});
        ASSERT_FALSE(claims.empty()) << "nothing on this machine can be allocated";

        // Stored as the scheduler would: the claim with status.allocation.
        for (const auto& claim : claims) {
            ASSERT_EQ(api->putClaim(claim.object), "ok");
        }
        std::string text;
        for (const auto& claim : claims) {
            text += (text.empty() ? "" : "; ") + claim.name + " {";
            std::string devices;
            for (const auto& result : claim.results()) {
                devices += (devices.empty() ? "" : ", ") + result["request"].get<std::string>() +
                           ":" + result["device"].get<std::string>();
                if (result.contains("consumedCapacity"))
                    devices += "(" + result["consumedCapacity"].dump() + ")";
            }
            text += devices + "}";
        }
        if (!colocated)
            text += "; no NUMA co-placement possible on this machine (dra-allocate agrees)";
        note("4 claims", text);
    }

    drav1::NodePrepareResourcesResponse prepareV1(const std::vector<const TestClaim*>& which,
                                                  grpc::Status* status = nullptr,
                                                  std::chrono::milliseconds timeout = 45s) {
        auto stub = drav1::DRAPlugin::NewStub(channelTo(draSocket()));
        drav1::NodePrepareResourcesRequest request;
        for (const auto* claim : which)
            *request.add_claims() = claimRef<drav1::Claim>(claim->name, claim->uid);
        drav1::NodePrepareResourcesResponse response;
        grpc::ClientContext context;
        setDeadline(context, timeout);
        const auto rpc = stub->NodePrepareResources(&context, request, &response);
        if (status != nullptr)
            *status = rpc;
        else
            EXPECT_TRUE(rpc.ok()) << rpc.error_message();
        return response;
    }

    std::vector<const TestClaim*> allClaims() const {
        std::vector<const TestClaim*> out;
        for (const auto& claim : claims)
            out.push_back(&claim);
        return out;
    }

    // The CDI devices a runtime would find in the CDI folder: "vendor/class=name" -> device.
    std::map<std::string, Json> cdiDevices() const {
        std::map<std::string, Json> out;
        for (const auto& [file, content] : filesBelow(cdiDir())) {
            const Json spec = Json::parse(content);
            for (const auto& device : spec["devices"]) {
                const std::string id =
                    spec["kind"].get<std::string>() + "=" + device["name"].get<std::string>();
                EXPECT_EQ(out.count(id), 0u) << id << " defined twice";
                out[id] = device;
            }
        }
        return out;
    }

    void checkClaimAnswer(const TestClaim& claim, const drav1::NodePrepareResourceResponse& answer,
                          const std::map<std::string, Json>& cdi) {
        SCOPED_TRACE("claim " + claim.name);
        ASSERT_EQ(answer.error(), "");
        const Json results = claim.results();
        ASSERT_EQ(static_cast<size_t>(answer.devices_size()), results.size());
        std::set<std::string> requestsSeen;
        std::set<int> cpusHandedOut;
        for (const auto& result : results) {
            const std::string request = result["request"], device = result["device"];
            const std::string share = result.value("shareID", "");
            SCOPED_TRACE(request + ":" + device);
            const drav1::Device* prepared = nullptr;
            for (const auto& candidate : answer.devices()) {
                if (candidate.device_name() == device &&
                    (share.empty() || candidate.share_id() == share))
                    prepared = &candidate;
            }
            ASSERT_NE(prepared, nullptr);
            EXPECT_EQ(prepared->pool_name(), kNode);
            ASSERT_EQ(prepared->request_names_size(), 1);
            EXPECT_EQ(prepared->request_names(0), request);
            EXPECT_EQ(prepared->has_share_id(), !share.empty());
            // A CDI device per allocated device, named after the claim UID, then the claim's
            // NVIDIA control-node device for a GPU bound to nvidia, then the request's metadata
            // device on its first device.
            const std::string claimId = std::string(kDriver) + "/claim=" + claim.uid + "-" +
                                        device + (share.empty() ? "" : "-" + share);
            const std::string metadataId =
                std::string(kDriver) + "/metadata=" + claim.uid + "_" + request;
            std::vector<std::string> expected{claimId};
            if (stringAttribute(published.at(device), "vendorID") == "0x10de" &&
                stringAttribute(published.at(device), "kernelDriver") == "nvidia") {
                expected.push_back(std::string(kDriver) + "/claim=" + claim.uid +
                                   "-nvidia-control");
            }
            if (requestsSeen.insert(request).second)
                expected.push_back(metadataId);
            EXPECT_EQ(std::vector<std::string>(prepared->cdi_device_ids().begin(),
                                               prepared->cdi_device_ids().end()),
                      expected);
            for (const auto& id : prepared->cdi_device_ids()) {
                EXPECT_EQ(cdi.count(id), 1u) << id << " is not defined by any CDI spec";
            }
            if (cdi.count(claimId) == 0)
                continue;

            // What the container gets matches what was published for the device.
            const Json& edits = cdi.at(claimId)["containerEdits"];
            std::map<std::string, std::string> env;
            for (const auto& variable : edits.value("env", Json::array())) {
                const std::string text = variable;
                env[text.substr(0, text.find('='))] = text.substr(text.find('=') + 1);
            }
            const Json& own = published.at(device);
            std::string prefix = "NUMADRA_" + device + "_";
            if (!share.empty())
                prefix += share + "_";
            std::transform(prefix.begin(), prefix.end(), prefix.begin(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c))
                           ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                           : '_';
            });
            const auto numa = numaValues(own);
            if (classOf(own) == "cpu") {
                ASSERT_EQ(env.count(prefix + "CPUS"), 1u) << edits.dump();
                const auto cpus = parseCpuList(env[prefix + "CPUS"]);
                const std::string asked = result.value("consumedCapacity", Json::object())
                                              .value(cpuCapacity().first, std::string("1"));
                EXPECT_EQ(cpus.size(), static_cast<size_t>(parseInteger(asked).value_or(1)));
                if (!stringAttribute(own, "cpus").empty()) {
                    const auto allowed = parseCpuList(stringAttribute(own, "cpus"));
                    EXPECT_TRUE(
                        std::includes(allowed.begin(), allowed.end(), cpus.begin(), cpus.end()))
                        << env[prefix + "CPUS"] << " not within " << stringAttribute(own, "cpus");
                }
                for (int cpu : cpus) {
                    EXPECT_TRUE(cpusHandedOut.insert(cpu).second) << "CPU " << cpu << " twice";
                }
                if (!numa.empty()) {
                    EXPECT_EQ(env[prefix + "NUMA_NODE"], std::to_string(*numa.begin()));
                }
            } else {
                if (own["attributes"].contains(kPciBusId)) {
                    EXPECT_EQ(env[prefix + "PCI_BUS_ID"], own["attributes"][kPciBusId]["string"]);
                }
                if (own["attributes"].contains(kPcieRoot)) {
                    EXPECT_EQ(env[prefix + "PCIE_ROOT"], own["attributes"][kPcieRoot]["string"]);
                }
                if (own["attributes"].contains(kNumaNode)) {
                    const Json& attribute = own["attributes"][kNumaNode];
                    EXPECT_EQ(env[prefix + "NUMA_NODE"],
                              std::to_string((attribute.contains("int") ? attribute["int"]
                                                                        : attribute["ints"][0])
                                                 .get<std::int64_t>()));
                }
                if (!stringAttribute(own, "ifName").empty()) {
                    EXPECT_EQ(env[prefix + "INTERFACE"], stringAttribute(own, "ifName"));
                }
            }
            // Device nodes are the host's (the mocked /dev), with their real numbers.
            for (const auto& node : edits.value("deviceNodes", Json::array())) {
                const std::string path = node["path"];
                ASSERT_EQ(path.rfind("/dev/", 0), 0u) << path;
                struct stat info {};
                ASSERT_EQ(::stat((dev.root + path.substr(4)).c_str(), &info), 0) << path;
                EXPECT_EQ(node.value("type", ""), "c");
                EXPECT_EQ(node["major"], Json(major(info.st_rdev))) << path;
                EXPECT_EQ(node["minor"], Json(minor(info.st_rdev))) << path;
            }
        }
    }

    void checkMetadata(const TestClaim& claim, const std::map<std::string, Json>& cdi) {
        SCOPED_TRACE("metadata of claim " + claim.name);
        for (const auto& request : claim.requests()) {
            SCOPED_TRACE("request " + request);
            const fs::path file = fs::path(metadataDir()) /
                                  (std::string(kNamespace) + "_" + claim.name) / request /
                                  "metadata.json";
            ASSERT_TRUE(fs::is_regular_file(file)) << file;
            const auto objects = parseJsonStream(readFile(file));
            ASSERT_EQ(objects.size(), profile.metadataVersions.size());
            for (size_t i = 0; i < objects.size(); ++i) {
                const Json& object = objects[i];
                EXPECT_EQ(object["apiVersion"],
                          "metadata.resource.k8s.io/" + profile.metadataVersions[i]);
                EXPECT_EQ(object["kind"], "DeviceMetadata");
                EXPECT_EQ(object["metadata"]["name"], claim.name);
                EXPECT_EQ(object["metadata"]["namespace"], kNamespace);
                EXPECT_EQ(object["metadata"]["uid"], claim.uid);
                EXPECT_EQ(object["metadata"]["generation"], 1);
                ASSERT_EQ(object["requests"].size(), 1u);
                EXPECT_EQ(object["requests"][0]["name"], request);
                std::vector<std::string> expected, actual;
                for (const auto& result : claim.results()) {
                    if (result["request"] == request)
                        expected.push_back(result["device"]);
                }
                for (const auto& device : object["requests"][0].value("devices", Json::array())) {
                    const std::string name = device["name"];
                    actual.push_back(name);
                    EXPECT_EQ(device["driver"], kDriver);
                    EXPECT_EQ(device["pool"], kNode);
                    ASSERT_EQ(published.count(name), 1u);
                    Json attributes = device.value("attributes", Json::object());
                    const Json& own = published.at(name);
                    if (isVf(own) && own.value("allowMultipleAllocations", false)) {
                        // A VF pool's share: the metadata names the VF the driver chose, one of
                        // the pool's PF's VFs.
                        ASSERT_TRUE(attributes.contains(kPciBusId)) << name;
                        const std::string vf = attributes[kPciBusId]["string"];
                        const fs::path physfn = fs::path(sys()) / "bus/pci/devices" / vf / "physfn";
                        EXPECT_EQ(fs::canonical(physfn).filename().string(),
                                  stringAttribute(own, "pfPciBusID"))
                            << name << " got " << vf;
                        attributes.erase(kPciBusId);
                    }
                    EXPECT_EQ(attributes, own.value("attributes", Json::object())) << name;
                    const std::string ifName = stringAttribute(published.at(name), "ifName");
                    if (!ifName.empty()) {
                        EXPECT_EQ(device["networkData"]["interfaceName"], ifName) << name;
                    }
                }
                std::sort(expected.begin(), expected.end());
                std::sort(actual.begin(), actual.end());
                EXPECT_EQ(actual, expected);
            }
            // Its CDI device bind-mounts it read-only where workloads look for it.
            const std::string id = std::string(kDriver) + "/metadata=" + claim.uid + "_" + request;
            ASSERT_EQ(cdi.count(id), 1u) << id;
            const Json mounts = cdi.at(id)["containerEdits"].value("mounts", Json::array());
            ASSERT_EQ(mounts.size(), 1u);
            EXPECT_EQ(mounts[0]["hostPath"], file.string());
            EXPECT_EQ(mounts[0]["containerPath"],
                      "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/" + claim.name +
                          "/" + request + "/" + kDriver + "-metadata.json");
            const auto options = mounts[0].value("options", std::vector<std::string>());
            EXPECT_NE(std::find(options.begin(), options.end(), "ro"), options.end());
            EXPECT_NE(std::find(options.begin(), options.end(), "bind"), options.end());
        }
    }

    // The official CDI library (tests/cdi-check) judges every spec the daemon wrote, as a
    // runtime's cache reads them, and resolves every CDI id the daemon returned. Returns what the
    // report says.
    std::string judgeWithCdiLibrary(const drav1::NodePrepareResourcesResponse& response) {
        const std::string cdiCheck = binary("cdi-check");
        if (!fs::exists(cdiCheck))
            return numadra::testing::skippedUnlessCi("CDI library check",
                                                     "no " + cdiCheck + ": Go was not found");
        std::vector<std::string> validate{cdiCheck, "validate", "--expect-minimum-version"};
        for (const auto& [file, content] : filesBelow(cdiDir()))
            validate.push_back(cdiDir() + "/" + file);
        if (validate.size() == 3) {
            ADD_FAILURE() << "no CDI spec written";
            return "no CDI spec";
        }
        const auto validated = runCommand(validate, "", dirs.path("scratch"), 120s);
        EXPECT_EQ(validated.status, 0) << validated.out << validated.err;
        std::vector<std::string> resolve{cdiCheck,     "resolve",
                                         "--spec-dir", cdiDir(),
                                         "--output",   dirs.path("scratch") + "/oci-spec.json"};
        size_t ids = 0;
        for (const auto& [uid, answer] : response.claims()) {
            for (const auto& device : answer.devices()) {
                for (const auto& id : device.cdi_device_ids()) {
                    resolve.push_back(id);
                    ++ids;
                }
            }
        }
        const auto resolved = runCommand(resolve, "", dirs.path("scratch"), 120s);
        EXPECT_EQ(resolved.status, 0) << resolved.out << resolved.err;
        return std::to_string(validate.size() - 3) +
               " CDI specs pass the CDI library at their minimum cdiVersion, " +
               std::to_string(ids) + " CDI ids resolve";
    }

    // A real container runtime given each claim's CDI ids, as a pod's container would be: inside,
    // the environment, device nodes and read-only metadata files of the claim's CDI devices.
    // Returns what the report says.
    std::string checkInContainers(const drav1::NodePrepareResourcesResponse& response,
                                  const std::map<std::string, Json>& cdi) {
        if (const char* wanted = std::getenv("NUMADRA_CONFORMANCE_CONTAINERS");
            wanted != nullptr && std::string(wanted) == "0")
            return "containers not run (NUMADRA_CONFORMANCE_CONTAINERS=0)";
        if (const auto& reason = ContainerRuntime::unavailable())
            return numadra::testing::skippedUnlessCi("containers", *reason);
        for (const auto& claim : claims)
            checkClaimInContainer(claim, response.claims().at(claim.uid), cdi);
        return std::to_string(claims.size()) +
               " podman containers see each claim's env, device nodes and read-only metadata";
    }

    void checkClaimInContainer(const TestClaim& claim,
                               const drav1::NodePrepareResourceResponse& answer,
                               const std::map<std::string, Json>& cdi) {
        {
            SCOPED_TRACE("container for claim " + claim.name);
            std::vector<std::string> ids;
            for (const auto& device : answer.devices()) {
                for (const auto& id : device.cdi_device_ids()) {
                    if (std::find(ids.begin(), ids.end(), id) == ids.end())
                        ids.push_back(id);
                }
            }
            std::map<std::string, std::string> env;
            std::map<std::string, std::pair<unsigned, unsigned>> nodes;
            std::map<std::string, std::string> files;  // container path -> host path
            for (const auto& id : ids) {
                ASSERT_EQ(cdi.count(id), 1u) << id;
                const Json edits = cdi.at(id).value("containerEdits", Json::object());
                for (const std::string variable : edits.value("env", Json::array()))
                    env[variable.substr(0, variable.find('='))] =
                        variable.substr(variable.find('=') + 1);
                for (const auto& node : edits.value("deviceNodes", Json::array()))
                    nodes[node["path"]] = {node["major"].get<unsigned>(),
                                           node["minor"].get<unsigned>()};
                for (const auto& mount : edits.value("mounts", Json::array()))
                    files[mount["containerPath"]] = mount["hostPath"];
            }
            std::vector<std::string> nodePaths, filePaths;
            for (const auto& [path, numbers] : nodes)
                nodePaths.push_back(path);
            for (const auto& [path, host] : files)
                filePaths.push_back(path);
            auto view = ContainerRuntime::inspect(cdiDir(), ids, nodePaths, filePaths,
                                                  dirs.path("scratch"));
            ASSERT_TRUE(view.ok()) << view.error().message;
            for (const auto& [name, value] : env)
                EXPECT_EQ(view->env[name], value) << "env " << name;
            for (const auto& [path, numbers] : nodes) {
                const auto seen = view->deviceNodes.find(path);
                ASSERT_NE(seen, view->deviceNodes.end()) << path;
                EXPECT_EQ(seen->second.type, "character special file") << path;
                EXPECT_EQ(seen->second.major, numbers.first) << path;
                EXPECT_EQ(seen->second.minor, numbers.second) << path;
            }
            for (const auto& [path, host] : files) {
                const auto& seen = view->files[path];
                EXPECT_NE(std::find(seen.options.begin(), seen.options.end(), "ro"),
                          seen.options.end())
                    << path << " is not mounted read-only";
                EXPECT_FALSE(seen.writable) << path;
                std::string expected = readFile(host);
                while (!expected.empty() && expected.back() == '\n')
                    expected.pop_back();
                EXPECT_EQ(seen.content, expected) << path;
            }
        }
    }

    void prepareAndCheck() {
        const auto response = prepareV1(allClaims());
        const auto cdi = cdiDevices();
        size_t devices = 0;
        for (const auto& claim : claims) {
            ASSERT_EQ(response.claims().count(claim.uid), 1u) << claim.name;
            const auto& answer = response.claims().at(claim.uid);
            checkClaimAnswer(claim, answer, cdi);
            checkMetadata(claim, cdi);
            answers[claim.uid] = answer.DebugString();
            devices += static_cast<size_t>(answer.devices_size());
            EXPECT_TRUE(
                fs::is_regular_file(fs::path(stateDir()) / "checkpoints" / (claim.uid + ".json")));
        }
        // Every CDI device belongs to a prepared claim.
        for (const auto& entry : cdi) {
            const std::string& id = entry.first;
            EXPECT_TRUE(std::any_of(claims.begin(), claims.end(), [&](const TestClaim& claim) {
                return id.find(claim.uid) != std::string::npos;
            })) << id;
        }
        const std::string cdiLibrary = judgeWithCdiLibrary(response);
        const std::string containers = checkInContainers(response, cdi);

        // The kubelet may use v1beta1 instead: the same devices (without share IDs).
        {
            auto stub = drav1beta1::DRAPlugin::NewStub(channelTo(draSocket()));
            drav1beta1::NodePrepareResourcesRequest request;
            for (const auto& claim : claims)
                *request.add_claims() = claimRef<drav1beta1::Claim>(claim.name, claim.uid);
            drav1beta1::NodePrepareResourcesResponse beta;
            grpc::ClientContext context;
            setDeadline(context, 45s);
            ASSERT_TRUE(stub->NodePrepareResources(&context, request, &beta).ok());
            for (const auto& claim : claims) {
                const auto& v1 = response.claims().at(claim.uid);
                const auto& other = beta.claims().at(claim.uid);
                EXPECT_EQ(other.error(), "");
                ASSERT_EQ(other.devices_size(), v1.devices_size());
                for (int i = 0; i < v1.devices_size(); ++i) {
                    EXPECT_EQ(other.devices(i).device_name(), v1.devices(i).device_name());
                    EXPECT_EQ(other.devices(i).pool_name(), v1.devices(i).pool_name());
                    EXPECT_EQ(other.devices(i).request_names(0), v1.devices(i).request_names(0));
                    EXPECT_EQ(std::vector<std::string>(other.devices(i).cdi_device_ids().begin(),
                                                       other.devices(i).cdi_device_ids().end()),
                              std::vector<std::string>(v1.devices(i).cdi_device_ids().begin(),
                                                       v1.devices(i).cdi_device_ids().end()));
                }
            }
        }

        // A claim that is not allocated is a per-claim error, and nothing is written for it.
        TestClaim pending{"pending", "c0c0c0c0-0000-4000-8000-0000000000ff",
                          claimObject("pending", "c0c0c0c0-0000-4000-8000-0000000000ff",
                                      Json::array({request("cpu")}), false)};
        ASSERT_EQ(api->putClaim(pending.object), "ok");
        const auto cdiBefore = entriesBelow(cdiDir());
        const auto refused = prepareV1({&pending});
        ASSERT_EQ(refused.claims().count(pending.uid), 1u);
        EXPECT_NE(refused.claims().at(pending.uid).error(), "");
        EXPECT_EQ(entriesBelow(cdiDir()), cdiBefore);
        EXPECT_FALSE(fs::exists(fs::path(metadataDir()) / (std::string(kNamespace) + "_pending")));

        for (const auto& claim : claims)
            filesOfClaim[claim.uid] = claimFiles(claim);
        note("4 prepare", std::to_string(claims.size()) + " claims, " + std::to_string(devices) +
                              " devices: " + cdiLibrary + ", metadata (" +
                              std::to_string(profile.metadataVersions.size()) +
                              " versions) matches the slices; " + containers +
                              "; v1beta1 agrees; an unallocated claim is refused");
    }

    // The files a claim owns (CDI specs, metadata), with content.
    std::vector<std::pair<std::string, std::string>> claimFiles(const TestClaim& claim) const {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& [file, content] : filesBelow(cdiDir())) {
            if (file.find(claim.uid) != std::string::npos)
                out.emplace_back("cdi/" + file, content);
        }
        const fs::path folder =
            fs::path(metadataDir()) / (std::string(kNamespace) + "_" + claim.name);
        for (const auto& [file, content] : filesBelow(folder))
            out.emplace_back("metadata/" + file, content);
        return out;
    }

    // ---- step 5
    // ----------------------------------------------------------------------------------

    std::optional<Json> publishedDevice(const std::string& name) {
        publishedSlices(5s);
        const auto found = published.find(name);
        return found == published.end() ? std::nullopt : std::optional<Json>(found->second);
    }

    // Does the device carry our taint for `cause`? Read from the one slice that held it (cheap,
    // so a short-lived taint is not missed on a big machine), else from a full listing.
    bool taintedWith(const std::string& name, const std::string& cause) {
        std::optional<Json> device;
        if (const auto slice = sliceOf.find(name); slice != sliceOf.end()) {
            const auto response =
                api->get("/apis/resource.k8s.io/v1/resourceslices/" + slice->second);
            if (response) {
                for (const auto& candidate : (*response)["spec"].value("devices", Json::array())) {
                    if (candidate["name"] == name)
                        device = candidate;
                }
            }
        }
        if (!device)
            device = publishedDevice(name);
        if (!device || !device->contains("taints"))
            return false;
        for (const auto& taint : (*device)["taints"]) {
            if (taint["key"] == kTaintKey && taint["value"] == cause &&
                taint["effect"] == "NoSchedule")
                return true;
        }
        return false;
    }

    std::set<std::string> preparedDevices() const {
        std::set<std::string> out;
        for (const auto& claim : claims) {
            for (const auto& result : claim.results())
                out.insert(result["device"].get<std::string>());
        }
        return out;
    }

    // The PCI function folder of a published device in the copied tree.
    fs::path functionOf(const std::string& device) const {
        return fs::path(sys()) / "bus/pci/devices" / addressOf(device);
    }

    void health() {
        // v1alpha1 (what 1.34-1.36 kubelets open): a full snapshot at once, every published
        // device, unhealthy exactly when tainted.
        std::map<std::string, bool> healthy;
        {
            auto stub = ::v1alpha1::DRAResourceHealth::NewStub(channelTo(draSocket()));
            HealthWatch<decltype(*stub), ::v1alpha1::NodeWatchResourcesResponse> watch(*stub);
            ::v1alpha1::NodeWatchResourcesResponse first;
            ASSERT_TRUE(watch.readUntil([](const auto&) { return true; }, 60s, &first));
            publishedSlices();
            ASSERT_EQ(static_cast<size_t>(first.devices_size()), published.size());
            for (const auto& entry : first.devices()) {
                const std::string name = entry.device().device_name();
                SCOPED_TRACE(name);
                EXPECT_EQ(entry.device().pool_name(), kNode);
                ASSERT_EQ(published.count(name), 1u);
                EXPECT_EQ(entry.health() == ::v1alpha1::UNHEALTHY, tainted(published.at(name)))
                    << entry.message();
                EXPECT_NE(entry.health(), ::v1alpha1::UNKNOWN);
                EXPECT_EQ(entry.health_check_timeout_seconds(), 30);
                healthy[name] = entry.health() == ::v1alpha1::HEALTHY;
            }
        }

        // The faults, on a prepared device when one has the files (a kubelet cares about those).
        const auto prepared = preparedDevices();
        auto isPci = [&](const std::string& name) {
            const std::string kind = classOf(published.at(name));
            return (kind == "gpu" || kind == "nic") && !addressOf(name).empty() &&
                   fs::exists(functionOf(name));
        };
        auto pick = [&](auto&& usable) -> std::string {
            for (bool wantPrepared : {true, false}) {
                for (const auto& [name, device] : published) {
                    if (healthy[name] && isPci(name) && prepared.count(name) == wantPrepared &&
                        !isVf(device) && usable(name))
                        return name;
                }
            }
            return "";
        };
        const std::string linkTarget = pick([&](const std::string& name) {
            const auto max = parseInteger(readFile(functionOf(name) / "max_link_width"));
            const auto current = parseInteger(readFile(functionOf(name) / "current_link_width"));
            return max && current && *max > 1 && *current == *max;
        });
        const std::string aerTarget = pick([&](const std::string& name) {
            return readFile(functionOf(name) / "aer_dev_nonfatal").find("TOTAL_ERR_NONFATAL") !=
                   std::string::npos;
        });
        // Removal: preferably a device no claim holds; never an SR-IOV PF (its VFs would go too).
        // Prepared devices come last: a hot-unplugged device a pod holds is a real case too.
        const std::string removalTarget = [&]() -> std::string {
            for (bool wantPrepared : {false, true}) {
                for (const auto& [name, device] : published) {
                    if (healthy[name] && isPci(name) && prepared.count(name) == wantPrepared &&
                        !isVf(device) && stringAttribute(device, "sriovRole").empty())
                        return name;
                }
            }
            return "";
        }();

        auto stub = ::v1::DRAResourceHealth::NewStub(channelTo(draSocket()));
        using Response = ::v1::NodeWatchResourcesResponse;
        HealthWatch<decltype(*stub), Response> watch(*stub);
        auto reported = [&](const std::string& device, ::v1::HealthStatus state,
                            std::string* message = nullptr) {
            Response seen;
            const bool ok = watch.readUntil(
                [&](const Response& r) {
                    const auto* entry = healthOf(r, device);
                    return entry && entry->health() == state;
                },
                60s, &seen);
            if (ok && message != nullptr)
                *message = healthOf(seen, device)->message();
            return ok;
        };
        std::vector<std::string> done;

        if (!linkTarget.empty()) {
            SCOPED_TRACE("link of " + linkTarget);
            const fs::path file = functionOf(linkTarget) / "current_link_width";
            const std::string original = readFile(file);
            writeFile(file, "1\n");
            std::string message;
            EXPECT_TRUE(reported(linkTarget, ::v1::UNHEALTHY, &message));
            EXPECT_NE(message.find("link"), std::string::npos) << message;
            EXPECT_TRUE(
                eventually([&] { return taintedWith(linkTarget, "link-degraded"); }, 60s, 200ms));
            writeFile(file, original);
            EXPECT_TRUE(reported(linkTarget, ::v1::HEALTHY));
            EXPECT_TRUE(eventually(
                [&] {
                    const auto device = publishedDevice(linkTarget);
                    return device && !tainted(*device);
                },
                60s, 200ms));
            done.push_back("link x1 on " + linkTarget);
        }
        if (!aerTarget.empty()) {
            SCOPED_TRACE("AER of " + aerTarget);
            const fs::path file = functionOf(aerTarget) / "aer_dev_nonfatal";
            std::string content = readFile(file);
            const size_t at = content.find("TOTAL_ERR_NONFATAL");
            const size_t valueAt = content.find(' ', at) + 1;
            const size_t end = content.find('\n', valueAt);
            const auto count = parseInteger(content.substr(valueAt, end - valueAt)).value_or(0);
            content.replace(valueAt, end - valueAt, std::to_string(count + 2));
            writeFile(file, content);
            std::string message;
            EXPECT_TRUE(reported(aerTarget, ::v1::UNHEALTHY, &message));
            EXPECT_NE(message.find("AER"), std::string::npos) << message;
            EXPECT_TRUE(
                eventually([&] { return taintedWith(aerTarget, "aer-nonfatal"); }, 60s, 200ms));
            // No new error for --health-aer-recovery: healthy again.
            EXPECT_TRUE(reported(aerTarget, ::v1::HEALTHY));
            EXPECT_TRUE(eventually(
                [&] {
                    const auto device = publishedDevice(aerTarget);
                    return device && !tainted(*device);
                },
                60s, 200ms));
            done.push_back("AER non-fatal on " + aerTarget);
        }
        if (!removalTarget.empty()) {
            SCOPED_TRACE("removal of " + removalTarget);
            const fs::path function = fs::canonical(functionOf(removalTarget));
            const fs::path parked = dirs.path("removed/function");
            fs::rename(function, parked);
            std::string message;
            EXPECT_TRUE(reported(removalTarget, ::v1::UNHEALTHY, &message));
            EXPECT_FALSE(message.empty());
            // Tainted "removed" until the next scan drops it from the slices.
            bool taintSeen = false;
            EXPECT_TRUE(eventually(
                [&] {
                    taintSeen = taintSeen || taintedWith(removalTarget, "removed");
                    return taintSeen || (completePool(publishedSlices(1s)) &&
                                         published.count(removalTarget) == 0);
                },
                60s, 200ms));
            fs::rename(parked, function);
            EXPECT_TRUE(reported(removalTarget, ::v1::HEALTHY));
            EXPECT_TRUE(eventually(
                [&] {
                    const auto device = publishedDevice(removalTarget);
                    return device && !tainted(*device);
                },
                60s, 200ms));
            done.push_back("removal of " + removalTarget +
                           (taintSeen ? "" : " (dropped from the slices before a taint was seen)"));
        }
        // Back to the start: the slices are numa-probe's again.
        EXPECT_TRUE(eventually(
            [&] {
                publishedSlices(1s);
                for (const auto& reference : referenceDevices) {
                    const auto found = published.find(reference["name"]);
                    if (found == published.end() || withoutTaints(found->second) != reference)
                        return false;
                }
                return published.size() == referenceDevices.size();
            },
            60s, 200ms));
        std::string text = "v1alpha1 snapshot of " + std::to_string(healthy.size()) +
                           " devices agrees with the taints; v1: ";
        for (const auto& fault : done)
            text += fault + " -> UNHEALTHY + taint -> HEALTHY; ";
        if (done.empty())
            text += "no PCI device to break on this machine";
        note("5 health", text);
    }

    // ---- step 6
    // ----------------------------------------------------------------------------------

    void waitUntilServing() {
        ASSERT_TRUE(eventually(
            [&] {
                if (!daemon->running())
                    return true;
                if (!fs::is_socket(draSocket()) || registrationSockets().empty())
                    return false;
                auto stub = drav1::DRAPlugin::NewStub(channelTo(draSocket()));
                grpc::ClientContext context;
                setDeadline(context, 2s);
                drav1::NodePrepareResourcesResponse response;
                return stub->NodePrepareResources(&context, {}, &response).ok();
            },
            30s));
        ASSERT_TRUE(daemon->running()) << "exited with " << *daemon->exitStatus();
        // The kubelet registers the new instance. The killed one's registration socket file
        // stays until the new one replaces it (after its DRA socket): retried, as the kubelet's
        // plugin watcher does.
        pluginregistration::PluginInfo info;
        EXPECT_TRUE(eventually(
            [&] {
                info.Clear();
                return tryGetInfo(registrationSocket(), info, 2s).ok();
            },
            30s, 100ms));
        EXPECT_EQ(info.endpoint(), draSocket());
    }

    void crashAndRestart() {
        const auto cdiBefore = filesBelow(cdiDir());
        const auto metadataBefore = filesBelow(metadataDir());
        const std::string claimPath =
            std::string("/apis/resource.k8s.io/v1/namespaces/") + kNamespace + "/resourceclaims/";

        // SIGKILL with everything prepared, restart: the same answers, from the checkpoint (no
        // GET of the claims), and the same files.
        daemon->signal(SIGKILL);
        ASSERT_EQ(daemon->wait(30s), 128 + SIGKILL);
        startDaemon();
        ASSERT_NO_FATAL_FAILURE(waitUntilServing());
        const int getsBefore = api->requestCount("GET", claimPath);
        EXPECT_GE(getsBefore, static_cast<int>(claims.size()))
            << "the first Prepare did not GET the claims from " << claimPath;
        const auto again = prepareV1(allClaims());
        for (const auto& claim : claims) {
            ASSERT_EQ(again.claims().count(claim.uid), 1u);
            EXPECT_EQ(again.claims().at(claim.uid).DebugString(), answers[claim.uid]) << claim.name;
        }
        EXPECT_EQ(api->requestCount("GET", claimPath), getsBefore)
            << "a claim prepared before the crash was fetched again";
        EXPECT_EQ(filesBelow(cdiDir()), cdiBefore);
        EXPECT_EQ(filesBelow(metadataDir()), metadataBefore);

        // A SIGKILL in the middle of a Prepare: the first claim is unprepared, then prepared
        // again by a daemon that dies after a few of the files it writes; once restarted, the
        // kubelet's retry gets the answer of an uninterrupted run.
        const TestClaim& claim = claims.front();
        {
            auto stub = drav1::DRAPlugin::NewStub(channelTo(draSocket()));
            drav1::NodeUnprepareResourcesRequest request;
            *request.add_claims() = claimRef<drav1::Claim>(claim.name, claim.uid);
            drav1::NodeUnprepareResourcesResponse response;
            grpc::ClientContext context;
            setDeadline(context, 45s);
            ASSERT_TRUE(stub->NodeUnprepareResources(&context, request, &response).ok());
            EXPECT_EQ(response.claims().at(claim.uid).error(), "");
        }
        EXPECT_TRUE(claimFiles(claim).empty());
        daemon->signal(SIGKILL);
        ASSERT_EQ(daemon->wait(30s), 128 + SIGKILL);
        // per request a metadata file, then their CDI specs, the claim's spec, the record: this
        // kills after the first metadata CDI spec.
        const int killAfter = 1 + static_cast<int>(claim.requests().size());
        startDaemon({"NUMADRA_TEST_KILL_AFTER_WRITES=" + std::to_string(killAfter)},
                    "numa-dra-plugin-faults");
        ASSERT_NO_FATAL_FAILURE(waitUntilServing());
        grpc::Status status;
        prepareV1({&claim}, &status);
        EXPECT_FALSE(status.ok()) << "the daemon answered instead of dying mid-way";
        ASSERT_EQ(daemon->wait(30s), 128 + SIGKILL);
        EXPECT_FALSE(claimFiles(claim).empty()) << "nothing was written before the kill";
        startDaemon();
        ASSERT_NO_FATAL_FAILURE(waitUntilServing());
        const auto retried = prepareV1({&claim});
        ASSERT_EQ(retried.claims().count(claim.uid), 1u);
        EXPECT_EQ(retried.claims().at(claim.uid).DebugString(), answers[claim.uid]);
        EXPECT_EQ(claimFiles(claim), filesOfClaim[claim.uid]);
        for (const auto& other : claims) {
            EXPECT_EQ(claimFiles(other), filesOfClaim[other.uid]) << other.name;
        }

        // Unprepare everything (twice: it is idempotent): every folder is empty.
        for (int round = 0; round < 2; ++round) {
            auto stub = drav1::DRAPlugin::NewStub(channelTo(draSocket()));
            drav1::NodeUnprepareResourcesRequest request;
            for (const auto& c : claims)
                *request.add_claims() = claimRef<drav1::Claim>(c.name, c.uid);
            drav1::NodeUnprepareResourcesResponse response;
            grpc::ClientContext context;
            setDeadline(context, 45s);
            ASSERT_TRUE(stub->NodeUnprepareResources(&context, request, &response).ok());
            for (const auto& c : claims) {
                EXPECT_EQ(response.claims().at(c.uid).error(), "") << c.name;
            }
        }
        EXPECT_EQ(entriesBelow(cdiDir()), std::vector<std::string>{});
        EXPECT_EQ(entriesBelow(metadataDir()), std::vector<std::string>{});
        EXPECT_EQ(entriesBelow(fs::path(stateDir()) / "checkpoints"), std::vector<std::string>{});
        EXPECT_EQ(entriesBelow(fs::path(stateDir()) / "quarantine"), std::vector<std::string>{});
        note("6 crash", "SIGKILL + restart: " + std::to_string(claims.size()) +
                            " claims answered identically from the checkpoint (no API GET), "
                            "files unchanged; SIGKILL after write " +
                            std::to_string(killAfter) + " of a Prepare of '" + claim.name +
                            "', retry identical; Unprepare x2 leaves cdi, metadata, "
                            "checkpoints empty");
    }

    // ---- step 7
    // ----------------------------------------------------------------------------------

    void terminate() {
        daemon->signal(SIGTERM);
        ASSERT_EQ(daemon->wait(30s), 0);
        EXPECT_EQ(entriesBelow(registryDir()), std::vector<std::string>{});
        std::vector<std::string> sockets;
        for (const auto& entry : entriesBelow(pluginsDir())) {
            if (fs::is_socket(fs::path(pluginsDir()) / entry))
                sockets.push_back(entry);
        }
        EXPECT_EQ(sockets, std::vector<std::string>{});
        const auto slices = api->slices();
        ASSERT_TRUE(slices.has_value());
        EXPECT_EQ(slices->size(), 0u);
        note("7 SIGTERM", "exit 0 after " + std::to_string(daemonRuns) +
                              " daemon runs; sockets and slices gone");
    }
};

TEST_P(Conformance, Driver) {
    SCOPED_TRACE(machine + " (" + profile.name + ")");
    ASSERT_NO_FATAL_FAILURE(startApiServerAndDaemon());
    ASSERT_NO_FATAL_FAILURE(registerAsKubelet());
    ASSERT_NO_FATAL_FAILURE(checkSlices());
    ASSERT_NO_FATAL_FAILURE(createAndAllocateClaims());
    ASSERT_NO_FATAL_FAILURE(prepareAndCheck());
    ASSERT_NO_FATAL_FAILURE(health());
    ASSERT_NO_FATAL_FAILURE(crashAndRestart());
    ASSERT_NO_FATAL_FAILURE(terminate());
}

INSTANTIATE_TEST_SUITE_P(Machines, Conformance, ::testing::ValuesIn(cases()), caseName);

}  // namespace
}  // namespace numadra::conformance
