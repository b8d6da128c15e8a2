// Health checks against copies of the mocked machines, changed on disk the way the kernel would.

#include "numadra/health/health.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "numadra/slices/builder.hpp"
#include "numadra/testing/health_changes.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::health {
namespace {

using namespace std::chrono_literals;
using numadra::testing::TempTree;

// A writable copy of a generated machine, with its discovered model and published devices.
class HealthTest : public ::testing::Test {
  protected:
    void load(const std::string& name, slices::VfLayout vfLayout = slices::VfLayout::Individual) {
        tree.copyFrom(numadra::testing::machineRoot(name));
        auto machine = discovery::discover({tree.root(), nullptr, nullptr});
        ASSERT_TRUE(machine) << machine.error().message;
        model = std::move(machine).value();
        slices::SliceOptions options;
        options.nodeName = "node-a";
        options.vfLayout = vfLayout;
        devices = slices::buildPoolContent(model, options).devices;
        watched = watchList(model, devices);
    }

    const WatchedDevice& device(const std::string& name) const {
        for (const auto& d : watched) {
            if (d.deviceName == name)
                return d;
        }
        throw std::runtime_error("no watched device " + name);
    }

    // Rewrites a file of the tree (through the symlinks the kernel's layout uses).
    void write(const std::string& relative, const std::string& content) const {
        std::ofstream(tree.path(relative), std::ios::trunc) << content;
    }

    // One round of checks, as the monitor makes them.
    DeviceHealth check(const std::string& name, Clock::time_point now = Clock::now()) {
        checker().beginRound();
        return checker().check(device(name), now);
    }

    Checker& checker() {
        if (!checker_)
            checker_ = std::make_unique<Checker>(discovery::Sysfs(tree.root()), policy);
        return *checker_;
    }

    TempTree tree;
    discovery::Machine model;
    std::vector<api::Device> devices;
    std::vector<WatchedDevice> watched;
    Policy policy;
    std::unique_ptr<Checker> checker_;
};

constexpr const char* kH100 = "gpu-0000-21-00-0";  // epyc-2s-nps4
constexpr const char* kCx7 = "nic-0000-c1-00-0";
const std::string kGpuPath = "devices/pci0000:20/0000:20:01.1/0000:21:00.0";

TEST_F(HealthTest, AWorkingDeviceIsHealthyWithAMessage) {
    load("epyc-2s-nps4");
    auto health = check(kH100);
    EXPECT_EQ(health.state, State::Healthy);
    EXPECT_EQ(health.message, "all checks passed");
    EXPECT_GT(health.checkedUnix, 0);
}

TEST_F(HealthTest, WatchListCoversEveryPublishedDevice) {
    load("sriov-nic");
    EXPECT_EQ(watched.size(), devices.size());
    const auto& vf = device("nic-0000-01-02-0");
    EXPECT_EQ(vf.pfAddress, "0000:01:00.0");
    ASSERT_EQ(vf.pfNetdevPaths.size(), 1U);
    EXPECT_NE(vf.pfNetdevPaths[0].find("ens1f0"), std::string::npos);
    EXPECT_EQ(device("cpu-numa-0").cpus.size(), 16U);
}

TEST_F(HealthTest, ANewFatalAerErrorMakesTheDeviceUnhealthy) {
    load("epyc-2s-nps4");
    ASSERT_EQ(check(kH100).state, State::Healthy);  // baseline
    write("bus/pci/devices/0000:21:00.0/aer_dev_fatal",
          "Undefined 0\nDLP 1\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\n"
          "RxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\n"
          "AtomicOpBlocked 0\nTLPBlockedErr 0\nPoisonTLPBlocked 0\nTOTAL_ERR_FATAL 1\n");
    auto health = check(kH100);
    EXPECT_EQ(health.state, State::Unhealthy);
    EXPECT_EQ(health.cause, "aer-fatal");
    EXPECT_NE(health.message.find("1 new fatal PCIe AER error(s)"), std::string::npos);
    EXPECT_NE(health.message.find(kGpuPath + "/aer_dev_fatal"), std::string::npos)
        << health.message;
}

TEST_F(HealthTest, ErrorsCountedBeforeTheFirstCheckAreHistory) {
    load("epyc-2s-nps4");
    write("bus/pci/devices/0000:21:00.0/aer_dev_nonfatal", "TOTAL_ERR_NONFATAL 7\n");
    EXPECT_EQ(check(kH100).state, State::Healthy);
}

TEST_F(HealthTest, AnUncorrectableErrorHealsAfterTheRecoveryTimeWithoutNewOnes) {
    load("epyc-2s-nps4");
    policy.aerRecovery = 60s;
    const auto start = Clock::now();
    check(kH100, start);
    write("bus/pci/devices/0000:21:00.0/aer_dev_nonfatal", "TOTAL_ERR_NONFATAL 2\n");
    EXPECT_EQ(check(kH100, start + 1s).cause, "aer-nonfatal");
    EXPECT_EQ(check(kH100, start + 50s).state, State::Unhealthy);
    EXPECT_EQ(check(kH100, start + 62s).state, State::Healthy);
}

TEST_F(HealthTest, ABurstOfCorrectableErrorsIsAWarning) {
    load("epyc-2s-nps4");
    policy.correctableBurstPerMinute = 10;
    const auto start = Clock::now();
    check(kH100, start);
    write("bus/pci/devices/0000:21:00.0/aer_dev_correctable", "RxErr 50\nTOTAL_ERR_COR 50\n");
    auto health = check(kH100, start + 10s);
    EXPECT_EQ(health.state, State::Healthy);
    EXPECT_NE(health.message.find("warning: more than 10 correctable PCIe AER errors within a "
                                  "minute"),
              std::string::npos)
        << health.message;
    EXPECT_EQ(check(kH100, start + 90s).message, "all checks passed");  // the burst is over
}

TEST_F(HealthTest, ANarrowerLinkIsUnhealthy) {
    load("gpu4-nic");  // GPU 3 trained at x8 of x16
    auto health = check("gpu-0000-ba-00-0");
    EXPECT_EQ(health.state, State::Unhealthy);
    EXPECT_EQ(health.cause, "link-degraded");
    EXPECT_NE(health.message.find("8.0 GT/s x8, capable of 32.0 GT/s x16"), std::string::npos)
        << health.message;
}

TEST_F(HealthTest, AGpuLinkRunningSlowerIsNoFaultUnlessAskedOtherwise) {
    load("epyc-2s-nps4");
    write("bus/pci/devices/0000:21:00.0/current_link_speed", "2.5 GT/s PCIe\n");
    EXPECT_EQ(check(kH100).message, "all checks passed");  // idle GPUs slow down
    policy.gpuLinkSpeedUnhealthy = true;
    checker_.reset();
    EXPECT_EQ(check(kH100).state, State::Unhealthy);
}

TEST_F(HealthTest, ALinkAsFastAsItsSlotAllowsIsHealthy) {
    load("epyc-2s-nps4");
    // A Gen5 x16 NIC in a Gen4 x8 slot: running at 16 GT/s x8 is all it can do.
    write("devices/pci0000:c0/0000:c0:01.1/max_link_speed", "16.0 GT/s PCIe\n");
    write("devices/pci0000:c0/0000:c0:01.1/max_link_width", "8\n");
    write("bus/pci/devices/0000:c1:00.0/current_link_speed", "16.0 GT/s PCIe\n");
    write("bus/pci/devices/0000:c1:00.0/current_link_width", "8\n");
    EXPECT_EQ(check(kCx7).state, State::Healthy) << check(kCx7).message;
}

TEST_F(HealthTest, ADeviceThatNoLongerAnswersIsUnhealthy) {
    load("epyc-2s-nps4");
    // Config reads return all ones: the kernel prints Unknown and width 63.
    write("bus/pci/devices/0000:21:00.0/current_link_speed", "Unknown\n");
    write("bus/pci/devices/0000:21:00.0/current_link_width", "63\n");
    auto health = check(kH100);
    EXPECT_EQ(health.cause, "link-down");
    EXPECT_NE(health.message.find("reads Unknown"), std::string::npos) << health.message;
}

TEST_F(HealthTest, ANicLinkRunningSlowerIsUnhealthy) {
    load("epyc-2s-nps4");
    write("bus/pci/devices/0000:c1:00.0/current_link_speed", "16.0 GT/s PCIe\n");
    EXPECT_EQ(check(kCx7).cause, "link-degraded");
}

TEST_F(HealthTest, ANicWhoseCarrierIsDownIsUnhealthy) {
    load("epyc-2s-nps4");
    write("class/net/ens5f0np0/operstate", "down\n");
    write("class/net/ens5f0np0/carrier", "0\n");
    auto health = check(kCx7);
    EXPECT_EQ(health.state, State::Unhealthy);
    EXPECT_EQ(health.cause, "carrier-down");
    EXPECT_NE(health.message.find("interface ens5f0np0 is down"), std::string::npos);
}

TEST_F(HealthTest, NulPaddedValuesReadAsTheirText) {
    // Some kernels leave NUL bytes after the newline (seen in node and cpu files of an ARM
    // server); a value is its text up to the first NUL, as hwloc reads it.
    load("epyc-2s-nps4");
    write("class/net/ens5f0np0/operstate", std::string("down\n\0", 6));
    write("class/net/ens5f0np0/carrier", std::string("0\n\0\0", 4));
    EXPECT_EQ(check(kCx7).cause, "carrier-down");
}

TEST_F(HealthTest, AVfWhosePfIsDownIsUnhealthy) {
    load("sriov-nic");
    ASSERT_EQ(check("nic-0000-01-02-0").state, State::Healthy);
    write("class/net/ens1f0/operstate", "down\n");
    auto health = check("nic-0000-01-02-0");
    EXPECT_EQ(health.cause, "pf-carrier-down");
    EXPECT_NE(health.message.find("0000:01:00.0"), std::string::npos) << health.message;
}

TEST_F(HealthTest, AVfPoolWhosePfIsDownIsUnhealthy) {
    load("sriov-nic", slices::VfLayout::Pooled);
    const std::string pool = "nic-0000-01-00-0-vfs-iavf";
    ASSERT_EQ(check(pool).state, State::Healthy);
    write("class/net/ens1f0/operstate", "down\n");
    auto health = check(pool);
    EXPECT_EQ(health.cause, "pf-carrier-down");
    EXPECT_NE(health.message.find("0000:01:00.0"), std::string::npos) << health.message;
}

TEST_F(HealthTest, AVfPoolWhosePfIsRemovedIsUnhealthy) {
    load("sriov-nic", slices::VfLayout::Pooled);
    const std::string pool = "nic-0000-01-00-0-vfs-vfio-pci";
    ASSERT_EQ(check(pool).state, State::Healthy);
    tree.remove("devices/pci0000:00/0000:00:01.0/0000:01:00.0");
    EXPECT_EQ(check(pool).cause, "removed");
}

TEST_F(HealthTest, ARemovedVfIsUnhealthy) {
    load("sriov-nic");
    ASSERT_EQ(check("nic-0000-01-02-0").state, State::Healthy);
    tree.remove("devices/pci0000:00/0000:00:01.0/0000:01:02.0");
    auto health = check("nic-0000-01-02-0");
    EXPECT_EQ(health.cause, "removed");
    EXPECT_NE(health.message.find("0000:01:02.0 is gone"), std::string::npos) << health.message;
}

TEST_F(HealthTest, ANetdevMovedIntoAPodIsNotAFault) {
    load("sriov-nic");
    tree.remove("devices/pci0000:00/0000:00:01.0/0000:01:02.0/net/ens1f0v0");
    EXPECT_EQ(check("nic-0000-01-02-0").state, State::Healthy);
}

TEST_F(HealthTest, AnInterfaceKeptDownByTheAdministratorIsNoFault) {
    load("sriov-nic");
    write("class/net/ens1f0v0/flags", "0x1002\n");  // IFF_UP clear
    write("class/net/ens1f0v0/operstate", "down\n");
    EXPECT_EQ(check("nic-0000-01-02-0").state, State::Healthy);
}

TEST_F(HealthTest, ARepresentorThatIsDownDoesNotTaintThePf) {
    load("sriov-nic");
    // switchdev: the VF's representor is a netdev of the PF's function.
    tree.file("devices/pci0000:00/0000:00:01.0/0000:01:00.0/net/pf0vf0rep/operstate", "down\n");
    tree.file("devices/pci0000:00/0000:00:01.0/0000:01:00.0/net/pf0vf0rep/phys_port_name",
              "pf0vf0\n");
    tree.file("devices/pci0000:00/0000:00:01.0/0000:01:00.0/net/pf0vf0rep/flags", "0x1003\n");
    auto machine = discovery::discover({tree.root(), nullptr, nullptr});
    ASSERT_TRUE(machine);
    model = std::move(machine).value();
    watched = watchList(model, devices);
    EXPECT_EQ(check("nic-0000-01-00-0").state, State::Healthy) << check("nic-0000-01-00-0").message;
    EXPECT_EQ(check("nic-0000-01-02-0").state, State::Healthy);
}

TEST_F(HealthTest, AFatalErrorStaysUntilTheDeviceIsReset) {
    load("epyc-2s-nps4");
    policy.aerRecovery = 60s;
    const auto start = Clock::now();
    check(kH100, start);
    write("bus/pci/devices/0000:21:00.0/aer_dev_fatal", "TOTAL_ERR_FATAL 1\n");
    EXPECT_EQ(check(kH100, start + 1s).cause, "aer-fatal");
    EXPECT_EQ(check(kH100, start + 1h).cause, "aer-fatal");  // a dead GPU logs nothing new
    write("bus/pci/devices/0000:21:00.0/aer_dev_fatal", "TOTAL_ERR_FATAL 0\n");  // reset
    EXPECT_EQ(check(kH100, start + 2h).state, State::Healthy);
}

TEST_F(HealthTest, AerCountersInTheNewerFolderLayoutAreRead) {
    load("epyc-2s-nps4");
    const std::string gpu = kGpuPath;
    tree.remove(gpu + "/aer_dev_nonfatal");
    tree.file(gpu + "/aer/err_nonfatal", "TOTAL_ERR_NONFATAL 0\n");
    check(kH100);
    write(gpu + "/aer/err_nonfatal", "TOTAL_ERR_NONFATAL 4\n");
    EXPECT_EQ(check(kH100).cause, "aer-nonfatal");
}

TEST_F(HealthTest, ALongMessageIsCutOnACharacterBoundary) {
    load("sriov-nic");
    // Many down interfaces with multi-byte names make a message over 1024 bytes.
    auto vf = device("nic-0000-01-02-0");
    for (int i = 0; i < 40; ++i) {
        const std::string path = "devices/virtual/net/\xc3\xa9\xc3\xa9\xc3\xa9" + std::to_string(i);
        tree.file(path + "/operstate", "down\n");
        vf.netdevPaths.push_back(path);
    }
    checker().beginRound();
    auto health = checker().check(vf, Clock::now());
    ASSERT_EQ(health.message.size() <= 1024, true);
    EXPECT_TRUE(health.message.ends_with("..."));
    const std::string body = health.message.substr(0, health.message.size() - 3);
    EXPECT_NE(static_cast<unsigned char>(body.back()) & 0xC0, 0xC0) << "cut inside a character";
}

TEST_F(HealthTest, ARemovedDeviceIsUnhealthy) {
    load("epyc-2s-nps4");
    tree.remove(kGpuPath);
    auto health = check(kH100);
    EXPECT_EQ(health.state, State::Unhealthy);
    EXPECT_EQ(health.cause, "removed");
    EXPECT_NE(health.message.find("PCI device 0000:21:00.0 is gone"), std::string::npos);
}

TEST_F(HealthTest, ACpuGoingOfflineMakesItsNodeDeviceUnhealthy) {
    load("epyc-2s-nps4");
    // As the kernel shows it: the CPU's own file and the range list of every online CPU.
    write("devices/system/cpu/cpu1/online", "0\n");
    write("devices/system/cpu/online", "0,2-63\n");
    auto health = check("cpu-numa-0");
    EXPECT_EQ(health.cause, "cpu-offline");
    EXPECT_NE(health.message.find("CPU(s) 1 of NUMA node 0"), std::string::npos);
    EXPECT_NE(health.message.find("devices/system/cpu/online)"), std::string::npos)
        << health.message;
    EXPECT_EQ(check("cpu-numa-1").state, State::Healthy);
}

TEST_F(HealthTest, TheCpuRangeListIsWhatCountsWhenThereIsOne) {
    load("epyc-2s-nps4");
    write("devices/system/cpu/online", "0-2,4-63\n");  // one read a round, not one per CPU
    EXPECT_EQ(check("cpu-numa-0").cause, "cpu-offline");
}

TEST_F(HealthTest, WithoutTheRangeListEachCpusFileIsRead) {
    load("epyc-2s-nps4");
    tree.remove("devices/system/cpu/online");
    EXPECT_EQ(check("cpu-numa-0").state, State::Healthy);
    write("devices/system/cpu/cpu1/online", "0\n");
    auto health = check("cpu-numa-0");
    EXPECT_EQ(health.cause, "cpu-offline");
    EXPECT_NE(health.message.find("cpuN/online"), std::string::npos) << health.message;
}

TEST_F(HealthTest, ANodeGoingOfflineMakesItsDeviceUnhealthy) {
    load("epyc-2s-nps4");
    write("devices/system/node/online", "0-6\n");
    EXPECT_EQ(check("cpu-numa-7").cause, "numa-node-offline");
}

TEST_F(HealthTest, TaintsNameTheDriverAndTheCause) {
    std::map<std::string, DeviceHealth> health{{"a", {"a", State::Unhealthy, "aer-fatal", "m", 1}},
                                               {"b", {"b", State::Healthy, "", "m", 1}}};
    auto taints = taintsFor(health, "numa.dra.dev", "NoSchedule");
    ASSERT_EQ(taints.size(), 1U);
    EXPECT_EQ(taints.at("a"),
              (api::DeviceTaint{"numa.dra.dev/unhealthy", "aer-fatal", "NoSchedule"}));
}

// --- Monitor --------------------------------------------------------------------------------

class MonitorTest : public HealthTest {
  protected:
    std::unique_ptr<Monitor> monitor(std::chrono::milliseconds poll = 5s,
                                     std::chrono::milliseconds fullRound = 60s) {
        MonitorOptions options;
        options.poolName = "node-a";
        options.pollInterval = poll;
        options.fullRoundInterval = fullRound;
        options.reportTimeout = 30s;
        auto m = std::make_unique<Monitor>(discovery::Sysfs(tree.root()), options);
        m->setDevices(watched);
        return m;
    }

    static const claims::DeviceHealthReport* find(const std::vector<claims::DeviceHealthReport>& r,
                                                  const std::string& name) {
        for (const auto& report : r) {
            if (report.deviceName == name)
                return &report;
        }
        return nullptr;
    }
    // A pointer into a temporary would dangle: callers keep the snapshot alive.
    static const claims::DeviceHealthReport* find(std::vector<claims::DeviceHealthReport>&&,
                                                  const std::string&) = delete;
};

TEST_F(MonitorTest, SnapshotsListEveryDeviceWithPoolAndTimeout) {
    load("epyc-2s-nps4");
    auto m = monitor();
    m->checkOnce();
    auto reports = m->snapshot();
    EXPECT_EQ(reports.size(), watched.size());
    const auto* gpu = find(reports, kH100);
    ASSERT_NE(gpu, nullptr);
    EXPECT_EQ(gpu->poolName, "node-a");
    EXPECT_EQ(gpu->state, State::Healthy);
    EXPECT_EQ(gpu->timeoutSeconds, 30);
    EXPECT_EQ(gpu->message, "all checks passed");
}

TEST_F(MonitorTest, ADeviceDroppedFromTheListStaysReportedAsRemoved) {
    load("epyc-2s-nps4");
    auto m = monitor();
    m->checkOnce();
    auto fewer = watched;
    std::erase_if(fewer, [](const WatchedDevice& d) { return d.deviceName == kH100; });
    m->setDevices(fewer);
    m->checkOnce();
    const auto whileGone = m->snapshot();
    const auto* gpu = find(whileGone, kH100);
    ASSERT_NE(gpu, nullptr);
    EXPECT_EQ(gpu->state, State::Unhealthy);
    m->setDevices(watched);  // it came back
    m->checkOnce();
    const auto back = m->snapshot();
    ASSERT_NE(find(back, kH100), nullptr);
    EXPECT_EQ(find(back, kH100)->state, State::Healthy);
}

TEST_F(MonitorTest, TheListenerHearsOfRoundsThatChangedSomethingOnly) {
    load("epyc-2s-nps4");
    auto m = monitor();
    int calls = 0;
    m->setChangeListener([&] { ++calls; });
    m->checkOnce();
    EXPECT_EQ(calls, 1) << "the first round was a change";
    m->checkOnce();
    EXPECT_EQ(calls, 1) << "nothing changed";
    write("class/net/ens5f0np0/operstate", "down\n");
    EXPECT_TRUE(m->checkOnce());
    EXPECT_EQ(calls, 2);
    m->setChangeListener({});
    write("class/net/ens5f0np0/operstate", "up\n");
    EXPECT_TRUE(m->checkOnce());
    EXPECT_EQ(calls, 2) << "an empty listener ends the calls";
}

TEST_F(MonitorTest, CheckNowWakesThePollingThreadAtOnce) {
    load("epyc-2s-nps4");
    auto m = monitor(1h);
    numadra::testing::HealthChanges changes(*m);
    m->start({});
    ASSERT_TRUE(changes.wait(10s));  // the first round
    write("class/net/ens5f0np0/operstate", "down\n");
    m->checkNow();
    // The poll is an hour away: only the wake-up explains a change within the wait.
    EXPECT_TRUE(changes.wait(10s));
    const auto begin = Clock::now();
    m->stop();
    EXPECT_LT(Clock::now() - begin, 10s) << "stop wakes the thread too";
}

TEST_F(MonitorTest, ThePollingThreadNoticesAChangeAndCallsBack) {
    load("epyc-2s-nps4");
    auto m = monitor(20ms);
    std::atomic<int> changes{0};
    m->start([&] { ++changes; });
    const auto deadline = Clock::now() + 10s;
    while (changes == 0 && Clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    const int before = changes;
    write("class/net/ens5f0np0/operstate", "down\n");
    while (changes == before && Clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    EXPECT_GT(changes, before);
    EXPECT_EQ(m->current().at(kCx7).state, State::Unhealthy);
    m->stop();
}

TEST_F(MonitorTest, CheckNowDoesNotWaitForThePoll) {
    load("epyc-2s-nps4");
    auto m = monitor(1h);
    std::atomic<int> changes{0};
    m->start([&] { ++changes; });
    const auto deadline = Clock::now() + 10s;
    while (changes == 0 && Clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    tree.remove(kGpuPath);
    m->checkNow();
    while (changes == 1 && Clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    EXPECT_EQ(m->current().at(kH100).cause, "removed");
}

constexpr const char* kVf = "nic-0000-01-02-0";  // sriov-nic, netdev ens1f0v0

// Waits for `done`; false after 10 s.
bool within10s(const std::function<bool()>& done) {
    const auto deadline = Clock::now() + 10s;
    while (!done()) {
        if (Clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

TEST_F(MonitorTest, AnUnannouncedRoundLeavesAVfToItsEvents) {
    load("sriov-nic");
    auto m = monitor();
    m->checkOnce();
    write("class/net/ens1f0v0/operstate", "down\n");
    m->checkOnce(Monitor::Scope::Unannounced);
    EXPECT_EQ(m->current().at(kVf).state, State::Healthy);  // rtnetlink would have said so
    m->checkOnce();
    EXPECT_EQ(m->current().at(kVf).cause, "carrier-down");
}

TEST_F(MonitorTest, AnUnannouncedRoundStillReadsTheAerCounters) {
    load("epyc-2s-nps4");
    auto m = monitor();
    m->checkOnce();
    write("bus/pci/devices/0000:21:00.0/aer_dev_nonfatal", "TOTAL_ERR_NONFATAL 2\n");
    m->checkOnce(Monitor::Scope::Unannounced);
    EXPECT_EQ(m->current().at(kH100).cause, "aer-nonfatal");
}

// A state kept by an Unannounced round is fresh news, not a stale one the kubelet should time out.
TEST_F(MonitorTest, AnUnannouncedRoundRefreshesWhenTheKeptStatesWereChecked) {
    load("sriov-nic");
    auto m = monitor();
    m->checkOnce();
    const auto before = m->current().at(kVf).checkedUnix;
    std::this_thread::sleep_for(1100ms);  // checkedUnix counts seconds
    m->checkOnce(Monitor::Scope::Unannounced);
    EXPECT_GT(m->current().at(kVf).checkedUnix, before);
}

TEST_F(MonitorTest, WithEventCoverageThePollsLeaveAVfToItsEventsUntilCheckNow) {
    load("sriov-nic");
    auto m = monitor(20ms, 1h);
    m->setEventCoverage(true);
    std::atomic<int> rounds{0};
    m->start([&] { ++rounds; });
    ASSERT_TRUE(within10s([&] { return rounds > 0; }));  // the first round: everything
    write("class/net/ens1f0v0/operstate", "down\n");
    std::this_thread::sleep_for(300ms);  // about 15 polls
    EXPECT_EQ(m->current().at(kVf).state, State::Healthy);
    m->checkNow();  // what a link event does
    EXPECT_TRUE(within10s([&] { return m->current().at(kVf).state == State::Unhealthy; }));
    m->stop();
}

TEST_F(MonitorTest, WithEventCoverageEverythingIsStillCheckedEveryFullRoundInterval) {
    load("sriov-nic");
    auto m = monitor(20ms, 200ms);
    m->setEventCoverage(true);
    std::atomic<int> rounds{0};
    m->start([&] { ++rounds; });
    ASSERT_TRUE(within10s([&] { return rounds > 0; }));
    write("class/net/ens1f0v0/operstate", "down\n");  // an event that never came
    EXPECT_TRUE(within10s([&] { return m->current().at(kVf).state == State::Unhealthy; }));
    m->stop();
}

TEST_F(MonitorTest, KnowsTheInterfacesOfItsNicsVfsAndTheirPfs) {
    load("sriov-nic");
    auto m = monitor();
    EXPECT_TRUE(m->watchesInterface("ens1f0"));    // a PF
    EXPECT_TRUE(m->watchesInterface("ens1f0v0"));  // one of its VFs
    EXPECT_FALSE(m->watchesInterface("veth1a2b3c"));
    EXPECT_FALSE(m->watchesInterface(""));
    // Only the VF stays watched: its PF's interface still matters to it.
    auto vfOnly = watched;
    std::erase_if(vfOnly,
                  [](const WatchedDevice& d) { return d.deviceName != "nic-0000-01-02-0"; });
    ASSERT_EQ(vfOnly.size(), 1U);
    m->setDevices(vfOnly);
    EXPECT_TRUE(m->watchesInterface("ens1f0"));
    EXPECT_TRUE(m->watchesInterface("ens1f0v0"));
    EXPECT_FALSE(m->watchesInterface("ens1f0v1"));
    m->setDevices({});
    EXPECT_FALSE(m->watchesInterface("ens1f0"));
}

}  // namespace
}  // namespace numadra::health
