#!/usr/bin/python3
"""ctest deploy.deviceclasses_select: the chart's DeviceClasses (deploy/manifests/
deviceclasses.yaml) select exactly the devices they are meant for, on every mocked machine and
with every publishing mode, as the allocator evaluates their CEL:

  gpu.<driver>  devices with type "gpu"
  nic.<driver>  devices with type "nic" that are not SR-IOV VFs (PFs, NICs without SR-IOV)
  vf.<driver>   devices with sriovRole "vf"
  cpu.<driver>  devices with type "cpu"

For each machine and class, dra-allocate gets one claim asking for `allocationMode: All` of the
class; the devices it allocates must be the expected set computed from numa-probe's slices
(none: the claim is not allocatable; more than a claim may hold, 32: refused, naming the
expected number).

Usage: check_deviceclasses.py DRA_ALLOCATE NUMA_PROBE MOCKED_MACHINES_DIR REPO_ROOT
"""

import json
import pathlib
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

try:
    import yaml
except ImportError:
    sys.exit("check_deviceclasses: needs PyYAML (Debian package python3-yaml, which "
             "scripts/install-deps.sh must install)")

NODE = "node-1"
MODES = [[], ["--numa-list", "--shared-consumable-capacity"]]
CLAIM_LIMIT = 32  # devices per claim (the API's limit)


def attribute(device, name, driver):
    value = (device.get("attributes") or {}).get(name) or \
        (device.get("attributes") or {}).get(f"{driver}/{name}")
    return next(iter(value.values())) if value else None


def expected_devices(slices, driver):
    """{class prefix: set of device names} by the classes' intent."""
    expected = {"gpu": set(), "nic": set(), "vf": set(), "cpu": set()}
    for item in slices["items"]:
        for device in item["spec"].get("devices") or []:
            kind = attribute(device, "type", driver)
            role = attribute(device, "sriovRole", driver)
            if kind == "gpu":
                expected["gpu"].add(device["name"])
            if kind == "nic" and role != "vf":
                expected["nic"].add(device["name"])
            if role == "vf":
                expected["vf"].add(device["name"])
            if kind == "cpu":
                expected["cpu"].add(device["name"])
    return expected


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    dra_allocate, numa_probe = sys.argv[1], sys.argv[2]
    machines_dir, repo = pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4]).resolve()
    classes_file = repo / "deploy" / "manifests" / "deviceclasses.yaml"
    classes = [d for d in yaml.safe_load_all(classes_file.read_text()) if d]
    names = {c["metadata"]["name"].split(".", 1)[0]: c["metadata"]["name"] for c in classes}
    if set(names) != {"gpu", "nic", "vf", "cpu"}:
        print(f"FAIL the chart's classes are {sorted(names.values())}")
        return 1
    driver = classes[0]["metadata"]["name"].split(".", 1)[1]
    machines = sorted(p.name for p in machines_dir.iterdir() if (p / "sys").is_dir())
    failures, checks, selected = [], 0, {k: 0 for k in names}
    with tempfile.TemporaryDirectory(prefix="deploy-classes-") as tmp:
        tmp = pathlib.Path(tmp)
        for prefix, cls in names.items():
            (tmp / f"{prefix}.yaml").write_text(yaml.safe_dump({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": f"all-{prefix}", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "all", "exactly": {
                    "deviceClassName": cls, "allocationMode": "All"}}]}}}))
        for machine in machines:
            for mode in MODES:
                label = f"{machine} {' '.join(mode) or 'scalar'}"
                probe = subprocess.run(
                    [numa_probe, "--sysfs-root", str(machines_dir / machine / "sys"),
                     "--node-name", NODE, *mode, "--output", "json"],
                    capture_output=True, text=True)
                if probe.returncode != 0:
                    failures.append(f"{label}: numa-probe exited {probe.returncode}")
                    continue
                slices_path = tmp / "slices.json"
                slices_path.write_text(probe.stdout)
                expected = expected_devices(json.loads(probe.stdout), driver)
                for prefix in names:
                    checks += 1
                    result = subprocess.run(
                        [dra_allocate, "--node", NODE, "--output", "json", str(slices_path),
                         str(classes_file), str(tmp / f"{prefix}.yaml")],
                        capture_output=True, text=True)
                    got = set()
                    if len(expected[prefix]) > CLAIM_LIMIT:
                        # All of more devices than a claim may hold: refused, naming how many
                        # devices the class selects.
                        count = f"adding {len(expected[prefix])} devices exceeds"
                        if result.returncode != 1 or count not in result.stderr:
                            failures.append(f"{label} {names[prefix]}: expected the refusal "
                                            f"'{count} the claim limit', got exit "
                                            f"{result.returncode}: {result.stderr.strip()}")
                        selected[prefix] += len(expected[prefix])
                        continue
                    if result.returncode == 0:
                        for item in json.loads(result.stdout)["items"]:
                            for r in item["status"]["allocation"]["devices"]["results"]:
                                got.add(r["device"])
                    elif result.returncode != 1:
                        failures.append(f"{label} {names[prefix]}: dra-allocate exited "
                                        f"{result.returncode}: {result.stderr.strip()}")
                        continue
                    if got != expected[prefix]:
                        failures.append(
                            f"{label} {names[prefix]}: selects {len(got)} devices, expected "
                            f"{len(expected[prefix])}; wrongly selected "
                            f"{sorted(got - expected[prefix])[:5]}, missed "
                            f"{sorted(expected[prefix] - got)[:5]}")
                    selected[prefix] += len(got)
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"check_deviceclasses: {len(machines)} machines x {len(MODES)} modes x "
          f"{len(names)} classes: {checks - len(failures)} passed, {len(failures)} failed; "
          "devices selected: " + ", ".join(f"{names[k]} {v}" for k, v in selected.items()))
    if not all(selected.values()):
        print("FAIL some class selected no device on any machine")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
