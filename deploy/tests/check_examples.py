#!/usr/bin/python3
"""ctest deploy.examples_allocate: every claim of every deploy/examples/<story>/ is allocatable
by dra-allocate on a mocked node (numa-probe's slices for a mocked machine, with the flags the
story needs) with the chart's DeviceClasses (deploy/manifests/deviceclasses.yaml), and gets the
devices its README promises. The overcommit/ folders are checked to be refused, so the budgets
they demonstrate are real.

Usage: check_examples.py DRA_ALLOCATE NUMA_PROBE MOCKED_MACHINES_DIR REPO_ROOT
"""

import json
import pathlib
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    sys.exit("check_examples: needs PyYAML (Debian package python3-yaml, which "
             "scripts/install-deps.sh must install)")

NODE = "node-1"
# The kinds dra-allocate reads; the others (Namespace) are left out of its input.
ALLOCATOR_KINDS = {"ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate",
                   "Pod", "Node"}


class Run:
    """One dra-allocate run of a story: the mocked machine and numa-probe flags, the extra
    folders given after the story's own files, the exit status, and for claims (by name) the
    devices per request (`request` or `request/subrequest`) in result order."""

    def __init__(self, machine, flags=(), extra=(), exit=0, devices=None, refused=()):
        self.machine, self.flags, self.extra = machine, list(flags), list(extra)
        self.exit, self.devices, self.refused = exit, devices or {}, list(refused)


# One entry per folder of deploy/examples/; a new story must be added here. The devices are the
# ones the stories' READMEs name.
STORIES = {
    "gpu-nic-cpu-numa": [
        Run("epyc-2s-nps4", ["--numa-list"], devices={"trainer-devices": {
            "gpu": ["gpu-0000-a3-00-0"], "nic": ["nic-0000-c1-00-0"], "cpu": ["cpu-numa-4"]}}),
    ],
    "scalar-vs-list-numa": [
        Run("epyc-2s-nps4", ["--numa-list"], devices={
            "gpu-and-cpus": {"gpu": ["gpu-0000-21-00-0"], "cpus": ["cpu-numa-0"]},
            "gpu-and-nic": {"gpu": ["gpu-0000-a3-00-0"], "nic": ["nic-0000-c1-00-0"]}}),
        Run("epyc-2s-nps4", [], exit=1, refused=["gpu-and-nic"], devices={
            "gpu-and-cpus": {"gpu": ["gpu-0000-21-00-0"], "cpus": ["cpu-numa-1"]}}),
    ],
    "vf-bandwidth-budget": [
        Run("sriov-nic", ["--shared-consumable-capacity"], devices={
            "ingest-net": {"vf": ["nic-0000-01-00-0-vfs-iavf"]},
            "replica-a-net": {"vf": ["nic-0000-01-00-0-vfs-iavf"]},
            "replica-b-net": {"vf": ["nic-0000-01-00-0-vfs-iavf"]},
            "packet-forwarder-net": {"vf": ["nic-0000-01-00-0-vfs-vfio-pci"]}}),
        Run("sriov-nic", ["--shared-consumable-capacity"], extra=["overcommit"], exit=1,
            refused=["one-more"]),
        Run("sriov-nic", ["--shared-consumable-capacity", "--vf-layout", "individual"], devices={
            "ingest-net": {"vf": ["nic-0000-01-02-0"]},
            "replica-a-net": {"vf": ["nic-0000-01-02-1"]},
            "replica-b-net": {"vf": ["nic-0000-01-02-2"]},
            "packet-forwarder-net": {"vf": ["nic-0000-01-02-6"]}}),
        Run("sriov-nic", ["--shared-consumable-capacity", "--vf-layout", "individual"],
            extra=["overcommit"], exit=1, refused=["one-more"]),
    ],
    "numa-cpu-budgets": [
        Run("epyc-2s-nps4", ["--shared-consumable-capacity"], devices={
            "inference": {"gpu": ["gpu-0000-21-00-0"], "cpus": ["cpu-pci0000-20"]},
            "sidecar": {"cpus": ["cpu-numa-1"]},
            "batch": {"cpus": ["cpu-numa-0"]}}),
        Run("epyc-2s-nps4", ["--shared-consumable-capacity"], extra=["overcommit"], exit=1,
            refused=["one-more-cpu-on-node-1"]),
    ],
    "derived-attributes": [
        Run("epyc-2s-nps4", ["--numa-list"], devices={
            "gpu-cpus-same-physical-node": {"gpu": ["gpu-0000-21-00-0"],
                                            "cpus": ["cpu-numa-1"]},
            "fast-gpu-and-nic": {"gpu": ["gpu-0000-a3-00-0"], "nic": ["nic-0000-c1-00-0"]}}),
    ],
    "prioritized-alternatives": [
        Run("gpu4-nic", [], devices={"training-devices": {
            "gpus/two": ["gpu-0000-18-00-0", "gpu-0000-3a-00-0"],
            "nic/infiniband": ["nic-0000-19-00-0"]}}),
        Run("epyc-2s-nps4", ["--numa-list"], devices={"training-devices": {
            "gpus/one": ["gpu-0000-a3-00-0"], "nic/roce": ["nic-0000-c1-00-0"]}}),
    ],
    "extended-resource": [
        Run("epyc-2s-nps4", [], devices={
            "cuda-job-extended-resources": {"container-0-request-0": ["gpu-0000-21-00-0"]},
            "gpu-and-nic-extended-resources": {"container-0-request-0": ["nic-0000-c1-00-0"],
                                               "container-0-request-1": ["gpu-0000-a3-00-0"]}}),
    ],
    "admin-access": [
        Run("epyc-2s-nps4", [], devices={
            "gpu-health-check-gpus": {"gpus": ["gpu-0000-21-00-0", "gpu-0000-a3-00-0"]},
            "one-gpu": {"gpu": ["gpu-0000-21-00-0"]}}),
    ],
}

failures = []


def fail(message):
    failures.append(message)
    print(f"FAIL {message}")


def allocator_inputs(folder, out_dir, prefix):
    """The folder's YAML files (not recursive, in name order, as dra-allocate reads a folder),
    without the kinds dra-allocate does not read. Returns the paths written."""
    written = []
    for path in sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml", ".json")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        kept = [d for d in docs if d.get("kind") in ALLOCATOR_KINDS]
        if not kept:
            continue
        target = out_dir / f"{prefix}-{len(written):02d}-{path.stem}.yaml"
        target.write_text(yaml.safe_dump_all(kept, sort_keys=False))
        written.append(target)
    return written


def results_by_claim(listing):
    claims = {}
    for item in listing.get("items", []):
        if item.get("kind") != "ResourceClaim":
            continue
        allocation = (item.get("status") or {}).get("allocation")
        if allocation is None:
            continue
        per_request = {}
        for result in allocation["devices"]["results"]:
            per_request.setdefault(result["request"], []).append(result["device"])
        claims[item["metadata"]["name"]] = per_request
    return claims


def run_once(label, folder, run, tools, classes, work):
    """One dra-allocate run; failures go to `failures`."""
    dra_allocate, numa_probe, machines = tools
    sysfs = machines / run.machine / "sys"
    probe = subprocess.run(
        [numa_probe, "--sysfs-root", str(sysfs), "--node-name", NODE, *run.flags,
         "--output", "json"], capture_output=True, text=True)
    if probe.returncode != 0:
        fail(f"{label}: numa-probe exited {probe.returncode}: {probe.stderr.strip()}")
        return
    slices = work / "slices.json"
    slices.write_text(probe.stdout)
    inputs = allocator_inputs(folder, work, "story")
    for i, extra in enumerate(run.extra):
        inputs += allocator_inputs(folder / extra, work, f"extra{i}")
    command = [dra_allocate, "--node", NODE, "--explain", "--output", "json", str(slices),
               str(classes)] + [str(p) for p in inputs]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != run.exit:
        fail(f"{label}: dra-allocate exited {result.returncode}, expected {run.exit}\n"
             f"  {' '.join(map(str, command))}\n{result.stderr}")
        return
    try:
        claims = results_by_claim(json.loads(result.stdout))
    except (json.JSONDecodeError, KeyError) as error:
        fail(f"{label}: unreadable dra-allocate output: {error}")
        return
    for claim, expected in run.devices.items():
        if claims.get(claim) != expected:
            fail(f"{label}: claim {claim} got {claims.get(claim)}, the README says {expected}")
    for claim in run.refused:
        if claim in claims:
            fail(f"{label}: {claim} was allocated ({claims[claim]}), it must not fit")
        elif f"/{claim}" not in result.stderr:
            fail(f"{label}: stderr does not name {claim}:\n{result.stderr}")
    if run.exit == 0:
        in_input = sum(1 for p in inputs for d in yaml.safe_load_all(p.read_text())
                       if d and d.get("kind") == "ResourceClaim")
        if len(claims) < in_input:
            fail(f"{label}: {len(claims)} claims allocated, {in_input} in the input")
    devices = sum(len(d) for c in claims.values() for d in c.values())
    return f"{devices} devices in {len(claims)} claims"


def run_story(story, folder, runs, tools, classes, tmp):
    """Returns the number of runs that failed."""
    failed = 0
    for number, run in enumerate(runs, 1):
        label = f"{story} run {number} ({run.machine} {' '.join(run.flags) or 'scalar'}" + \
            (f" + {', '.join(run.extra)}" if run.extra else "") + \
            f", expecting exit {run.exit})"
        work = tmp / f"{story}-{number}"
        work.mkdir()
        before = len(failures)
        summary = run_once(label, folder, run, tools, classes, work)
        if len(failures) == before:
            print(f"ok   {label}: {summary}")
        else:
            failed += 1
    return failed


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    dra_allocate, numa_probe = sys.argv[1], sys.argv[2]
    machines, repo = pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4]).resolve()
    examples = repo / "deploy" / "examples"
    classes = repo / "deploy" / "manifests" / "deviceclasses.yaml"
    folders = {p.name: p for p in examples.iterdir() if p.is_dir()}
    for name in sorted(set(folders) - set(STORIES)):
        fail(f"deploy/examples/{name}: not in check_examples.py's STORIES (say which mocked "
             "machine and flags it needs)")
    for name in sorted(set(STORIES) - set(folders)):
        fail(f"deploy/examples/{name}: listed in STORIES but missing")
    for name, runs in STORIES.items():
        for run in runs:
            if not (machines / run.machine / "sys").is_dir():
                fail(f"{name}: mocked machine {run.machine} not found in {machines}")
    failed_runs = 0
    with tempfile.TemporaryDirectory(prefix="deploy-examples-") as tmp:
        for name in sorted(set(folders) & set(STORIES)):
            failed_runs += run_story(name, folders[name], STORIES[name],
                                     (dra_allocate, numa_probe, machines), classes,
                                     pathlib.Path(tmp))
    runs = sum(len(STORIES[n]) for n in set(folders) & set(STORIES))
    print(f"check_examples: {runs - failed_runs} of {runs} dra-allocate runs as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
