#!/usr/bin/python3
"""Keeps the README's generated parts true, so it can never show a value the driver does not
publish or a claim that differs from the tested example:

- the table of published attributes with an example value per device type, from what
  numa-probe publishes for the bundled mocked machines (between the README lines
  `<!-- attribute-table:begin -->` and `<!-- attribute-table:end -->`);
- every code block right after a line `<!-- include: PATH -->` (PATH relative to the README):
  the file's content, verbatim (the examples are checked by the deploy tests).

    scripts/readme-sync.py NUMA_PROBE MOCKED_MACHINES_DIR README.md --check
    scripts/readme-sync.py NUMA_PROBE MOCKED_MACHINES_DIR README.md --write

--check exits 1 with a diff when something is out of date (ctest docs.readme_in_sync); --write
rewrites it. MOCKED_MACHINES_DIR is the generated sysfs trees (build/testdata/sysfs).
"""

import argparse
import difflib
import json
import pathlib
import subprocess
import re
import sys

INCLUDE = re.compile(r"^<!-- include: (\S+) -->$")
BEGIN = "<!-- attribute-table:begin -->"
END = "<!-- attribute-table:end -->"
DRIVER = "numa.dra.dev"
STANDARD = "resource.kubernetes.io/"

# (column title, mocked machine, device name, flags of the column): one example of each device
# type.
COLUMNS = [
    ("GPU", "epyc-2s-nps4", "gpu-0000-21-00-0", []),
    ("NIC (RDMA)", "epyc-2s-nps4", "nic-0000-c1-00-0", []),
    ("SR-IOV PF", "sriov-nic", "nic-0000-01-00-0", []),
    ("SR-IOV VF pool", "sriov-nic", "nic-0000-01-00-0-vfs-iavf", []),
    ("SR-IOV VF (`--vf-layout=individual`)", "sriov-nic", "nic-0000-01-02-0",
     ["--vf-layout", "individual"]),
    ("CPU (NUMA node)", "epyc-2s-nps4", "cpu-numa-0", []),
]

# Publishing profiles: default flags, and the list form of the standard attributes.
PROFILES = {"": [], "--numa-list": ["--numa-list"],
            "--node-allocatable-resources": ["--node-allocatable-resources"]}

# (row title, profile, kind, name): kind is "attribute", "capacity" or "nodeAllocatable".
ROWS = [
    (f"`{STANDARD}numaNode`", "", "attribute", STANDARD + "numaNode"),
    (f"`{STANDARD}numaNode` (`--numa-list`)", "--numa-list", "attribute",
     STANDARD + "numaNode"),
    (f"`{STANDARD}pcieRoot`", "", "attribute", STANDARD + "pcieRoot"),
    (f"`{STANDARD}pcieRoot` (`--numa-list`)", "--numa-list", "attribute",
     STANDARD + "pcieRoot"),
    (f"`{STANDARD}pciBusID`", "", "attribute", STANDARD + "pciBusID"),
] + [(f"`{name}`", "", "attribute", name) for name in [
    "type", "vendor", "vendorID", "deviceID", "model", "kernelDriver", "iommuGroup", "socket",
    "pcieMaxLinkSpeed", "pcieMaxLinkWidth", "ifName", "linkType", "rdma", "rdmaDevice",
    "sriovRole", "sriovTotalVFs", "sriovNumVFs", "pfPciBusID", "vfIndex", "cpus",
]] + [(f"capacity `{name}`", "", "capacity", name) for name in [
    "bandwidth", f"{DRIVER}/bandwidth", "vfs", "cpu", "memory"]
     ] + [(f"nodeAllocatableResources `{name}` (`--node-allocatable-resources`)",
           "--node-allocatable-resources", "nodeAllocatable", name) for name in ["cpu", "memory"]]


def published_devices(numa_probe, machines, machine, flags):
    root = pathlib.Path(machines) / machine / "sys"
    result = subprocess.run(
        [numa_probe, "--sysfs-root", str(root), "--node-name", "node-1", "--output", "json",
         *flags], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"readme-sync: numa-probe on {machine} failed: {result.stderr}")
    devices = {}
    for slice_object in json.loads(result.stdout)["items"]:
        for device in slice_object["spec"].get("devices", []):
            devices[device["name"]] = device
    return devices


def format_value(typed):
    """A DeviceAttribute ({"int": 1}, {"strings": [...]}) as a CEL literal."""
    (kind, value), = typed.items()
    if kind in ("string", "version"):
        return json.dumps(value)
    if kind == "bool":
        return "true" if value else "false"
    if kind == "int":
        return str(value)
    return "[" + ", ".join(json.dumps(v) for v in value) + "]"


def cell(device, kind, name):
    if kind == "nodeAllocatable":
        resource = device.get("nodeAllocatableResources", {}).get(name)
        if not resource:
            return "—"
        parts = []
        mapping = resource.get("mapping", {})
        if "capacityKey" in mapping:
            parts.append(f"capacity `{mapping['capacityKey']}` × `{mapping['capacityMultiplier']}`")
        if "deviceMultiplier" in mapping:
            parts.append(f"`{mapping['deviceMultiplier']}` per device")
        for field, value in resource.get("overhead", {}).items():
            parts.append(f"overhead `{value}` {field}")
        return ", ".join(parts)
    if kind == "attribute":
        typed = device.get("attributes", {}).get(name)
        return f"`{format_value(typed)}`" if typed else "—"
    quantity = device.get("capacity", {}).get(name)
    return f"`{quantity['value']}`" if quantity else "—"


def render_table(numa_probe, machines):
    cache = {}
    lines = [
        "| attribute | " + " | ".join(
            f"{title}<br>`{device}`" for title, _, device, _ in COLUMNS) + " |",
        "| --- |" + " --- |" * len(COLUMNS),
    ]
    for title, profile, kind, name in ROWS:
        cells = []
        for _, machine, device_name, column_flags in COLUMNS:
            key = (machine, profile, tuple(column_flags))
            if key not in cache:
                cache[key] = published_devices(numa_probe, machines, machine,
                                               PROFILES[profile] + column_flags)
            device = cache[key].get(device_name)
            if device is None:
                sys.exit(f"readme-sync: {machine} publishes no {device_name}")
            cells.append(cell(device, kind, name))
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    machines_used = sorted({machine for _, machine, _, _ in COLUMNS})
    lines.append("")
    lines.append("Values as `numa-probe` publishes them for the bundled mocked machines "
                 + " and ".join(f"`{m}`" for m in machines_used)
                 + " (`build/testdata/sysfs/<machine>/sys`); driver attributes are in the "
                 f"driver's domain (`{DRIVER}/type` in CEL), — means not published.")
    return lines


def with_table(readme, lines, numa_probe, machines):
    try:
        begin, end = lines.index(BEGIN), lines.index(END)
    except ValueError:
        sys.exit(f"readme-sync: {readme} lacks the lines {BEGIN} and {END}")
    if end < begin:
        sys.exit(f"readme-sync: {readme}: {END} comes before {BEGIN}")
    return lines[:begin + 1] + render_table(numa_probe, machines) + lines[end:]


def with_includes(readme, lines):
    """Each `<!-- include: PATH -->` line must be followed by a fenced block: its body becomes
    the file's lines."""
    result, index = [], 0
    while index < len(lines):
        line = lines[index]
        result.append(line)
        index += 1
        match = INCLUDE.match(line)
        if not match:
            continue
        source = readme.parent / match.group(1)
        if not source.is_file():
            sys.exit(f"readme-sync: {readme}: include names a missing file {match.group(1)}")
        if index >= len(lines) or not lines[index].startswith("```"):
            sys.exit(f"readme-sync: {readme} line {index}: include of {match.group(1)} is not "
                     "followed by a ``` block")
        closing = next((i for i in range(index + 1, len(lines)) if lines[i] == "```"), None)
        if closing is None:
            sys.exit(f"readme-sync: {readme} line {index + 1}: the ``` block is never closed")
        result.append(lines[index])
        result.extend(source.read_text().splitlines())
        result.append("```")
        index = closing + 1
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("numa_probe")
    parser.add_argument("machines")
    parser.add_argument("readme")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    args = parser.parse_args()

    readme = pathlib.Path(args.readme)
    current = readme.read_text().splitlines()
    wanted = with_includes(readme, with_table(readme, current, args.numa_probe, args.machines))
    if args.write:
        readme.write_text("\n".join(wanted) + "\n")
        return 0
    if current != wanted:
        sys.stdout.writelines(difflib.unified_diff(
            [line + "\n" for line in current], [line + "\n" for line in wanted],
            str(readme), "generated"))
        print("readme-sync: out of date; run scripts/readme-sync.py build/bin/numa-probe "
              "build/testdata/sysfs README.md --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
