#!/usr/bin/python3
"""Generate mocked Linux sysfs trees (plus /proc/cpuinfo) for the DRA node driver tests.

Usage:
    /usr/bin/python3 testdata/generate_sysfs.py --out DIR [--machine NAME ...] [--exclude NAME ...]
    /usr/bin/python3 testdata/generate_sysfs.py --list
    /usr/bin/python3 testdata/generate_sysfs.py --facts [--machine NAME ...]

Each machine is written to ``DIR/<name>/sys/...`` (the ``sys`` dir plays ``/sys``; pass it as the
driver's sysfs root) and ``DIR/<name>/proc/cpuinfo`` (so ``DIR/<name>`` works as an hwloc
``HWLOC_FSROOT`` / ``lstopo --input``), plus
``DIR/<name>/proc/sys/kernel/random/boot_id``, and
``DIR/<name>/proc/driver/nvidia/gpus/<bdf>/information`` for every function bound to ``nvidia``
(Device Minor = its index among them in address order).
``DIR/<name>`` is deleted and recreated on every run; the output is byte-for-byte deterministic,
every symlink is relative and no directory is left empty.  Only the Python 3 standard library is
used.  File formats follow shared/spec/topology.md (A.1-A.9).

Why one file of ~1,700 lines: the machines are data (the table at the end, each a few builder
calls) and the writers of each sysfs file format beside the schema they write; a new machine is
one entry here, and the checked-in check_generator.sh tests the whole file.

Schema (dataclasses below; builder helpers keep a machine to a few lines)
--------------------------------------------------------------------------
Machine
    name, description        identity; ``description`` is shown by ``--list``.
    cpus: [Cpu]              build with ``cpu_layout()``; ``Cpu(id, node, package, core, die,
                             thread, online)``.  Offline CPUs get ``online``=0 and no topology dir.
    nodes: [Node]            ``Node(id, mem_gib, normal_memory=True, meminfo=None)``; the node's
                             cpulist is derived from the CPUs.  ``meminfo`` = raw override text.
    slit                     distance matrix, *positional over the sorted online nodes* (row k is
                             written to the k-th online node).  Helpers: ``slit_socket()``.
    distance_override        {node_id: str | None}: raw content of nodeN/distance, None = no file.
    roots: [Root]            PCI root buses ``Root(name="pci0000:17", node=..., children=[Func])``.
                             ``prefix`` puts the root below other devices (Hyper-V VMBus path).
    numa_dir                 False = no devices/system/node at all (kernel without CONFIG_NUMA).
    possible_cpus            nr_cpu_ids (cpumask width, cpu/possible); default = present CPUs.
    kernel_max, cpu0_online_file, package_id (False: no physical_package_id file),
    iommu (assign iommu groups), aer (AER files on PCIe functions), arch ("x86" or "generic"
    /proc/cpuinfo), cpu_model, cpu_vendor.
    extra_links / allow_dangling   raw symlinks {path: target} and paths allowed to dangle.
    node_online_file         False = no devices/system/node/online (the nodeN folders tell).
    legacy_kernel            True = a 2.6-era kernel: no *_list files (nodeN/cpulist,
                             topology/*_list, local_cpulist), only the old topology masks
                             (thread_siblings, core_siblings) and no die/cluster files.
    nul_padded               True = every file under devices/system/{node,cpu} ends in "\n\0",
                             as an ARM server's nodeN/cpulist ("32-63\n\0") does.
    committed                False = benchmark machine, generate only (not meant for git).
Func (one PCI function; the tree nests as in /sys/devices)
    bdf, vendor, device, cls, subsys=(vendor, device), rev, driver (None = unbound),
    link: Link | None (None = legacy PCI, no *_link_* files), numa_node (None = inherit the
    root's), children ([Func] below a bridge, or a nested [Root] for Intel VMD),
    classdevs ([NetDev | IbDev | Drm | Nvme]), virtio (VirtioDev, for virtio-pci functions),
    sriov (Sriov), aer (None = auto), iommu ("own", "parent" = share the parent's group, "none"),
    sec_bus (secondary bus of an empty bridge), overrides {file: raw content | None (delete)}.
Sriov: total, num, offset, stride, vf_device, vf_driver (str or list per VF), vf_ifname
    (format string with {k}); VF BDFs are computed from offset/stride with routing-ID arithmetic.

The expected facts (numaNode lists a correct reader computes) are printed by ``--facts``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import posixpath
import re
import shutil
import struct
import sys
from dataclasses import dataclass, field
from typing import Optional, Union


# ---------------------------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------------------------

@dataclass
class Cpu:
    id: int
    node: int
    package: int
    core: int
    die: int = 0
    thread: int = 0
    online: bool = True


@dataclass
class Node:
    id: int
    mem_gib: float
    normal_memory: bool = True      # False for GPU/HBM memory-only nodes (ZONE_MOVABLE)
    meminfo: Optional[str] = None   # raw override


@dataclass
class Link:
    cur_speed: str
    cur_width: int
    max_speed: str
    max_width: int


@dataclass
class NetDev:
    ifname: str
    speed: int = -1
    type: int = 1                   # 1 ether, 32 infiniband
    mtu: int = 1500
    operstate: str = "up"
    carrier: int = 1
    dev_port: int = 0
    mac: Optional[str] = None       # default: derived from the OUI + a hash
    oui: str = "02:00:00"


@dataclass
class IbDev:
    name: str                       # mlx5_0
    uverbs: int                     # uverbsN
    rate: str = "100 Gb/sec (4X EDR)"
    link_layer: str = "InfiniBand"  # or Ethernet (RoCE)
    hca_type: str = "MT4129"
    fw_ver: str = "28.39.1002"


@dataclass
class Drm:
    card: int
    render: bool = True


@dataclass
class Nvme:
    name: str                       # nvme0
    model: str = "Mock NVMe SSD"


@dataclass
class VirtioDev:
    index: int                      # virtioN
    devid: int                      # virtio device type (1 net, 2 block, ...)
    driver: str
    netdevs: list = field(default_factory=list)


@dataclass
class Sriov:
    total: int
    num: int
    offset: int
    stride: int
    vf_device: int
    vf_driver: Union[str, list, None] = None
    vf_ifname: Optional[str] = None  # e.g. "ens1f0v{k}"
    vf_speed: Optional[int] = None   # default: PF netdev speed


@dataclass
class Func:
    bdf: str
    vendor: int
    device: int
    cls: int
    subsys: Optional[tuple] = None
    rev: int = 0
    driver: Optional[str] = None
    link: Optional[Link] = None
    numa_node: Optional[int] = None
    children: list = field(default_factory=list)
    classdevs: list = field(default_factory=list)
    virtio: Optional[VirtioDev] = None
    sriov: Optional[Sriov] = None
    aer: Optional[bool] = None
    aer_counts: dict = field(default_factory=dict)
    iommu: str = "own"
    sec_bus: Optional[int] = None
    overrides: dict = field(default_factory=dict)
    # filled in by the writer for VFs
    physfn: Optional[str] = None


@dataclass
class Root:
    name: str                       # pci0000:17
    node: int = -1
    children: list = field(default_factory=list)
    prefix: str = ""                # path below sys/devices/ (Hyper-V VMBus), no trailing slash


@dataclass
class Machine:
    name: str
    description: str
    cpus: list
    nodes: list
    slit: Optional[list]
    roots: list
    cpu_model: str = "Mock CPU"
    cpu_vendor: str = "GenuineIntel"
    arch: str = "x86"
    possible_cpus: Optional[int] = None
    kernel_max: int = 8191
    numa_dir: bool = True
    distance_override: dict = field(default_factory=dict)
    cpu0_online_file: bool = False
    package_id: bool = True
    iommu: bool = True
    aer: bool = True
    extra_links: dict = field(default_factory=dict)
    allow_dangling: list = field(default_factory=list)
    committed: bool = True
    node_online_file: bool = True
    legacy_kernel: bool = False
    nul_padded: bool = False


# ---------------------------------------------------------------------------------------------
# Builder helpers
# ---------------------------------------------------------------------------------------------

_GEN_NEW = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe",
            5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}
_GEN_OLD = {1: "2.5 GT/s", 2: "5 GT/s", 3: "8 GT/s", 4: "16 GT/s", 5: "32 GT/s"}


def pcie(gen, width, cur_gen=None, cur_width=None, old=False):
    """PCIe link; ``old`` = pre-5.1 kernel strings ('8 GT/s')."""
    t = _GEN_OLD if old else _GEN_NEW
    return Link(t[cur_gen or gen], cur_width or width, t[gen], width)


# Root-complex integrated endpoint (host bridge): PCIe function without a link.
RCIEP = Link("Unknown", 0, "Unknown", 0)
# Sentinel for builder ``link`` arguments: "use the builder's default link" (None = no link files).
DEFAULT = "default"


def _link(link, gen, width):
    return pcie(gen, width) if link is DEFAULT else link


def cpu_layout(sockets, nodes_per_socket, cores_per_node, threads=1, order="linear",
               node_ids=None, package_ids=None, core_ids=None, offline=()):
    """Build the CPU list.

    order: "linear"    second threads follow all first threads (cpu i and i+ncores are siblings)
           "adjacent"  siblings are consecutive (cpu 2k, 2k+1)
           "alternate" sockets interleave (even CPUs socket 0, odd socket 1), then "linear"
    node_ids[s][n] maps (socket, node-in-socket) to a node id; package_ids[s] the package id;
    core_ids[i] the core id of the i-th core of a socket (non-dense ids are common).
    """
    cores = []
    for s in range(sockets):
        for ni in range(nodes_per_socket):
            node = node_ids[s][ni] if node_ids else s * nodes_per_socket + ni
            for c in range(cores_per_node):
                cis = ni * cores_per_node + c
                cores.append((s, node, core_ids[cis] if core_ids else cis, cis))
    ncores = len(cores)
    cpus = []
    for k, (s, node, cid, cis) in enumerate(cores):
        for t in range(threads):
            if order == "linear":
                cpu = t * ncores + k
            elif order == "adjacent":
                cpu = k * threads + t
            elif order == "alternate":
                cpu = t * ncores + cis * sockets + s
            else:
                raise ValueError(order)
            pkg = package_ids[s] if package_ids else s
            cpus.append(Cpu(cpu, node, pkg, cid, 0, t, cpu not in offline))
    cpus.sort(key=lambda c: c.id)
    assert [c.id for c in cpus] == list(range(len(cpus)))
    return cpus


def slit_socket(node_sockets, local=10, same=12, remote=32):
    """Symmetric SLIT from a list of socket ids per node (in online-node order)."""
    n = len(node_sockets)
    return [[local if i == j else (same if node_sockets[i] == node_sockets[j] else remote)
             for j in range(n)] for i in range(n)]


def parse_slit(text):
    return [[int(x) for x in row.split()] for row in text.strip().splitlines()]


def nodes(ids, mem_gib):
    return [Node(i, mem_gib) for i in ids]


def host_bridge(bdf, vendor=0x1022, device=0x14a4, **kw):
    kw.setdefault("aer", False)
    return Func(bdf, vendor, device, 0x060000, link=kw.pop("link", RCIEP), **kw)


def bridge(bdf, children=(), vendor=0x1022, device=0x14ab, gen=4, width=16, driver="pcieport",
           link=DEFAULT, **kw):
    """Root port / switch port (class 0x060400, bound to pcieport)."""
    return Func(bdf, vendor, device, 0x060400, driver=driver, link=_link(link, gen, width),
                children=list(children), **kw)


def switch(up_bdf, downs, vendor=0x1000, device=0xc030, gen=5, width=16):
    """PCIe switch: upstream port with downstream ports ``downs`` = [(bdf, [children])]."""
    return bridge(up_bdf, [bridge(d, ch, vendor, device, gen, width) for d, ch in downs],
                  vendor, device, gen, width)


def nvidia_gpu(bdf, device=0x2330, subsys=0x16c1, gen=5, width=16, link=DEFAULT, **kw):
    return Func(bdf, 0x10de, device, 0x030200, subsys=(0x10de, subsys), rev=0xa1,
                driver=kw.pop("driver", "nvidia"), link=_link(link, gen, width), **kw)


def mi300x(bdf, card, **kw):
    return Func(bdf, 0x1002, 0x74a1, 0x120000, subsys=(0x1002, 0x74a1), driver="amdgpu",
                link=pcie(5, 16), classdevs=[Drm(card)], **kw)


def eth_nic(bdf, vendor, device, driver, ifname, speed, gen=4, width=16, oui="02:00:00",
            rdma=None, cls=0x020000, subsys=None, link=DEFAULT, netdev_kw=None, **kw):
    classdevs = [NetDev(ifname, speed, oui=oui, **(netdev_kw or {}))]
    if rdma:
        classdevs.append(rdma)
    return Func(bdf, vendor, device, cls, subsys=subsys, driver=driver,
                link=_link(link, gen, width), classdevs=classdevs, **kw)


def cx7(bdf, ifname, rdma_name, uverbs, speed=200000, **kw):
    rate = {400000: "400 Gb/sec (4X NDR)", 200000: "200 Gb/sec (4X HDR)"}.get(speed, "100 Gb/sec (4X EDR)")
    return eth_nic(bdf, 0x15b3, 0x1021, "mlx5_core", ifname, speed, gen=5, width=16,
                   oui="b8:ce:f6", subsys=(0x15b3, 0x0041),
                   rdma=IbDev(rdma_name, uverbs, rate=rate, link_layer="Ethernet"), **kw)


def cx7_ib(bdf, ifname, rdma_name, uverbs, **kw):
    """ConnectX-7 in InfiniBand mode: class 0x020700, IPoIB netdev (type 32, 20-byte address)."""
    return Func(bdf, 0x15b3, 0x1021, 0x020700, subsys=(0x15b3, 0x0041), driver="mlx5_core",
                link=pcie(5, 16), classdevs=[
                    NetDev(ifname, 400000, type=32, mtu=4092),
                    IbDev(rdma_name, uverbs, rate="400 Gb/sec (4X NDR)")], **kw)


def nvme(bdf, name, vendor=0x144d, device=0xa80a, gen=4, width=4, **kw):
    return Func(bdf, vendor, device, 0x010802, driver="nvme", link=pcie(gen, width),
                classdevs=[Nvme(name)], **kw)


def aspeed_vga(bridge_bdf, vga_bdf, card=None):
    """ASPEED AST2600 BMC: PCIe-to-PCI bridge (unbound) with a legacy VGA function behind it."""
    vga = Func(vga_bdf, 0x1a03, 0x2000, 0x030000, rev=0x52, driver="ast", link=None,
               iommu="parent", classdevs=[Drm(card, render=False)] if card is not None else [])
    return Func(bridge_bdf, 0x1a03, 0x1150, 0x060400, rev=0x06, driver=None, link=pcie(2, 1),
                children=[vga])


def virtio(bdf, devid, cls, index, driver, netdevs=()):
    return Func(bdf, 0x1af4, 0x1040 + devid, cls, subsys=(0x1af4, 0x1100), rev=0x01,
                driver="virtio-pci", link=None, aer=False, iommu="none",
                virtio=VirtioDev(index, devid, driver, list(netdevs)))


# ---------------------------------------------------------------------------------------------
# Machines
# ---------------------------------------------------------------------------------------------

NPS4_SLIT = slit_socket([0, 0, 0, 0, 1, 1, 1, 1], same=12, remote=32)
XEON6_SNC3_SLIT = parse_slit("""
10 15 17 21 28 26
15 10 15 23 26 23
17 15 10 26 23 21
21 28 26 10 15 17
23 26 23 15 10 15
26 23 21 17 15 10
""")
SNC2_INTERLEAVED_SLIT = parse_slit("""
10 21 11 21
21 10 21 11
11 21 10 21
21 11 21 10
""")
CLX_CORE_IDS = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 16, 17, 18, 19, 20, 21, 24, 25, 26,
                27, 28, 29, 30]


def _epyc_nps4():
    roots = []
    for i, base in enumerate([0x00, 0x20, 0x40, 0x60, 0x80, 0xa0, 0xc0, 0xe0]):
        b = lambda bus, d, f=0: f"0000:{base + bus:02x}:{d:02x}.{f}"
        kids = [host_bridge(b(0, 0))]
        if i == 0:
            kids.append(bridge(b(0, 1, 1), [aspeed_vga(b(1, 0), b(2, 0), card=0)]))
        if i == 1:
            kids.append(bridge(b(0, 1, 1), [nvidia_gpu(b(1, 0))], gen=5))
        if i == 2:
            kids.append(bridge(b(0, 7, 1), [Func(b(1, 0), 0x1022, 0x7901, 0x010601, rev=0x91,
                                                 driver="ahci", link=pcie(4, 16))],
                               device=0x14a7))
        if i == 5:
            kids.append(bridge(b(0, 1, 1), [switch(b(1, 0), [(b(2, 0), [mi300x(b(3, 0), card=1)])])],
                               gen=5))
        if i == 6:
            kids.append(bridge(b(0, 1, 1), [cx7(b(1, 0), "ens5f0np0", "mlx5_0", 0)], gen=5))
        roots.append(Root(f"pci0000:{base:02x}", node=i, children=kids))
    return Machine(
        "epyc-2s-nps4", "AMD EPYC 9825-like 2S NPS4: 8 nodes, 64 CPUs, MI300X node 5, H100 node 1, "
        "CX-7 node 6",
        cpus=cpu_layout(2, 4, 4, threads=2, order="linear"),
        nodes=nodes(range(8), 64), slit=NPS4_SLIT, roots=roots,
        cpu_model="AMD EPYC 9825 144-Core Processor", cpu_vendor="AuthenticAMD")


def _xeon_6320r():
    return Machine(
        "xeon-6320r-2s", "Dual Xeon Gold 6320R: 2 nodes, 104 CPUs (even=socket 0), 6 PCIe roots, "
        "X710 on pci0000:17, A40 on pci0000:3a and pci0000:ae",
        cpus=cpu_layout(2, 1, 26, threads=2, order="alternate", core_ids=CLX_CORE_IDS),
        nodes=nodes([0, 1], 192), slit=[[10, 21], [21, 10]],
        roots=[
            Root("pci0000:00", 0, [
                host_bridge("0000:00:00.0", 0x8086, 0x2020),
                Func("0000:00:17.0", 0x8086, 0xa182, 0x010601, rev=0x09, driver="ahci",
                     link=None, aer=False),
                bridge("0000:00:1c.0", [aspeed_vga("0000:01:00.0", "0000:02:00.0", card=0)],
                       0x8086, 0xa190, gen=3, width=1)]),
            Root("pci0000:17", 0, [
                bridge("0000:17:00.0", [
                    eth_nic(f"0000:18:00.{f}", 0x8086, 0x1572, "i40e", f"ens1f{f}", 10000,
                            link=pcie(3, 8, old=True), oui="3c:fd:fe", subsys=(0x8086, 0x0007),
                            rev=0x02, netdev_kw={"dev_port": 0})
                    for f in (0, 1)], 0x8086, 0x2030, gen=3)]),
            Root("pci0000:3a", 0, [
                bridge("0000:3a:00.0", [nvidia_gpu("0000:3b:00.0", 0x2235, 0x145a,
                                                   link=pcie(4, 16, cur_gen=3))],
                       0x8086, 0x2030, gen=3)]),
            Root("pci0000:85", 1, [bridge("0000:85:00.0", [], 0x8086, 0x2030, gen=3, sec_bus=0x86)]),
            Root("pci0000:ae", 1, [
                bridge("0000:ae:00.0", [nvidia_gpu("0000:af:00.0", 0x2235, 0x145a,
                                                   link=pcie(4, 16, cur_gen=3))],
                       0x8086, 0x2030, gen=3)]),
            Root("pci0000:d7", 1, [
                bridge("0000:d7:00.0", [nvme("0000:d8:00.0", "nvme0", 0x8086, 0x0a54, gen=3)],
                       0x8086, 0x2030, gen=3)]),
        ],
        cpu_model="Intel(R) Xeon(R) Gold 6320R CPU @ 2.10GHz")


def _gpu4_nic():
    def gpu_root(name, node, base, gpu_idx, extra_downs=()):
        b = lambda bus, d=0, f=0: f"0000:{base + bus:02x}:{d:02x}.{f}"
        link = pcie(5, 16, cur_gen=3, cur_width=8) if gpu_idx == 3 else None
        aer = {"cor": {"RxErr": 12, "BadTLP": 3}} if gpu_idx == 3 else {}
        gpu = nvidia_gpu(b(3), link=link, aer_counts=aer)
        downs = [(b(2, 0), [gpu])] + list(extra_downs)
        return Root(name, node, [bridge(b(0, 1), [switch(b(1), downs)], 0x8086, 0x352a, gen=5)])

    return Machine(
        "gpu4-nic", "Dell XE8640-like: 2S Xeon, 2 nodes, 32 CPUs (possible 64), 4x H100 SXM "
        "behind PCIe switches, CX-7 IB under GPU 0's switch, GPU 3 downtrained",
        cpus=cpu_layout(2, 1, 16), possible_cpus=64,
        nodes=nodes([0, 1], 256), slit=[[10, 21], [21, 10]],
        roots=[
            Root("pci0000:00", 0, [host_bridge("0000:00:00.0", 0x8086, 0x09a2)]),
            gpu_root("pci0000:15", 0, 0x15, 0,
                     [("0000:17:01.0", [cx7_ib("0000:19:00.0", "ib0", "mlx5_0", 0)])]),
            gpu_root("pci0000:37", 0, 0x37, 1),
            gpu_root("pci0000:97", 1, 0x97, 2),
            gpu_root("pci0000:b7", 1, 0xb7, 3),
        ],
        cpu_model="Intel(R) Xeon(R) Gold 6426Y")


def _xeon6_snc3():
    def port(root, node, dev):
        return Root(f"pci0000:{root:02x}", node, [
            bridge(f"0000:{root:02x}:01.0", [dev], 0x8086, 0x0db0, gen=5)])
    return Machine(
        "xeon6-snc3-2s", "Xeon 6 (Granite Rapids) 2S SNC3: 6 nodes x 8 CPUs, asymmetric SLIT",
        cpus=cpu_layout(2, 3, 8), nodes=nodes(range(6), 64), slit=XEON6_SNC3_SLIT,
        roots=[
            Root("pci0000:00", 0, [host_bridge("0000:00:00.0", 0x8086, 0x09a2)]),
            port(0x15, 0, eth_nic("0000:16:00.0", 0x8086, 0x1592, "ice", "ens1f0np0", 100000,
                                        oui="b4:96:91")),
            port(0x37, 1, nvidia_gpu("0000:38:00.0", 0x2331, 0x1626)),
            port(0x59, 2, nvidia_gpu("0000:5a:00.0", 0x2331, 0x1626)),
            Root("pci0000:80", 3, [host_bridge("0000:80:00.0", 0x8086, 0x09a2)]),
            port(0x95, 4, eth_nic("0000:96:00.0", 0x8086, 0x1592, "ice", "ens4f0np0", 100000,
                                        oui="b4:96:91")),
            Root("pci0000:f3", 5, [host_bridge("0000:f3:00.0", 0x8086, 0x09a2)]),
        ],
        cpu_model="Intel(R) Xeon(R) 6980P")


def _sriov_nic():
    vf_drv = ["iavf"] * 6 + ["vfio-pci"] * 2
    pf0 = eth_nic("0000:01:00.0", 0x8086, 0x1593, "ice", "ens1f0", 100000, oui="b4:96:91",
                  rev=0x02, sriov=Sriov(64, 8, 16, 1, 0x1889, vf_drv, "ens1f0v{k}"))
    pf1 = eth_nic("0000:01:00.1", 0x8086, 0x1593, "ice", "ens1f1", -1, oui="b4:96:91", rev=0x02,
                  netdev_kw={"operstate": "down", "carrier": 0, "dev_port": 0},
                  sriov=Sriov(64, 0, 79, 1, 0x1889))
    return Machine(
        "sriov-nic", "1 socket, 1 node, 16 CPUs; E810 PF with 8 VFs (6 iavf, 2 vfio-pci) and a "
        "second PF with 0 VFs",
        cpus=cpu_layout(1, 1, 8, threads=2), nodes=nodes([0], 64), slit=[[10]],
        roots=[Root("pci0000:00", 0, [
            host_bridge("0000:00:00.0", 0x8086, 0x4c43),
            bridge("0000:00:01.0", [pf0, pf1], 0x8086, 0x4c01, gen=4)])],
        cpu_model="Intel(R) Xeon(R) E-2388G CPU @ 3.20GHz")


def _vm():
    return Machine(
        "vm-noaffinity", "KVM VM (topology.md A.9): 1 node, 2 CPUs, virtio devices with "
        "numa_node -1, virtio-net eth0 one level below the PCI function, passed-through T4",
        cpus=cpu_layout(1, 1, 2), nodes=nodes([0], 3.6), slit=[[10]], kernel_max=255,
        iommu=False, aer=False,
        roots=[Root("pci0000:00", -1, [
            host_bridge("0000:00:00.0", 0x8086, 0x0d57, link=None, subsys=(0, 0)),
            virtio("0000:00:01.0", 5, 0xffff00, 0, "virtio_balloon"),
            virtio("0000:00:02.0", 2, 0x010000, 1, "virtio_blk"),
            virtio("0000:00:03.0", 1, 0x020000, 2, "virtio_net",
                   [NetDev("eth0", -1, mtu=1400, oui="52:54:00")]),
            virtio("0000:00:04.0", 0x13, 0x078000, 3, "vmw_vsock_virtio_transport"),
            virtio("0000:00:05.0", 4, 0x00ff00, 4, "virtio_rng"),
            nvidia_gpu("0000:00:06.0", 0x1eb8, 0x12a2, link=None, aer=False, iommu="none"),
        ])],
        cpu_model="Intel Xeon Processor (Cascadelake)")


def _laptop():
    return Machine(
        "laptop", "Single-node laptop: 8 CPUs (4c x 2t, adjacent siblings), i915 iGPU, Wi-Fi, NVMe",
        cpus=cpu_layout(1, 1, 4, threads=2, order="adjacent"), nodes=nodes([0], 16),
        slit=[[10]],
        roots=[Root("pci0000:00", 0, [
            host_bridge("0000:00:00.0", 0x8086, 0xa706),
            Func("0000:00:02.0", 0x8086, 0xa7a0, 0x030000, rev=0x04, driver="i915", link=None,
                 aer=False, classdevs=[Drm(0)]),
            bridge("0000:00:06.0", [nvme("0000:01:00.0", "nvme0")], 0x8086, 0xa74d, gen=4, width=4),
            Func("0000:00:14.3", 0x8086, 0x51f0, 0x028000, rev=0x01, driver="iwlwifi", link=None,
                 aer=False, classdevs=[NetDev("wlp0s20f3", -1, oui="a4:c3:f0")]),
        ])],
        cpu_model="13th Gen Intel(R) Core(TM) i7-1360P")


def _big():
    roots = []
    for n, base in enumerate([0x00, 0x20, 0x40, 0x60, 0x80, 0xa0, 0xc0, 0xe0]):
        b = lambda bus, d=0, f=0: f"0000:{base + bus:02x}:{d:02x}.{f}"
        nic = cx7(b(2), f"ens{n + 1}f0np0", f"mlx5_{n}", n,
                  sriov=Sriov(64, 64, 2, 1, 0x101e, "mlx5_core", f"ens{n + 1}f0v{{k}}"))
        roots.append(Root(f"pci0000:{base:02x}", n, [
            host_bridge(b(0)),
            bridge(b(0, 1, 1), [nvidia_gpu(b(1))], gen=5),
            bridge(b(0, 3, 1), [nic], gen=5)]))
    return Machine(
        "big-2s-8n", "Benchmark: 2S NPS4, 8 nodes, 128 CPUs, 8 H100 + 8 CX-7 with 64 VFs each "
        "(512 VFs); generated only, not committed",
        cpus=cpu_layout(2, 4, 8, threads=2), nodes=nodes(range(8), 96), slit=NPS4_SLIT,
        roots=roots, cpu_model="AMD EPYC 9354 32-Core Processor", cpu_vendor="AuthenticAMD",
        committed=False)


def _nps1(name, package_id=True):
    return Machine(
        name, "2S EPYC NPS1: 2 nodes x 8 CPUs, SLIT 10 32, BCM57414 NIC on node 0"
        + ("" if package_id else "; NO physical_package_id files (socket unknown)"),
        cpus=cpu_layout(2, 1, 8), nodes=nodes([0, 1], 128), slit=[[10, 32], [32, 10]],
        package_id=package_id,
        roots=[
            Root("pci0000:00", 0, [
                host_bridge("0000:00:00.0"),
                bridge("0000:00:01.1", [eth_nic("0000:01:00.0", 0x14e4, 0x16d7, "bnxt_en",
                                                "ens1f0np0", 25000, gen=3, width=8,
                                                oui="00:0a:f7")])]),
            Root("pci0000:80", 1, [host_bridge("0000:80:00.0")]),
        ],
        cpu_model="AMD EPYC 72F3 8-Core Processor", cpu_vendor="AuthenticAMD")


def _quad():
    roots = []
    for n, base in enumerate([0x00, 0x40, 0x80, 0xc0]):
        kids = [host_bridge(f"0000:{base:02x}:00.0", 0x8086, 0x2020)] if n == 0 else []
        kids.append(bridge(f"0000:{base:02x}:01.0", [nvidia_gpu(f"0000:{base + 1:02x}:00.0", 0x20b5,
                                                                0x1533, gen=4)],
                           0x8086, 0x2030, gen=3))
        roots.append(Root(f"pci0000:{base:02x}", n, kids))
    return Machine(
        "quad-socket", "4 sockets, 4 nodes x 4 CPUs, SLIT 10/21, one A100 per node",
        cpus=cpu_layout(4, 1, 4), nodes=nodes(range(4), 64),
        slit=slit_socket([0, 1, 2, 3], remote=21), roots=roots,
        cpu_model="Intel(R) Xeon(R) Gold 5222 CPU @ 3.80GHz")


def _snc2():
    return Machine(
        "snc2-interleaved", "Dual Cascade Lake SNC2: nodes 0,2 = socket 0, nodes 1,3 = socket 1, "
        "CX-5 NIC on node 2",
        cpus=cpu_layout(2, 2, 4, order="alternate", node_ids=[[0, 2], [1, 3]]),
        nodes=nodes(range(4), 48), slit=SNC2_INTERLEAVED_SLIT,
        roots=[
            Root("pci0000:00", 0, [host_bridge("0000:00:00.0", 0x8086, 0x2020)]),
            Root("pci0000:3a", 2, [bridge("0000:3a:00.0", [
                eth_nic("0000:3b:00.0", 0x15b3, 0x1017, "mlx5_core", "ens2f0np0", 100000,
                        gen=3, oui="0c:42:a1", rdma=IbDev("mlx5_0", 0, link_layer="Ethernet",
                                                          hca_type="MT4119"))],
                0x8086, 0x2030, gen=3)]),
            Root("pci0000:85", 1, [bridge("0000:85:00.0", [], 0x8086, 0x2030, gen=3, sec_bus=0x86)]),
            Root("pci0000:ae", 3, [bridge("0000:ae:00.0", [], 0x8086, 0x2030, gen=3, sec_bus=0xaf)]),
        ],
        cpu_model="Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz")


def _sparse():
    online = [0, 8, 250, 251, 252, 253, 254, 255]
    slit = [[10 if i == j else (40 if {i, j} == {0, 1} else 80) for j in range(8)]
            for i in range(8)]
    v100 = lambda bdf: nvidia_gpu(bdf, 0x1db1, 0x1212, gen=3)
    ibm = dict(vendor=0x1014, device=0x04c1, gen=4)
    nodes_ = [Node(0, 128), Node(8, 128)] + [Node(i, 15, normal_memory=False) for i in online[2:]]
    return Machine(
        "sparse-gpu-mem", "POWER9/V100-like: online nodes 0,8,250-255 (250-255 CPU-less GPU "
        "memory); distance rows positional over online nodes; 3 GPUs on node 0, 1 on node 8",
        cpus=cpu_layout(2, 1, 4, threads=4, order="adjacent", node_ids=[[0], [8]],
                        package_ids=[0, 8]),
        nodes=nodes_, slit=slit, arch="generic", cpu0_online_file=True, kernel_max=2047,
        cpu_model="POWER9, altivec supported", cpu_vendor="IBM",
        roots=[
            Root("pci0004:00", 0, [bridge("0004:00:00.0", [
                switch("0004:01:00.0", [("0004:02:04.0", [v100("0004:04:00.0")]),
                                        ("0004:02:05.0", [v100("0004:05:00.0")]),
                                        ("0004:02:0d.0", [v100("0004:06:00.0")])],
                       vendor=0x10b5, device=0x8725, gen=3)], **ibm)]),
            Root("pci0035:00", 8, [bridge("0035:00:00.0", [
                switch("0035:01:00.0", [("0035:02:04.0", [v100("0035:04:00.0")])],
                       vendor=0x10b5, device=0x8725, gen=3)], **ibm)]),
        ])


def _no_numa():
    return Machine(
        "no-numa-dir", "Kernel without CONFIG_NUMA: no devices/system/node, 4 CPUs, I210 NIC with "
        "numa_node -1",
        cpus=cpu_layout(1, 1, 4), nodes=nodes([0], 8), slit=None, numa_dir=False,
        roots=[Root("pci0000:00", -1, [
            host_bridge("0000:00:00.0", 0x8086, 0x1980),
            bridge("0000:00:09.0", [eth_nic("0000:01:00.0", 0x8086, 0x1533, "igb", "enp1s0", 1000,
                                            gen=1, width=1, oui="00:1b:21", rev=0x03)],
                   0x8086, 0x19a4, gen=3, width=1)])],
        cpu_model="Intel(R) Atom(TM) CPU C3558 @ 2.20GHz")


def _missing_distance():
    return Machine(
        "missing-distance", "2 nodes; node0/distance is empty (0 bytes), node1/distance missing",
        cpus=cpu_layout(2, 1, 4), nodes=nodes([0, 1], 32), slit=[[10, 21], [21, 10]],
        distance_override={0: "", 1: None},
        roots=[
            Root("pci0000:00", 0, [host_bridge("0000:00:00.0", 0x8086, 0x2020),
                                   bridge("0000:00:01.0", [nvme("0000:01:00.0", "nvme0")],
                                          0x8086, 0x2030)]),
            Root("pci0000:80", 1, [bridge("0000:80:01.0", [
                eth_nic("0000:81:00.0", 0x8086, 0x1572, "i40e", "ens2f0", 10000, gen=3, width=8,
                        oui="3c:fd:fe")], 0x8086, 0x2030)]),
        ],
        cpu_model="Intel(R) Xeon(R) Silver 4108 CPU @ 1.80GHz")


def _hyperv():
    guid = "47505500-0001-0000-3130-444531303244"
    gpu = nvidia_gpu("0001:00:00.0", 0x1eb8, 0x12a2, link=pcie(3, 16), aer=False, iommu="none",
                     numa_node=0)
    vmd_nvme = nvme("10000:e0:00.0", "nvme0", 0x144d, 0xa808, aer=False, iommu="none")
    vmd = Func("0000:00:0e.0", 0x8086, 0x9a0b, 0x010400, driver="vmd", link=RCIEP, aer=False,
               iommu="none", children=[Root("pci10000:e0", 0, [vmd_nvme])])
    return Machine(
        "hyperv-nested", "Azure-like: T4 GPU under VMBus (devices/LNXSYSTM:00/.../pci0001:00), "
        "plus an NVMe below an Intel VMD nested root pci10000:e0",
        cpus=cpu_layout(1, 1, 4, threads=2), nodes=nodes([0], 56), slit=[[10]], iommu=False,
        aer=False,
        roots=[
            Root("pci0000:00", 0, [host_bridge("0000:00:00.0", 0x8086, 0x9a14), vmd]),
            Root("pci0001:00", 0, [gpu],
                 prefix=f"LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/{guid}"),
        ],
        cpu_model="AMD EPYC 7V12 64-Core Processor", cpu_vendor="AuthenticAMD")


def _offline():
    return Machine(
        "offline-cpus", "1 socket, 1 node, 8 CPUs; cpu2 and cpu5 offline (online=0, no topology)",
        cpus=cpu_layout(1, 1, 8, offline=(2, 5)), nodes=nodes([0], 32), slit=[[10]],
        roots=[Root("pci0000:00", 0, [
            host_bridge("0000:00:00.0", 0x8086, 0x3e30),
            bridge("0000:00:01.0", [nvme("0000:01:00.0", "nvme0")], 0x8086, 0x1901, gen=3)])],
        cpu_model="Intel(R) Core(TM) i7-9700 CPU @ 3.00GHz")


def _bad_files():
    trunc = "Node 1 MemTotal:       33554432 kB\nNode 1 MemFree:        3019898"
    m = Machine(
        "bad-files", "Robustness: garbage numa_node, empty class, max_link_speed Unknown, "
        "truncated meminfo, non-numeric distance token, dangling bus/pci/devices link",
        cpus=cpu_layout(2, 1, 4), nodes=[Node(0, 32), Node(1, 32, meminfo=trunc)],
        slit=[[10, 21], [21, 10]], distance_override={1: "21 abc\n"},
        roots=[
            Root("pci0000:00", 0, [
                host_bridge("0000:00:00.0", 0x8086, 0x2020),
                bridge("0000:00:01.0", [eth_nic("0000:01:00.0", 0x8086, 0x1572, "i40e", "ens1f0",
                                                10000, gen=3, width=8, oui="3c:fd:fe",
                                                overrides={"numa_node": "garbage\n"})],
                       0x8086, 0x2030),
                # A tree that lost its class everywhere: empty class file, uevent without
                # PCI_CLASS and a garbled PCI_ID.
                bridge("0000:00:02.0", [nvidia_gpu("0000:02:00.0", 0x2235, 0x145a, gen=4,
                                                   overrides={"class": "", "uevent": (
                                                       "DRIVER=nvidia\nPCI_ID=10DE\n"
                                                       "PCI_SLOT_NAME=0000:02:00.0\n")})],
                       0x8086, 0x2030),
            ]),
            Root("pci0000:80", 1, [
                host_bridge("0000:80:00.0", 0x8086, 0x2020),
                bridge("0000:80:01.0", [nvme("0000:81:00.0", "nvme0",
                                             overrides={"max_link_speed": "Unknown\n"})],
                       0x8086, 0x2030)]),
        ],
        cpu_model="Intel(R) Xeon(R) Silver 4108 CPU @ 1.80GHz")
    m.extra_links = {"sys/bus/pci/devices/0000:00:1f.7": "../../../devices/pci0000:00/0000:00:1f.7"}
    m.allow_dangling = list(m.extra_links)
    return m


def _arm_nul_padded():
    return Machine(
        "arm-nul-padded", "ARM server, 2 sockets x 32 cores, node 1 = CPUs 32-63; every file under "
        "devices/system/{node,cpu} ends in NUL after the newline (nodeN/cpulist = '32-63\\n\\0')",
        cpus=cpu_layout(2, 1, 32), nodes=nodes([0, 1], 64), slit=[[10, 20], [20, 10]],
        nul_padded=True, arch="generic", cpu_vendor="ARM", cpu_model="Neoverse-N1",
        roots=[
            Root("pci0000:00", 0, [bridge("0000:00:01.0", [
                cx7("0000:01:00.0", "enP1p1s0f0np0", "mlx5_0", 0)], 0x1def, 0xe100)]),
            Root("pci0000:80", 1, [bridge("0000:80:01.0", [nvme("0000:81:00.0", "nvme0")],
                                          0x1def, 0xe100)]),
        ])


def _legacy_kernel():
    return Machine(
        "legacy-kernel", "2S Westmere on a 2.6-era kernel: no node/online, no cpulist (nodeN/cpumap "
        "and nodeN/cpuM links), no *_list files, only thread/core_siblings masks; node 0 = "
        "CPUs 0-5,12-17 (cpu i sibling of i+12)",
        cpus=cpu_layout(2, 1, 6, threads=2), nodes=nodes([0, 1], 24),
        slit=[[10, 20], [20, 10]], node_online_file=False, legacy_kernel=True,
        roots=[
            Root("pci0000:00", 0, [
                host_bridge("0000:00:00.0", 0x8086, 0x3406),
                bridge("0000:00:03.0", [eth_nic("0000:01:00.0", 0x8086, 0x10fb, "ixgbe", "eth0",
                                                10000, gen=2, width=8, oui="00:1b:21")],
                       0x8086, 0x340a, gen=2)]),
            Root("pci0000:80", 1, [
                bridge("0000:80:07.0", [nvidia_gpu("0000:81:00.0", 0x1094, 0x0888, gen=2)],
                       0x8086, 0x340e, gen=2)]),
        ],
        cpu_model="Intel(R) Xeon(R) CPU X5650 @ 2.67GHz")


def _read_host(sysroot, path, default=None):
    try:
        with open(os.path.join(sysroot, path)) as f:
            return f.read().strip("\n\0 ")
    except OSError:
        if default is None:
            raise SystemExit(f"--host-mirror: cannot read {os.path.join(sysroot, path)}")
        return default


def _parse_list(text):
    ids = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        ids.extend(range(int(low), int(high or low) + 1))
    return ids


def _host_mirror(sysroot):
    """This machine's CPUs, packages, cores, NUMA nodes, memory and SLIT as read from ``sysroot``
    (its /sys), with one PCIe root per node holding an H100 and a CX-7: a mocked machine on which
    a container's cpuset is real (the node tier pins containers to these CPUs and nodes)."""
    cpu_dir, node_dir = "devices/system/cpu", "devices/system/node"
    online = set(_parse_list(_read_host(sysroot, f"{cpu_dir}/online")))
    present = _parse_list(_read_host(sysroot, f"{cpu_dir}/present", _read_host(sysroot, f"{cpu_dir}/online")))
    node_ids = _parse_list(_read_host(sysroot, f"{node_dir}/online", "0"))
    node_of = {}
    for n in node_ids:
        for cpu in _parse_list(_read_host(sysroot, f"{node_dir}/node{n}/cpulist", "")):
            node_of[cpu] = n
    cpus = []
    for cpu in present:
        topo = f"{cpu_dir}/cpu{cpu}/topology"
        if cpu not in online:
            cpus.append(Cpu(cpu, node_of.get(cpu, node_ids[0]), 0, 0, online=False))
            continue
        siblings = _parse_list(_read_host(sysroot, f"{topo}/thread_siblings_list", str(cpu)))
        cpus.append(Cpu(cpu, node_of.get(cpu, node_ids[0]),
                        int(_read_host(sysroot, f"{topo}/physical_package_id", "0")),
                        int(_read_host(sysroot, f"{topo}/core_id", str(cpu))),
                        thread=sorted(siblings).index(cpu) if cpu in siblings else 0))
    mem_kb = {}
    for n in node_ids:
        match = re.search(r"MemTotal:\s+(\d+) kB", _read_host(sysroot, f"{node_dir}/node{n}/meminfo", ""))
        mem_kb[n] = int(match.group(1)) if match else 1 << 20
    slit = [[int(x) for x in _read_host(sysroot, f"{node_dir}/node{n}/distance", "10").split()]
            for n in node_ids]
    if any(len(row) != len(node_ids) for row in slit):
        slit = [[10 if i == j else 20 for j in range(len(node_ids))] for i in range(len(node_ids))]
    roots = []
    for k, n in enumerate(node_ids):
        b = lambda bus, d=0, f=0: f"0000:{k * 0x20 + bus:02x}:{d:02x}.{f}"
        roots.append(Root(f"pci0000:{k * 0x20:02x}", n, [
            host_bridge(b(0)),
            bridge(b(0, 1, 1), [nvidia_gpu(b(1))], gen=5),
            bridge(b(0, 3, 1), [cx7(b(2), f"ens{k + 1}f0np0", f"mlx5_{k}", k)], gen=5)]))
    return Machine(
        "host-mirror", f"this machine's CPUs and NUMA nodes (read from {sysroot}), an H100 and a "
        "CX-7 on each node; generated only with --host-mirror",
        cpus=cpus, nodes=[Node(n, mem_kb[n] / (1 << 20)) for n in node_ids], slit=slit,
        roots=roots, committed=False)


MACHINE_BUILDERS = [
    _epyc_nps4, _xeon_6320r, _gpu4_nic, _xeon6_snc3, _sriov_nic, _vm, _laptop, _big,
    lambda: _nps1("nps1-2s"), lambda: _nps1("nps1-2s-nosocket", package_id=False),
    _quad, _snc2, _sparse, _no_numa, _missing_distance, _hyperv, _offline, _bad_files,
    _arm_nul_padded, _legacy_kernel,
]


def all_machines():
    ms = [b() for b in MACHINE_BUILDERS]
    names = [m.name for m in ms]
    assert len(set(names)) == len(names), names
    return ms


# ---------------------------------------------------------------------------------------------
# Formatting helpers
# ---------------------------------------------------------------------------------------------

def range_list(ids):
    """Kernel %*pbl: '0-3,8-11'; empty set -> ''."""
    ids = sorted(set(ids))
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def cpumask(ids, nbits):
    """Kernel %*pb: 32-bit hex words, most significant first, leading word trimmed to nbits."""
    v = 0
    for i in ids:
        v |= 1 << i
    digits = (nbits + 3) // 4
    h = f"{v:0{digits}x}"
    words = []
    while h:
        words.insert(0, h[-8:])
        h = h[:-8]
    return ",".join(words)


def parse_bdf(bdf):
    dom, bus, df = bdf.split(":")
    dev, fn = df.split(".")
    return int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16)


def fmt_bdf(dom, bus, dev, fn):
    return f"{dom:04x}:{bus:02x}:{dev:02x}.{fn:x}"


def vf_bdf(pf_bdf, offset, stride, k):
    """Routing-ID arithmetic: RID = bus<<8 | dev<<3 | fn; VF k = PF RID + offset + k*stride."""
    dom, bus, dev, fn = parse_bdf(pf_bdf)
    rid = (bus << 8 | dev << 3 | fn) + offset + k * stride
    if rid > 0xffff:
        raise ValueError(f"VF {k} of {pf_bdf} overflows the bus range")
    return fmt_bdf(dom, rid >> 8, (rid >> 3) & 0x1f, rid & 7)


def _selftest():
    assert vf_bdf("0000:41:00.0", 16, 1, 0) == "0000:41:02.0"
    assert vf_bdf("0000:41:00.0", 16, 1, 7) == "0000:41:02.7"
    assert vf_bdf("0000:03:00.0", 128, 2, 0) == "0000:03:10.0"
    assert vf_bdf("0000:41:00.0", 0xf8, 1, 9) == "0000:42:00.1"      # spills into bus+1
    assert range_list([0, 1, 2, 3, 8, 9, 10, 11]) == "0-3,8-11"
    assert range_list([0, 2, 4]) == "0,2,4" and range_list([]) == ""
    assert cpumask([0, 1], 2) == "3"
    assert cpumask(range(40), 80) == "0000,000000ff,ffffffff"
    assert cpumask(range(16), 176) == "0000,00000000,00000000,00000000,00000000,0000ffff"
    assert link_speed_code("16.0 GT/s PCIe") == 4 and link_speed_code("8 GT/s") == 3
    assert link_speed_code("2.5 GT/s PCIe") == 1 and link_speed_code("Unknown") == 0


def h16(text, n):
    return hashlib.sha256(text.encode()).digest()[:n]


EXT_CONFIG_SIZE = 4096
CAP_ID_EXP = 0x10
EXT_CAP_AER = 0x0001
EXT_CAP_DSN = 0x0003
_LINK_SPEED_CODES = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def link_speed_code(speed):
    """'16.0 GT/s PCIe' or '16 GT/s' -> 4, the Link Capabilities/Status encoding; 0 = unknown."""
    try:
        return _LINK_SPEED_CODES.get(float(speed.split()[0]), 0)
    except (ValueError, IndexError):
        return 0


def has_extended_config(f, is_vf):
    """NVIDIA/AMD GPUs and physical NIC functions on PCIe get the full config space with a Device
    Serial Number (the driver's hardware identity). Everything else keeps the 64-byte header:
    bridges need no more for hwloc, and VFs have no DSN of their own."""
    if is_vf or f.link is None or f.cls >> 8 == 0x0604 or not link_speed_code(f.link.max_speed):
        return False
    gpu = f.vendor in (0x10de, 0x1002) and f.cls >> 16 in (0x03, 0x12)
    nic = f.cls >> 16 == 0x02 or f.cls >> 8 == 0x0c06
    return gpu or nic


AER_COR = ["RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr",
           "HeaderOF"]
AER_UNCOR = ["Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF",
             "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP",
             "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked"]
NET_DRIVERS_NO_NETDEV = {None, "vfio-pci", "pci-stub"}

# NVIDIA device id -> (model name, VBIOS version, DMA address bits) for proc/driver/nvidia.
NVIDIA_MODELS = {
    0x2330: ("NVIDIA H100 80GB HBM3", "96.00.74.00.0d", 52),
    0x2331: ("NVIDIA H100 PCIe", "96.00.30.00.01", 52),
    0x2235: ("NVIDIA A40", "94.02.5c.00.01", 47),
    0x20b5: ("NVIDIA A100 80GB PCIe", "92.00.45.00.06", 47),
    0x1db1: ("Tesla V100-SXM2-16GB", "88.00.4f.00.09", 47),
    0x1eb8: ("Tesla T4", "90.04.96.00.a0", 47),
}

MEMINFO_KEYS = ["MemTotal", "MemFree", "MemUsed", "SwapCached", "Active", "Inactive",
                "Active(anon)", "Inactive(anon)", "Active(file)", "Inactive(file)", "Unevictable",
                "Mlocked", "Dirty", "Writeback", "FilePages", "Mapped", "AnonPages", "Shmem",
                "KernelStack", "PageTables", "SecPageTables", "NFS_Unstable", "Bounce",
                "WritebackTmp", "KReclaimable", "Slab", "SReclaimable", "SUnreclaim",
                "AnonHugePages", "ShmemHugePages", "ShmemPmdMapped", "FileHugePages",
                "FilePmdMapped", "Unaccepted"]


def meminfo(node_id, mem_kb):
    free = mem_kb * 9 // 10
    used = mem_kb - free
    vals = {"MemTotal": mem_kb, "MemFree": free, "MemUsed": used,
            "Active": used // 3, "Inactive": used // 3, "Active(anon)": used // 6,
            "Inactive(anon)": used // 12, "Active(file)": used // 6, "Inactive(file)": used // 4,
            "FilePages": used // 2, "Mapped": used // 20, "AnonPages": used // 5,
            "Shmem": used // 50, "KernelStack": 16384 if mem_kb else 0,
            "PageTables": used // 200, "KReclaimable": used // 16, "Slab": used // 10,
            "SReclaimable": used // 16, "SUnreclaim": used // 10 - used // 16}
    lines = [f"Node {node_id} {k + ':':<16}{vals.get(k, 0):>8} kB" for k in MEMINFO_KEYS]
    lines += [f"Node {node_id} {k + ':':<16} {0:>5}" for k in
              ("HugePages_Total", "HugePages_Free", "HugePages_Surp")]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Writer
# ---------------------------------------------------------------------------------------------

class Tree:
    """In-memory tree of files and symlinks, paths relative to the machine dir."""

    def __init__(self):
        self.files = {}
        self.links = {}
        self._dirs_cache = set()

    def file(self, path, content):
        if path in self.files or path in self.links:
            raise ValueError(f"duplicate path {path}")
        self.files[path] = content.encode() if isinstance(content, str) else bytes(content)

    def link(self, path, target):
        """Relative symlink at ``path`` pointing at the tree path ``target``.

        Like the kernel (kernfs_get_target_path), climb to the common ancestor of the link's
        dir and the target's *parent*, so a link to an ancestor reads ``../../../0000:43:00.0``
        rather than ``../..``.
        """
        a = posixpath.dirname(path).split("/")
        b = target.split("/")
        i = 0
        while i < len(a) and i < len(b) - 1 and a[i] == b[i]:
            i += 1
        self.raw_link(path, "/".join([".."] * (len(a) - i) + b[i:]))

    def raw_link(self, path, target):
        if path in self.files or path in self.links:
            raise ValueError(f"duplicate path {path}")
        assert not target.startswith("/"), target
        self.links[path] = target

    def dirs(self):
        out = set()
        for p in list(self.files) + list(self.links):
            d = posixpath.dirname(p)
            while d:
                out.add(d)
                d = posixpath.dirname(d)
        return out

    def verify(self, allow_dangling=()):
        dirs = self._dirs_cache = self.dirs()
        for p, t in sorted(self.links.items()):
            # resolve through intermediate links inside the tree
            r = self._resolve(posixpath.normpath(posixpath.join(posixpath.dirname(p), t)))
            if r is None and p not in allow_dangling:
                raise ValueError(f"dangling symlink {p} -> {t}")
            if r is not None and p in allow_dangling:
                raise ValueError(f"symlink {p} was meant to dangle")
        for p in self.files:
            if p in dirs:
                raise ValueError(f"{p} is both a file and a dir")

    def _resolve(self, path, depth=0):
        if depth > 40:
            return None
        parts = path.split("/")
        cur = ""
        dirs = self._dirs_cache
        for i, part in enumerate(parts):
            cur = posixpath.join(cur, part) if cur else part
            if cur.startswith(".."):
                return None
            if cur in self.links:
                tgt = posixpath.normpath(posixpath.join(posixpath.dirname(cur), self.links[cur]))
                rest = "/".join(parts[i + 1:])
                return self._resolve(posixpath.join(tgt, rest) if rest else tgt, depth + 1)
            if cur not in dirs and cur not in self.files:
                return None
        return cur

    def write(self, outdir):
        for d in sorted(self.dirs()):
            os.makedirs(os.path.join(outdir, d), exist_ok=True)
        for p in sorted(self.files):
            with open(os.path.join(outdir, p), "wb") as f:
                f.write(self.files[p])
        for p in sorted(self.links):
            os.symlink(self.links[p], os.path.join(outdir, p))


class Builder:
    def __init__(self, m: Machine):
        self.m = m
        self.t = Tree()
        self.nbits = m.possible_cpus or len(m.cpus)
        self.online_cpus = [c.id for c in m.cpus if c.online]
        self.node_cpus = {n.id: [c.id for c in m.cpus if c.node == n.id and c.online]
                          for n in m.nodes}
        self.irq = 24
        self.group = 0
        self.ifindex = 2
        self.drivers = {}           # name -> list of device paths
        self.virtio_drivers = {}
        self.groups = {}            # group -> list of device paths
        self.classlinks = []        # (subsys, name, path)
        self.nvidia_gpus = []       # (bdf, device id, irq) of functions bound to nvidia

    # -- CPUs and nodes ------------------------------------------------------------------------
    def build_cpus(self):
        m, t = self.m, self.t
        base = "sys/devices/system/cpu"
        possible = list(range(self.nbits))
        present = [c.id for c in m.cpus]
        t.file(f"{base}/possible", range_list(possible) + "\n")
        t.file(f"{base}/present", range_list(present) + "\n")
        t.file(f"{base}/online", range_list(self.online_cpus) + "\n")
        t.file(f"{base}/offline", range_list(set(possible) - set(self.online_cpus)) + "\n")
        t.file(f"{base}/isolated", "\n")
        t.file(f"{base}/kernel_max", f"{m.kernel_max}\n")
        if m.arch == "x86":
            smt = any(c.thread > 0 for c in m.cpus)
            t.file(f"{base}/smt/active", "1\n" if smt else "0\n")
            t.file(f"{base}/smt/control", "on\n" if smt else "notsupported\n")
        on = [c for c in m.cpus if c.online]
        for c in m.cpus:
            d = f"{base}/cpu{c.id}"
            if c.id != 0 or m.cpu0_online_file:
                t.file(f"{d}/online", "1\n" if c.online else "0\n")
            t.file(f"{d}/uevent", f"DRIVER=processor\nMODALIAS=cpu:type:{m.arch}\n")
            if m.numa_dir:
                t.link(f"{d}/node{c.node}", f"sys/devices/system/node/node{c.node}")
            if not c.online:
                continue
            core = [o.id for o in on if o.package == c.package and o.core == c.core]
            pkg = [o.id for o in on if o.package == c.package]
            die = [o.id for o in on if o.package == c.package and o.die == c.die]
            files = {"core_id": c.core, "die_id": c.die, "cluster_id": c.core,
                     "physical_package_id": c.package}
            masks = {"core_cpus": core, "thread_siblings": core, "cluster_cpus": core,
                     "package_cpus": pkg, "core_siblings": pkg, "die_cpus": die}
            if m.legacy_kernel:     # before die (5.2), cluster (5.16) and core/package_cpus (5.9)
                files = {k: v for k, v in files.items() if k not in ("die_id", "cluster_id")}
                masks = {k: v for k, v in masks.items() if k in ("thread_siblings",
                                                                  "core_siblings")}
            for k, v in files.items():
                if k == "physical_package_id" and not m.package_id:
                    continue
                t.file(f"{d}/topology/{k}", f"{v}\n")
            for k, ids in masks.items():
                t.file(f"{d}/topology/{k}", cpumask(ids, self.nbits) + "\n")
                if not m.legacy_kernel:
                    t.file(f"{d}/topology/{k}_list", range_list(ids) + "\n")

    def build_nodes(self):
        m, t = self.m, self.t
        if not m.numa_dir:
            return
        base = "sys/devices/system/node"
        online = sorted(n.id for n in m.nodes)
        if m.node_online_file:
            t.file(f"{base}/online", range_list(online) + "\n")
        t.file(f"{base}/possible", range_list(online) + "\n")
        t.file(f"{base}/has_cpu", range_list([n for n in online if self.node_cpus[n]]) + "\n")
        t.file(f"{base}/has_memory", range_list([n.id for n in m.nodes if n.mem_gib]) + "\n")
        t.file(f"{base}/has_normal_memory",
               range_list([n.id for n in m.nodes if n.mem_gib and n.normal_memory]) + "\n")
        t.file(f"{base}/has_generic_initiator", "\n")
        for pos, n in enumerate(sorted(m.nodes, key=lambda n: n.id)):
            d = f"{base}/node{n.id}"
            cpus = self.node_cpus[n.id]
            if not m.legacy_kernel:
                t.file(f"{d}/cpulist", range_list(cpus) + "\n")
            t.file(f"{d}/cpumap", cpumask(cpus, self.nbits) + "\n")
            if n.id in m.distance_override:
                raw = m.distance_override[n.id]
                if raw is not None:
                    t.file(f"{d}/distance", raw)
            else:
                t.file(f"{d}/distance", " ".join(str(x) for x in m.slit[pos]) + "\n")
            mem_kb = int(n.mem_gib * 1024 * 1024)
            t.file(f"{d}/meminfo", n.meminfo if n.meminfo is not None else meminfo(n.id, mem_kb))
            for hp in ("hugepages-2048kB", "hugepages-1048576kB"):
                for f in ("nr_hugepages", "free_hugepages", "surplus_hugepages"):
                    t.file(f"{d}/hugepages/{hp}/{f}", "0\n")
            for c in m.cpus:
                if c.node == n.id:
                    t.link(f"{d}/cpu{c.id}", f"sys/devices/system/cpu/cpu{c.id}")

    def build_cpuinfo(self):
        m = self.m
        out = []
        on = [c for c in m.cpus if c.online]
        for c in on:
            siblings = sum(1 for o in on if o.package == c.package)
            cores = len({o.core for o in on if o.package == c.package})
            if m.arch == "x86":
                out.append(f"processor\t: {c.id}\nvendor_id\t: {m.cpu_vendor}\n"
                           f"cpu family\t: {25 if m.cpu_vendor == 'AuthenticAMD' else 6}\n"
                           f"model\t\t: 17\nmodel name\t: {m.cpu_model}\nstepping\t: 1\n")
                if m.package_id:
                    out.append(f"physical id\t: {c.package}\nsiblings\t: {siblings}\n"
                               f"core id\t\t: {c.core}\ncpu cores\t: {cores}\n")
                apic = (c.package << 8) | (c.core << 1) | c.thread
                out.append(f"apicid\t\t: {apic}\ninitial apicid\t: {apic}\n"
                           "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca "
                           "cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx lm "
                           "constant_tsc pni ssse3 sse4_1 sse4_2 avx avx2\n\n")
            else:
                out.append(f"processor\t: {c.id}\nmodel name\t: {m.cpu_model}\n")
                if m.package_id:
                    out.append(f"physical id\t: {c.package}\ncore id\t\t: {c.core}\n")
                out.append("\n")
        self.t.file("proc/cpuinfo", "".join(out))
        # The kernel's boot id (a random UUID per boot); the driver records it with prepared
        # claims to tell a restart from a reboot. Derived from the name so runs are identical.
        h = hashlib.sha256(("boot-" + m.name).encode()).hexdigest()
        self.t.file("proc/sys/kernel/random/boot_id",
                    f"{h[0:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}\n")

    # -- PCI ---------------------------------------------------------------------------------
    def local_cpus(self, node):
        if node is None or node < 0 or node not in self.node_cpus:
            return list(range(self.nbits))
        return self.node_cpus[node]

    def bus_span(self, f):
        """(min, max) bus numbers below bridge ``f`` (for secondary/subordinate)."""
        buses = []
        for c in f.children:
            if isinstance(c, Func):
                _, b, _, _ = parse_bdf(c.bdf)
                buses.append(b)
                lo_hi = self.bus_span(c) if c.cls >> 8 == 0x0604 else None
                if lo_hi:
                    buses.extend(lo_hi)
                if c.sriov:
                    for k in range(c.sriov.num):
                        buses.append(parse_bdf(vf_bdf(c.bdf, c.sriov.offset, c.sriov.stride, k))[1])
        if not buses:
            if f.sec_bus is not None:
                return (f.sec_bus, f.sec_bus)
            return None
        return (min(buses), max(buses))

    def build_pci(self):
        t = self.t
        for r in self.m.roots:
            prefix = "sys/devices"
            if r.prefix:
                acc = prefix
                for comp in r.prefix.split("/"):
                    acc = f"{acc}/{comp}"
                    t.file(f"{acc}/uevent", "")
                    if comp.count("-") == 4:        # VMBus device (GUID)
                        t.file(f"{acc}/class_id", "{44c4f61d-4444-4400-9d52-802e27ede19f}\n")
                        t.file(f"{acc}/device_id", "{" + comp + "}\n")
                prefix = acc
            self.emit_root(r, prefix)
        for drv, devs in sorted(self.drivers.items()):
            d = f"sys/bus/pci/drivers/{drv}"
            for f_ in ("bind", "unbind", "new_id", "remove_id"):
                t.file(f"{d}/{f_}", "")
            t.file(f"{d}/uevent", "")
            for p in devs:
                t.link(f"{d}/{posixpath.basename(p)}", p)
        t.file("sys/bus/pci/drivers_autoprobe", "1\n")
        t.file("sys/bus/pci/uevent", "")
        for drv, devs in sorted(self.virtio_drivers.items()):
            d = f"sys/bus/virtio/drivers/{drv}"
            for f_ in ("bind", "unbind", "uevent"):
                t.file(f"{d}/{f_}", "")
            for p in devs:
                t.link(f"{d}/{posixpath.basename(p)}", p)
                t.link(f"sys/bus/virtio/devices/{posixpath.basename(p)}", p)
        for g, devs in sorted(self.groups.items()):
            d = f"sys/kernel/iommu_groups/{g}"
            t.file(f"{d}/type", "DMA\n")
            t.file(f"{d}/reserved_regions",
                   "0x00000000fee00000 0x00000000feefffff msi\n")
            for p in devs:
                t.link(f"{d}/devices/{posixpath.basename(p)}", p)
        for subsys, name, p in sorted(self.classlinks):
            t.link(f"sys/class/{subsys}/{name}", p)
        if any(s == "drm" for s, _, _ in self.classlinks):
            t.file("sys/class/drm/version", "drm 1.1.0 20060810\n")
        # loopback: a class/net entry without a PCI device behind it
        lo = "sys/devices/virtual/net/lo"
        for k, v in {"address": "00:00:00:00:00:00", "addr_len": "6", "type": "772",
                     "mtu": "65536", "ifindex": "1", "iflink": "1", "operstate": "unknown",
                     "carrier": "1", "flags": "0x9", "tx_queue_len": "1000"}.items():
            t.file(f"{lo}/{k}", v + "\n")
        t.file(f"{lo}/uevent", "INTERFACE=lo\nIFINDEX=1\n")
        t.link("sys/class/net/lo", lo)
        for p, tgt in self.m.extra_links.items():
            t.raw_link(p, tgt)

    def emit_root(self, r: Root, parent):
        t = self.t
        d = f"{parent}/{r.name}"
        t.file(f"{d}/uevent", "")
        t.file(f"{d}/power/control", "auto\n")
        t.file(f"{d}/power/runtime_status", "unsupported\n")
        funcs = [c for c in r.children if isinstance(c, Func)]
        for c in r.children:
            self.emit_func(c, d, r.node, None, funcs)

    def next_group(self):
        g = self.group
        self.group += 1
        return g

    def emit_func(self, f: Func, parent, node, parent_group, siblings, is_vf=False):
        t, m = self.t, self.m
        d = f"{parent}/{f.bdf}"
        node = f.numa_node if f.numa_node is not None else node
        dom, bus, dev, fn = parse_bdf(f.bdf)
        is_bridge = f.cls >> 8 == 0x0604
        sv, sd = f.subsys if f.subsys else ((0, 0) if is_bridge else (f.vendor, f.device))
        files = {}
        files["class"] = f"0x{f.cls:06x}\n"
        files["vendor"] = f"0x{f.vendor:04x}\n"
        files["device"] = f"0x{f.device:04x}\n"
        files["subsystem_vendor"] = f"0x{sv:04x}\n"
        files["subsystem_device"] = f"0x{sd:04x}\n"
        files["revision"] = f"0x{f.rev:02x}\n"
        files["numa_node"] = f"{node}\n"
        lc = self.local_cpus(node)
        if not m.legacy_kernel:
            files["local_cpulist"] = range_list(lc) + "\n"
        files["local_cpus"] = cpumask(lc, self.nbits) + "\n"
        files["enable"] = "0\n" if f.driver in (None, "vfio-pci") else "1\n"
        irq = 0 if is_vf else self.irq
        if not is_vf:
            self.irq += 1
        files["irq"] = f"{irq}\n"
        if f.driver == "nvidia":
            self.nvidia_gpus.append((f.bdf, f.device, irq))
        files["msi_bus"] = "1\n"
        files["broken_parity_status"] = "0\n"
        files["d3cold_allowed"] = "1\n"
        files["driver_override"] = "vfio-pci\n" if f.driver == "vfio-pci" else "(null)\n"
        files["power/control"] = "on\n" if f.driver else "auto\n"
        files["power/runtime_status"] = "active\n" if f.driver else "suspended\n"
        modalias = (f"pci:v{f.vendor:08X}d{f.device:08X}sv{sv:08X}sd{sd:08X}"
                    f"bc{f.cls >> 16:02X}sc{(f.cls >> 8) & 0xff:02X}i{f.cls & 0xff:02X}")
        files["modalias"] = modalias + "\n"
        ue = f"DRIVER={f.driver}\n" if f.driver else ""
        files["uevent"] = (ue + f"PCI_CLASS={f.cls:X}\nPCI_ID={f.vendor:04X}:{f.device:04X}\n"
                           f"PCI_SUBSYS_ID={sv:04X}:{sd:04X}\nPCI_SLOT_NAME={f.bdf}\n"
                           f"MODALIAS={modalias}\n")
        if f.link is not None:
            files["current_link_speed"] = f.link.cur_speed + "\n"
            files["current_link_width"] = f"{f.link.cur_width}\n"
            files["max_link_speed"] = f.link.max_speed + "\n"
            files["max_link_width"] = f"{f.link.max_width}\n"
        aer = f.aer if f.aer is not None else (m.aer and f.link is not None and not is_vf)
        if aer:
            cnt = f.aer_counts
            cor = cnt.get("cor", {})
            lines = [f"{n} {cor.get(n, 0)}" for n in AER_COR]
            files["aer_dev_correctable"] = ("\n".join(lines) +
                                            f"\nTOTAL_ERR_COR {sum(cor.values())}\n")
            for kind, total in (("fatal", "TOTAL_ERR_FATAL"), ("nonfatal", "TOTAL_ERR_NONFATAL")):
                c = cnt.get(kind, {})
                lines = [f"{n} {c.get(n, 0)}" for n in AER_UNCOR]
                files[f"aer_dev_{kind}"] = "\n".join(lines) + f"\n{total} {sum(c.values())}\n"
            if is_bridge and parent.rsplit("/", 1)[-1].startswith("pci"):
                for k in ("cor", "fatal", "nonfatal"):
                    files[f"aer_rootport_total_err_{k}"] = "0\n"
        span = None
        if is_bridge:
            span = self.bus_span(f) or (bus + 1, bus + 1)
            files["secondary_bus_number"] = f"{span[0]}\n"
            files["subordinate_bus_number"] = f"{span[1]}\n"
        multifn = any(isinstance(s, Func) and s is not f and parse_bdf(s.bdf)[:3] == (dom, bus, dev)
                      for s in siblings)
        files["config"] = self.config_space(f, sv, sd, irq, bus, span, multifn)
        if has_extended_config(f, is_vf):
            files["config"] = self.extended_config(files["config"], f, aer)
        if f.sriov and not is_vf:
            s = f.sriov
            files["sriov_totalvfs"] = f"{s.total}\n"
            files["sriov_numvfs"] = f"{s.num}\n"
            files["sriov_offset"] = f"{s.offset}\n"
            files["sriov_stride"] = f"{s.stride}\n"
            files["sriov_vf_device"] = f"{s.vf_device:x}\n"
            files["sriov_drivers_autoprobe"] = "1\n"
            files["sriov_vf_total_msix"] = "0\n"
        for k, v in f.overrides.items():
            if v is None:
                files.pop(k, None)
            else:
                files[k] = v
        for k, v in sorted(files.items()):
            t.file(f"{d}/{k}", v)
        t.link(f"{d}/subsystem", "sys/bus/pci")
        t.link(f"sys/bus/pci/devices/{f.bdf}", d)
        if f.driver:
            t.link(f"{d}/driver", f"sys/bus/pci/drivers/{f.driver}")
            self.drivers.setdefault(f.driver, []).append(d)
        group = None
        if m.iommu and f.iommu != "none":
            group = parent_group if (f.iommu == "parent" and parent_group is not None) \
                else self.next_group()
            t.link(f"{d}/iommu_group", f"sys/kernel/iommu_groups/{group}")
            self.groups.setdefault(group, []).append(d)
        if f.physfn:
            t.link(f"{d}/physfn", f"{parent}/{f.physfn}")

        # class devices
        for cd in f.classdevs:
            self.emit_classdev(cd, d, f)
        if f.virtio:
            v = f.virtio
            vd = f"{d}/virtio{v.index}"
            t.file(f"{vd}/device", f"0x{v.devid:04x}\n")
            t.file(f"{vd}/vendor", "0x1af4\n")
            t.file(f"{vd}/status", "0x0000000f\n")
            t.file(f"{vd}/features", "0" * 64 + "\n")
            t.file(f"{vd}/modalias", f"virtio:d{v.devid:08X}v00001AF4\n")
            t.file(f"{vd}/uevent", f"DRIVER={v.driver}\nMODALIAS=virtio:d{v.devid:08X}v00001AF4\n")
            t.link(f"{vd}/subsystem", "sys/bus/virtio")
            t.link(f"{vd}/driver", f"sys/bus/virtio/drivers/{v.driver}")
            self.virtio_drivers.setdefault(v.driver, []).append(vd)
            for nd in v.netdevs:
                self.emit_classdev(nd, vd, f)

        # children
        kids = [c for c in f.children if isinstance(c, Func)]
        for c in f.children:
            if isinstance(c, Root):
                self.emit_root(c, d)
            else:
                self.emit_func(c, d, node, group, kids)

        # SR-IOV VFs: siblings of the PF under the same parent
        if f.sriov and not is_vf:
            s = f.sriov
            pf_speed = next((c.speed for c in f.classdevs if isinstance(c, NetDev)), -1)
            for k in range(s.num):
                vbdf = vf_bdf(f.bdf, s.offset, s.stride, k)
                drv = s.vf_driver[k] if isinstance(s.vf_driver, list) else s.vf_driver
                cds = []
                if drv not in NET_DRIVERS_NO_NETDEV and s.vf_ifname:
                    oui = next((c.oui for c in f.classdevs if isinstance(c, NetDev)), "02:00:00")
                    cds.append(NetDev(s.vf_ifname.format(k=k),
                                      s.vf_speed if s.vf_speed is not None else pf_speed, oui=oui))
                vf = Func(vbdf, f.vendor, s.vf_device, f.cls, subsys=f.subsys, rev=f.rev,
                          driver=drv, link=f.link, numa_node=node, classdevs=cds, aer=False,
                          physfn=f.bdf)
                t.link(f"{d}/virtfn{k}", f"{parent}/{vbdf}")
                self.emit_func(vf, parent, node, None, [], is_vf=True)

    def config_space(self, f, sv, sd, irq, bus, span, multifn):
        b = bytearray(64)
        struct.pack_into("<HH", b, 0, f.vendor, f.device)
        cmd = 0x0546 if f.driver not in (None, "vfio-pci") else 0x0000
        struct.pack_into("<HH", b, 4, cmd, 0x0010)      # status: capability list
        b[8] = f.rev
        b[9], b[10], b[11] = f.cls & 0xff, (f.cls >> 8) & 0xff, f.cls >> 16
        b[0x0c] = 0x10
        hdr = 0x01 if span else 0x00
        b[0x0e] = hdr | (0x80 if multifn else 0)
        if span:
            b[0x18], b[0x19], b[0x1a] = bus, span[0], span[1]
        else:
            struct.pack_into("<HH", b, 0x2c, sv, sd)
        b[0x34] = 0x40
        b[0x3c] = irq & 0xff
        b[0x3d] = 0x01 if irq else 0x00
        return bytes(b)

    def extended_config(self, header, f, aer):
        """The full 4096 bytes root reads: the 64-byte header, a PCI Express capability at 0x40
        (the header's capability pointer) matching the link files, and at 0x100 the extended
        capabilities: AER (when the function has AER files), then the Device Serial Number."""
        b = bytearray(EXT_CONFIG_SIZE)
        b[:len(header)] = header
        max_code, cur_code = link_speed_code(f.link.max_speed), link_speed_code(f.link.cur_speed)
        struct.pack_into("<BBH", b, 0x40, CAP_ID_EXP, 0x00, 0x0002)   # v2, endpoint
        struct.pack_into("<I", b, 0x44, 0x00008002)                   # MPS 512, role-based ER
        struct.pack_into("<HH", b, 0x48, 0x2030, 0x0000)              # MPS 256, MRRS 512, RO
        struct.pack_into("<I", b, 0x4c, max_code | (f.link.max_width << 4))
        struct.pack_into("<HH", b, 0x50, 0x0000, cur_code | (f.link.cur_width << 4))
        struct.pack_into("<I", b, 0x6c, (1 << (max_code + 1)) - 2 if max_code else 0)
        struct.pack_into("<H", b, 0x70, max_code)
        dsn_offset = 0x100
        if aer:
            dsn_offset = 0x148                                        # AER v2 is 0x48 bytes
            struct.pack_into("<I", b, 0x100, EXT_CAP_AER | (2 << 16) | (dsn_offset << 20))
            struct.pack_into("<I", b, 0x114, 0x0000e000)              # correctable mask
        struct.pack_into("<I", b, dsn_offset, EXT_CAP_DSN | (1 << 16))  # last: next = 0
        struct.pack_into("<Q", b, dsn_offset + 4, int.from_bytes(self.serial(f), "big"))
        return bytes(b)

    def serial(self, f):
        """The Device Serial Number, most significant byte first (the order lspci prints)."""
        return h16(f"{self.m.name}/{f.bdf}/dsn", 8)

    def emit_classdev(self, cd, devpath, f):
        t, m = self.t, self.m
        if isinstance(cd, NetDev):
            d = f"{devpath}/net/{cd.ifname}"
            idx = self.ifindex
            self.ifindex += 1
            if cd.type == 32:
                guid = h16(f"{m.name}/{cd.ifname}/guid", 8)
                addr = bytes([0x00, 0x00, 0x10, 0x49, 0xfe, 0x80] + [0] * 6) + guid
                bcast = "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff"
            else:
                tail = h16(f"{m.name}/{cd.ifname}", 3)
                addr = bytes(int(x, 16) for x in cd.oui.split(":")) + tail
                bcast = "ff:ff:ff:ff:ff:ff"
            mac = cd.mac or ":".join(f"{x:02x}" for x in addr)
            files = {"address": mac, "addr_len": str(len(addr)), "broadcast": bcast,
                     "speed": str(cd.speed), "duplex": "full" if cd.speed > 0 else "unknown",
                     "operstate": cd.operstate, "carrier": str(cd.carrier), "mtu": str(cd.mtu),
                     "ifindex": str(idx), "iflink": str(idx), "type": str(cd.type),
                     "dev_port": str(cd.dev_port), "dev_id": "0x0", "addr_assign_type": "0",
                     "tx_queue_len": "1000" if cd.type == 1 else "256", "flags": "0x1003"}
            for k, v in files.items():
                t.file(f"{d}/{k}", v + "\n")
            t.file(f"{d}/uevent", f"INTERFACE={cd.ifname}\nIFINDEX={idx}\n")
            t.link(f"{d}/device", devpath)
            t.link(f"{d}/subsystem", "sys/class/net")
            self.classlinks.append(("net", cd.ifname, d))
        elif isinstance(cd, IbDev):
            d = f"{devpath}/infiniband/{cd.name}"
            g = h16(f"{m.name}/{cd.name}", 8).hex()
            guid = ":".join(g[i:i + 4] for i in range(0, 16, 4))
            files = {"node_guid": guid, "sys_image_guid": guid, "node_type": "1: CA",
                     "hca_type": cd.hca_type, "fw_ver": cd.fw_ver, "board_id": "MT_0000000838",
                     "node_desc": f"{m.name} {cd.name}",
                     "ports/1/state": "4: ACTIVE", "ports/1/phys_state": "5: LinkUp",
                     "ports/1/rate": cd.rate, "ports/1/link_layer": cd.link_layer,
                     "ports/1/lid": "0x0" if cd.link_layer == "Ethernet" else f"0x{cd.uverbs + 1:x}",
                     "ports/1/sm_lid": "0x0" if cd.link_layer == "Ethernet" else "0x1",
                     "ports/1/lid_mask_count": "0", "ports/1/cap_mask": "0x00010000"}
            for k, v in files.items():
                t.file(f"{d}/{k}", v + "\n")
            t.file(f"{d}/uevent", f"NAME={cd.name}\n")
            t.link(f"{d}/device", devpath)
            t.link(f"{d}/subsystem", "sys/class/infiniband")
            self.classlinks.append(("infiniband", cd.name, d))
            u = f"uverbs{cd.uverbs}"
            ud = f"{devpath}/infiniband_verbs/{u}"
            t.file(f"{ud}/dev", f"231:{192 + cd.uverbs}\n")
            t.file(f"{ud}/ibdev", f"{cd.name}\n")
            t.file(f"{ud}/abi_version", "1\n")
            t.file(f"{ud}/uevent", f"MAJOR=231\nMINOR={192 + cd.uverbs}\nDEVNAME=infiniband/{u}\n")
            t.link(f"{ud}/device", devpath)
            t.link(f"{ud}/subsystem", "sys/class/infiniband_verbs")
            self.classlinks.append(("infiniband_verbs", u, ud))
        elif isinstance(cd, Drm):
            minors = [("card", cd.card, cd.card)]
            if cd.render:
                minors.append(("renderD", 128 + cd.card, 128 + cd.card))
            for kind, num, minor in minors:
                name = f"{kind}{num}"
                d = f"{devpath}/drm/{name}"
                t.file(f"{d}/dev", f"226:{minor}\n")
                t.file(f"{d}/uevent", f"MAJOR=226\nMINOR={minor}\nDEVNAME=dri/{name}\n"
                                      "DEVTYPE=drm_minor\n")
                t.link(f"{d}/device", devpath)
                t.link(f"{d}/subsystem", "sys/class/drm")
                self.classlinks.append(("drm", name, d))
        elif isinstance(cd, Nvme):
            d = f"{devpath}/nvme/{cd.name}"
            n = int(cd.name[4:])
            files = {"model": cd.model, "serial": h16(f"{m.name}/{cd.name}", 6).hex().upper(),
                     "firmware_rev": "1B2QGXA7", "transport": "pcie", "state": "live",
                     "address": f.bdf, "dev": f"240:{n}", "numa_node": "-1"}
            for k, v in files.items():
                t.file(f"{d}/{k}", v + "\n")
            t.file(f"{d}/uevent", f"MAJOR=240\nMINOR={n}\nDEVNAME={cd.name}\n")
            t.link(f"{d}/device", devpath)
            t.link(f"{d}/subsystem", "sys/class/nvme")
            self.classlinks.append(("nvme", cd.name, d))
        else:
            raise TypeError(cd)

    def build_nvidia_proc(self):
        """proc/driver/nvidia/gpus/<bdf>/information, as nv-procfs.c prints it.  The driver
        numbers the GPUs it binds in probe order, which is PCI address order: Device Minor is
        the GPU's index among the machine's nvidia-bound functions sorted by address."""
        for minor, (bdf, device, irq) in enumerate(sorted(self.nvidia_gpus)):
            model, vbios, dma_bits = NVIDIA_MODELS.get(device, ("NVIDIA Graphics Device",
                                                               "00.00.00.00.00", 47))
            u = h16(f"{self.m.name}/{bdf}/gpu-uuid", 16).hex()
            uuid = f"GPU-{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"
            self.t.file(f"proc/driver/nvidia/gpus/{bdf}/information",
                        f"Model: \t\t {model}\n"
                        f"IRQ:   \t\t {irq}\n"
                        f"GPU UUID: \t {uuid}\n"
                        f"Video BIOS: \t {vbios}\n"
                        "Bus Type: \t PCIe\n"
                        f"DMA Size: \t {dma_bits} bits\n"
                        f"DMA Mask: \t 0x{(1 << dma_bits) - 1:x}\n"
                        f"Bus Location: \t {bdf}\n"
                        f"Device Minor: \t {minor}\n"
                        "GPU Excluded:\t No\n")

    def pad_with_nul(self):
        """Every file under devices/system/{node,cpu} ends in "\\n\\0" (nul_padded)."""
        for path, content in self.t.files.items():
            if path.startswith(("sys/devices/system/node/", "sys/devices/system/cpu/")):
                self.t.files[path] = content + b"\0"

    def build(self):
        self.build_cpus()
        self.build_nodes()
        self.build_cpuinfo()
        self.build_pci()
        self.build_nvidia_proc()
        if self.m.nul_padded:
            self.pad_with_nul()
        self.t.verify(self.m.allow_dangling)
        return self.t


def generate(m: Machine, out):
    tree = Builder(m).build()
    target = os.path.join(out, m.name)
    if os.path.lexists(target):
        shutil.rmtree(target)
    os.makedirs(target)
    tree.write(target)
    return len(tree.files), len(tree.links)


# ---------------------------------------------------------------------------------------------
# Expected facts (what a correct reader computes)
# ---------------------------------------------------------------------------------------------

def _distance_row(m, node_id):
    """Tokens of nodeN/distance as written, or None if missing/empty/unparsable."""
    if not m.numa_dir:
        return None
    if node_id in m.distance_override:
        raw = m.distance_override[node_id]
        if not raw or not raw.strip():
            return None
        try:
            return [int(x) for x in raw.split()]
        except ValueError:
            return None
    online = sorted(n.id for n in m.nodes)
    return m.slit[online.index(node_id)]


def _node_socket(m, node_id):
    if not m.package_id:
        return None
    cpus = sorted(c.id for c in m.cpus if c.node == node_id and c.online)
    if not cpus:
        return None
    return next(c.package for c in m.cpus if c.id == cpus[0])


def numa_list(m, n, positional=True):
    """KEP-6072 list form. positional=True maps row fields to sorted online nodes (correct);
    False reproduces upstream k8s (field i = node i)."""
    row = _distance_row(m, n)
    if row is None:
        return [n]
    ids = sorted(x.id for x in m.nodes) if positional else list(range(len(row)))
    if n not in ids or ids.index(n) >= len(row):
        return [n]
    pos = ids.index(n)
    others = [(ids[i], d) for i, d in enumerate(row) if i != pos and i < len(ids)]
    if not others:
        return [n]
    mind = min(d for _, d in others)
    cands = [i for i, d in others if d == mind]
    s = _node_socket(m, n)
    if s is not None:
        cands = [c for c in cands if _node_socket(m, c) in (None, s)]
    return [n] + sorted(cands)


def facts(m):
    """One line per interesting device: pciBusID, pcieRoot (robust reader: first path component
    matching pci<domain>:<bus>), scalar numaNode and the list form a correct reader computes;
    notes where upstream k8s behaves differently."""
    lines = [f"## {m.name}: {m.description}"]
    rows = []

    def walk(funcs, top, prefixed, node):
        for f in funcs:
            if isinstance(f, Root):                 # nested root (VMD): pcieRoot stays the top one
                walk(f.children, top, prefixed, f.node)
                continue
            nn = f.numa_node if f.numa_node is not None else node
            raw = f.overrides.get("numa_node")
            interesting = (f.cls >> 16) in (0x01, 0x02, 0x03, 0x12) or f.cls == 0x0c0600
            if interesting and f.cls >> 8 not in (0x0604, 0x0600):
                notes = []
                if raw is not None:
                    lst = f"read error (numa_node={raw.strip()!r})"
                elif nn < 0:
                    lst = "none: numa_node=-1, omit the attribute"
                else:
                    lst = str(numa_list(m, nn))
                    naive = numa_list(m, nn, positional=False)
                    if str(naive) != lst:
                        notes.append(f"upstream field-i=node-i gives {naive}")
                if len(f.bdf.split(":")[0]) > 4:
                    notes.append("upstream rejects the 5-digit-domain BDF")
                elif prefixed:
                    notes.append("upstream pcieRoot errors: path does not start with devices/pci")
                for k, v in sorted(f.overrides.items()):
                    if k != "numa_node":
                        notes.append(f"{k} file = {v!r}")
                if f.sriov and f.sriov.num:
                    notes.append(f"{f.sriov.num} VFs, same pcieRoot and numaNode")
                rows.append(f"  {f.bdf} {f.vendor:04x}:{f.device:04x} class 0x{f.cls:06x} "
                            f"pcieRoot={top} numaNode={nn if raw is None else '?'} list={lst}"
                            + (f"  [{'; '.join(notes)}]" if notes else ""))
            walk(f.children, top, prefixed, nn)

    for r in m.roots:
        walk(r.children, r.name, bool(r.prefix), r.node)
    return "\n".join(lines + rows)


# ---------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--machine", nargs="+", metavar="NAME", help="machines to generate (default all)")
    ap.add_argument("--exclude", nargs="+", metavar="NAME", default=[], help="machines to skip")
    ap.add_argument("--list", action="store_true", help="list machines and exit")
    ap.add_argument("--facts", action="store_true", help="print expected facts and exit")
    ap.add_argument("--host-mirror", metavar="SYSROOT",
                    help="generate only the machine host-mirror: the CPUs and NUMA nodes read "
                         "from SYSROOT (this machine's /sys), a GPU and a NIC on each node")
    args = ap.parse_args(argv)
    _selftest()
    machines = [_host_mirror(args.host_mirror)] if args.host_mirror else all_machines()
    by_name = {m.name: m for m in machines}
    if args.list:
        for m in machines:
            tag = "" if m.committed else "  [generate only]"
            print(f"{m.name:20} {m.description}{tag}")
        return 0
    names = args.machine or [m.name for m in machines]
    unknown = [n for n in names + args.exclude if n not in by_name]
    if unknown:
        ap.error(f"unknown machine(s): {', '.join(unknown)} (see --list)")
    selected = [by_name[n] for n in names if n not in args.exclude]
    if args.facts:
        print("\n\n".join(facts(m) for m in selected))
        return 0
    if not args.out:
        ap.error("--out is required")
    for m in selected:
        nf, nl = generate(m, args.out)
        print(f"{m.name}: {nf} files, {nl} symlinks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
