#!/usr/bin/python3
"""ctest deploy.daemonset_runs: the DaemonSet's container, as deploy/manifests/ has it (and the
chart rendered with the other publishing options), started for real: numa-dra-plugin with the
manifest's arguments and downward-API environment, the host folders moved under a temporary
folder, a mocked machine as /sys, and --dry-run instead of an API server. It must accept every
flag, answer the manifest's liveness and readiness probes (200 from readiness once serving and
published), create the kubelet sockets where the mounts put them, and stop cleanly on SIGTERM.

Usage: check_daemonset.py NUMA_DRA_PLUGIN MOCKED_MACHINES_DIR REPO_ROOT
"""

import importlib.util
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

try:
    import yaml
except ImportError:
    sys.exit("check_daemonset: needs PyYAML (Debian package python3-yaml, which "
             "scripts/install-deps.sh must install)")

MACHINE = "epyc-2s-nps4"
POD_UID = "0f6b2b1e-5d1c-4c9a-9a43-7b3c1f2e8d10"
HOST_DIR_FLAGS = ("--kubelet-registry-dir", "--kubelet-plugins-dir", "--cdi-dir",
                  "--metadata-dir", "--state-dir", "--dev-root")
VARIANT = {"publish": {"numaList": True, "sharedConsumableCapacity": True},
           "readDeviceSerialNumbers": True, "hostNetwork": False,
           "extraArgs": ["--keep-slices-on-exit", "--metadata-versions=v1beta1,v1alpha1"]}

failures = []


def fail(message):
    failures.append(message)
    print(f"FAIL {message}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return None, ""


def daemonset_of(documents):
    for doc in documents:
        if doc and doc.get("kind") == "DaemonSet":
            return doc
    raise SystemExit("check_daemonset: no DaemonSet in the manifests")


def run(number, label, daemonset, plugin, machines, tmp):
    before = len(failures)
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    root = tmp / str(number)  # short: unix socket paths have at most 107 bytes
    args, flags = [], {}
    port = free_port()
    for arg in container["args"]:
        name, _, value = arg.partition("=")
        if name in HOST_DIR_FLAGS:
            value = str(root / value.lstrip("/"))
            pathlib.Path(value).mkdir(parents=True, exist_ok=True)
        elif name == "--nri-socket":
            # Never the host's runtime: the daemon would pin this machine's containers.
            value = str(root / value.lstrip("/"))
            pathlib.Path(value).parent.mkdir(parents=True, exist_ok=True)
        elif name == "--sysfs-root":
            value = str((machines / MACHINE / "sys").resolve())
        elif name == "--metrics-addr":
            value = f"127.0.0.1:{port}"
        flags[name] = value
        args.append(f"{name}={value}" if value or "=" in arg else name)
    env = dict(os.environ)
    for var in container.get("env", []):
        path = var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        env[var["name"]] = {"spec.nodeName": "node-1", "metadata.uid": POD_UID}.get(
            path, var.get("value", ""))
    command = [plugin, *args, "--dry-run"]
    log = root / "daemon.log"
    with open(log, "w") as log_file:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log_file)
    try:
        ready = None
        readiness = container["readinessProbe"]["httpGet"]["path"]
        liveness = container["livenessProbe"]["httpGet"]["path"]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and process.poll() is None:
            status, body = http_get(port, readiness)
            if status == 200:
                ready = body
                break
            time.sleep(0.1)
        if ready is None:
            fail(f"{label}: {readiness} never answered 200 (exit status {process.poll()})\n"
                 f"  {' '.join(command)}\n{log.read_text()[-3000:]}")
            return
        status, body = http_get(port, liveness)
        if status != 200:
            fail(f"{label}: {liveness} answered {status}")
        status, body = http_get(port, "/metrics")
        if status != 200 or "numadra_build_info" not in body:
            fail(f"{label}: /metrics answered {status} without numadra_build_info")
        # The daemon names its sockets in the log (<driver>-<pod uid>-reg.sock and
        # dra-<pod uid>.sock, or hashed names when a folder is too long for a socket path,
        # as these temporary ones can be); they must be in the folders the mounts share.
        driver = flags["--driver-name"]
        started = re.search(r"registration=(\S+) endpoint=(\S+)", log.read_text())
        if not started:
            fail(f"{label}: the log does not name the sockets")
            return
        registration, dra = pathlib.Path(started.group(1)), pathlib.Path(started.group(2))
        expected = ((registration, pathlib.Path(flags["--kubelet-registry-dir"])),
                    (dra, pathlib.Path(flags["--kubelet-plugins-dir"]) / driver))
        for path, folder in expected:
            if path.parent != folder or not path.is_socket():
                fail(f"{label}: socket {path} is not a socket in {folder.relative_to(root)}")
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            fail(f"{label}: still running 20 s after SIGTERM")
            return
        if code != 0:
            fail(f"{label}: exit status {code} after SIGTERM\n{log.read_text()[-3000:]}")
        if registration.exists():
            fail(f"{label}: the registration socket is left after SIGTERM")
        if len(failures) == before:
            print(f"ok   {label}: readiness said {ready.strip()!r}; sockets served; SIGTERM "
                  "exit 0")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    plugin, machines = sys.argv[1], pathlib.Path(sys.argv[2])
    repo = pathlib.Path(sys.argv[3]).resolve()
    manifests = repo / "deploy" / "manifests" / "numa-dra-driver.yaml"
    default = daemonset_of(yaml.safe_load_all(manifests.read_text()))

    spec = importlib.util.spec_from_file_location(
        "render_manifests", repo / "scripts" / "render-manifests.py")
    renderer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(renderer)
    chart_dir = repo / "deploy" / "helm" / "numa-dra-driver"
    values = yaml.safe_load((chart_dir / "values.yaml").read_text())
    renderer.merge(values, VARIANT)
    _, docs = renderer.render_chart(chart_dir, values, "numa-dra-driver", "numa-dra-driver")
    variant = daemonset_of(yaml.safe_load(body) for _, _, _, body in docs)

    with tempfile.TemporaryDirectory(prefix="dd", dir="/tmp") as tmp:
        run(1, "deploy/manifests", default, plugin, machines, pathlib.Path(tmp))
        run(2, "chart with lists, shared capacity, extraArgs", variant, plugin, machines,
            pathlib.Path(tmp))
    print(f"check_daemonset: {len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
