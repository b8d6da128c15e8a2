#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/ (committed; rerun after
changing the inputs they are made from). Python 3 standard library only.

  cel              the expressions of the CEL and DRA-CEL unit tests (cluster/cel/tests, cluster/dracel/tests)
  allocator_input  every scenario of testdata/allocator: its input files as one YAML stream,
                   plus the demo claims
  checkpoint       checkpoint records as the driver writes them (valid CRC-32C), and damaged ones
  dra_service      NodePrepareResourcesRequests with claims for the mocked node's devices
  sysfs            not made here: the fuzzer writes them itself from the mocked machines
                   (NUMADRA_FUZZ_WRITE_SEEDS=tests/fuzz/corpus/sysfs build-san/fuzz/sysfs_fuzzer)
"""

import hashlib
import json
import pathlib
import re
import shutil
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"


def reset(target):
    folder = CORPUS / target
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def write(folder, name, data):
    if isinstance(data, str):
        data = data.encode()
    (folder / name).write_bytes(data)


def named(data):
    return hashlib.sha1(data if isinstance(data, bytes) else data.encode()).hexdigest()[:16]


# ---- CEL -----------------------------------------------------------------------------------

def cel_expressions():
    found = []
    c_string = re.compile(r'\{\s*"((?:[^"\\]|\\.)*)"\s*,')
    raw_string = re.compile(r'R"\((.*?)\)"', re.S)
    for path in sorted((ROOT / "cluster" / "cel" / "tests").glob("*.cpp")) + sorted(
            (ROOT / "cluster" / "dracel" / "tests").glob("*.cpp")):
        text = path.read_text()
        for match in c_string.finditer(text):
            try:
                found.append(bytes(match.group(1), "utf-8").decode("unicode_escape")
                             .encode("latin-1").decode("utf-8"))
            except (UnicodeDecodeError, UnicodeEncodeError):
                continue
        for match in raw_string.finditer(text):
            found.append(match.group(1))
    unique = []
    seen = set()
    for expression in found:
        if expression and expression not in seen and len(expression) < 2000:
            seen.add(expression)
            unique.append(expression)
    return unique


def make_cel():
    folder = reset("cel")
    expressions = cel_expressions()
    for expression in expressions:
        write(folder, named(expression), expression)
    return len(expressions)


# ---- dra-allocate input ----------------------------------------------------------------------

def make_allocator_input():
    folder = reset("allocator_input")
    count = 0
    for scenario in sorted((ROOT / "testdata" / "allocator").iterdir()):
        if not scenario.is_dir():
            continue
        parts = []
        for path in sorted(scenario.iterdir()):
            if path.name.startswith("expected") or path.suffix not in (".yaml", ".yml", ".json"):
                continue
            content = path.read_text()
            if path.suffix == ".json":  # a JSON document is valid YAML flow style
                content = json.dumps(json.loads(content))
            parts.append(content)
        if parts:
            write(folder, scenario.name, "\n---\n".join(parts))
            count += 1
    write(folder, "demo-gpu-nic-cpu", (ROOT / "testdata" / "demo" / "gpu-nic-cpu.yaml").read_text())
    vf = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: vf, namespace: default}
spec:
  devices:
    requests:
    - name: vf
      exactly: {deviceClassName: vf.numa.dra.dev, count: 2}
    - name: cpu
      exactly:
        deviceClassName: cpu.numa.dra.dev
        capacity: {requests: {cpu: "4"}}
    constraints:
    - matchAttribute: resource.kubernetes.io/numaNode
"""
    write(folder, "fixed-node-vf-cpu", vf)
    return count + 2


# ---- checkpoint ------------------------------------------------------------------------------

def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def record(claim):
    compact = json.dumps(claim, separators=(",", ":"), ensure_ascii=False)
    document = {"version": 1, "checksum": "crc32c:%08x" % crc32c(compact.encode()),
                "claim": claim}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def make_checkpoint():
    folder = reset("checkpoint")
    gpu = {"request": "gpu", "pool": "node-a", "device": "gpu-0000-21-00-0", "kind": "gpu",
           "pciAddress": "0000:21:00.0", "vendorID": 4318, "deviceID": 9008,
           "serialNumber": "82-a3-d7-5c-05-44-0c-62",
           "cdiDeviceIDs": ["numa.dra.dev/claim=uid-1-gpu-0000-21-00-0",
                            "numa.dra.dev/metadata=uid-1_gpu"]}
    nic = {"request": "nic", "pool": "node-a", "device": "nic-0000-c1-00-0", "kind": "nic",
           "pciAddress": "0000:c1:00.0", "vendorID": 5555, "deviceID": 4129,
           "interfaceName": "ens5f0np0", "hardwareAddress": "b8:ce:f6:03:00:7c",
           "cdiDeviceIDs": ["numa.dra.dev/claim=uid-1-nic-0000-c1-00-0"]}
    cpu = {"request": "cpus/fast", "pool": "node-a", "device": "cpu-numa-1",
           "shareID": "7b3c6a1e-0000-4000-8000-000000000001", "kind": "cpu", "vendorID": 0,
           "deviceID": 0, "numaNode": 1, "cpus": [8, 9, 40, 41],
           "consumedCapacity": {"cpu": "4", "memory": "8Gi"},
           "cdiDeviceIDs": ["numa.dra.dev/claim=uid-1-cpu-numa-1-7b3c6a1e"]}
    admin = dict(gpu, adminAccess=True, request="watch")
    base = {"namespace": "default", "name": "train", "uid": "uid-1",
            "state": "PrepareCompleted", "bootId": "3c1b0d1e-9a0b-4c1d-8e2f-1a2b3c4d5e6f",
            "devices": [gpu], "files": ["/var/run/cdi/numa.dra.dev-claim_uid-1.json"],
            "metadataGenerations": {"gpu": 1}}
    claims = [
        base,
        dict(base, devices=[gpu, nic, cpu], podClaimName="gpus",
             metadataGenerations={"gpu": 3, "nic": 1, "cpus": 2}),
        dict(base, state="PrepareStarted", devices=[cpu]),
        dict(base, devices=[admin]),
        dict(base, uid="0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", name="ünïcode-ñame",
             devices=[], files=[], metadataGenerations={}),
    ]
    for claim in claims:
        text = record(claim)
        write(folder, named(text), text)
    # Damaged on purpose: a checksum mismatch, a newer version, a wrong type behind a valid
    # checksum, truncation, not JSON.
    good = record(base)
    write(folder, "mismatch", good.replace('"train"', '"trian"'))
    write(folder, "newer-version", good.replace('"version": 1', '"version": 2'))
    write(folder, "wrong-type", record(dict(base, devices=[dict(gpu, vendorID="10de")])))
    write(folder, "truncated", good[: len(good) // 2])
    write(folder, "not-json", "version: 1\n")
    return len(claims) + 5


# ---- DRA gRPC requests -----------------------------------------------------------------------

def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def claim_message(ns, name, uid):
    out = b""
    if ns is not None:
        out += field(1, ns.encode())
    if uid is not None:
        out += field(2, uid.encode())
    if name is not None:
        out += field(3, name.encode())
    return out


def request(*claims):
    return b"".join(field(1, claim_message(*claim)) for claim in claims)


def dra_input(flags, claims, claim_text):
    message = request(*claims)
    return bytes([flags]) + struct.pack("<H", len(message)) + message + claim_text.encode()


def resource_claim(uid, results, name="train", annotations=None, allocated=True):
    metadata = {"name": name, "namespace": "default", "uid": uid}
    if annotations:
        metadata["annotations"] = annotations
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata,
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": "gpu.numa.dra.dev"}}]}}}
    if allocated:
        claim["status"] = {"allocation": {"devices": {"results": results}}}
    return claim


def result(request_name, device, **extra):
    out = {"request": request_name, "driver": "numa.dra.dev", "pool": "fuzz-node",
           "device": device}
    out.update(extra)
    return out


def to_yaml(value, indent=0):
    """Block YAML for the dry-run file source (strings quoted)."""
    pad = "  " * indent
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{key}:\n{to_yaml(item, indent + 1)}")
            else:
                lines.append(f"{pad}{key}: {json.dumps(item)}")
        return "\n".join(lines)
    if isinstance(value, list):
        lines = []
        for item in value:
            text = to_yaml(item, indent + 1).lstrip()
            lines.append(f"{pad}- {text}")
        return "\n".join(lines)
    return pad + json.dumps(value)


def make_dra_service():
    folder = reset("dra_service")
    gpu = [result("gpu", "gpu-0000-21-00-0")]
    amd = [result("gpu", "gpu-0000-a3-00-0")]
    nic = [result("nic", "nic-0000-c1-00-0", consumedCapacity={"bandwidth": "100G"})]
    cpu = [result("cpu", "cpu-numa-3", shareID="share-1", consumedCapacity={"cpu": "2"}),
           result("cpu", "cpu-numa-3", shareID="share-2")]
    mixed = gpu + nic + [result("cpu/fast", "cpu-numa-1", shareID="s",
                                consumedCapacity={"cpu": "4", "memory": "1Gi"})]
    admin = [result("gpu", "gpu-0000-21-00-0", adminAccess=True)]
    other = [result("gpu", "gpu-0000-21-00-0"),
             {"request": "x", "driver": "other.dev", "pool": "p", "device": "d"}]
    wrong_pool = [dict(gpu[0], pool="another-node")]
    one = [("default", "train", "uid-1")]
    cases = {
        "gpu-v1": (0, one, resource_claim("uid-1", gpu)),
        "gpu-v1beta1": (1, one, resource_claim("uid-1", amd)),
        "nic": (0, one, resource_claim("uid-1", nic)),
        "cpu-shares": (0, one, resource_claim("uid-1", cpu)),
        "mixed-annotated": (1, one, resource_claim(
            "uid-1", mixed,
            annotations={"resource.kubernetes.io/pod-claim-name": "gpus"})),
        "admin": (0, one, resource_claim("uid-1", admin)),
        "other-driver": (0, one, resource_claim("uid-1", other)),
        "wrong-pool": (0, one, resource_claim("uid-1", wrong_pool)),
        "not-allocated": (0, one, resource_claim("uid-1", [], allocated=False)),
        "uid-mismatch": (0, one, resource_claim("uid-2", gpu)),
        "patched-identity": (4, [("team", "job", "uid-9")], resource_claim("x", gpu)),
        "two-claims-same-device": (0, [("default", "train", "uid-1"), ("default", "b", "uid-2")],
                                   resource_claim("uid-1", gpu)),
        "duplicate-and-missing-uid": (0, [("default", "train", "uid-1"),
                                          ("default", "train", "uid-1"),
                                          ("default", "nouid", None)],
                                      resource_claim("uid-1", gpu)),
        "empty-request": (0, [], {}),
        "not-json": (0, one, None),
    }
    for name, (flags, claims, claim) in cases.items():
        text = "{not json" if claim is None else json.dumps(claim)
        write(folder, name, dra_input(flags, claims, text))
    for name, results in (("yaml-gpu", gpu), ("yaml-cpu", cpu)):
        write(folder, name, dra_input(2, one, to_yaml(resource_claim("uid-1", results)) + "\n"))
    return len(cases) + 2


def main():
    targets = {"cel": make_cel, "allocator_input": make_allocator_input,
               "checkpoint": make_checkpoint, "dra_service": make_dra_service}
    wanted = sys.argv[1:] or list(targets)
    for target in wanted:
        print(f"{target}: {targets[target]()} seeds")


if __name__ == "__main__":
    main()
