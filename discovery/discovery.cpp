#include "numadra/discovery/discovery.hpp"

#include <algorithm>

#include "readers.hpp"

namespace numadra::discovery {

Status checkLooksLikeSysfs(const std::string& root) {
    Sysfs sysfs(root);
    if (!sysfs.isDirectory(""))
        return Error{"sysfs root '" + root + "' is not a directory"};
    if (!sysfs.isDirectory("devices/system/cpu") && !sysfs.isDirectory("bus/pci/devices")) {
        return Error{"sysfs root '" + root +
                     "' does not look like sysfs: it has neither devices/system/cpu nor "
                     "bus/pci/devices (pass the folder that plays /sys)"};
    }
    return Status::Ok();
}

bool changedWithoutUevent(const Machine& machine) {
    const Sysfs sysfs(machine.sysfsRoot);
    return std::any_of(
        machine.unannounced.begin(), machine.unannounced.end(), [&](const UnannouncedRead& read) {
            return detail::readUnannounced(sysfs, read.what, read.path) != read.value;
        });
}

Result<Machine> discover(const DiscoveryOptions& options) {
    if (auto status = checkLooksLikeSysfs(options.sysfsRoot); !status)
        return status.error();
    Machine machine;
    machine.sysfsRoot = options.sysfsRoot;
    Sysfs sysfs(options.sysfsRoot);
    detail::Reader reader(sysfs, machine.diagnostics, &machine.unannounced);
    detail::readNumaAndCpus(reader, machine);
    detail::readPciFunctions(reader, options.names, machine);
    const DeviceKindRules& kinds = options.kinds ? *options.kinds : DeviceKindRules::defaults();
    for (auto& function : machine.pci)
        function.kind = kinds.classify(function);
    detail::readSerialNumbers(reader, machine);
    return machine;
}

}  // namespace numadra::discovery
