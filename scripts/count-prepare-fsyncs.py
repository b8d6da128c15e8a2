#!/usr/bin/env python3
"""fsync-family calls per Preparer::prepare and per unprepare, from prepare_bench under strace.

    scripts/count-prepare-fsyncs.py [--bench build/bin/prepare_bench] [LAYOUT/DEVICES ...]

LAYOUT/DEVICES defaults to every BM_Prepare case (tmpfs, disk, node; 1 and 8 devices). Each
case runs briefly under `strace -f`; a prepare is the calls from the first file it creates
after an unprepare, an unprepare those from the first unlink after a prepare. Prints the
median count of each (the first and last phases include the benchmark's set-up and clean-up).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

SYNCS = ("fsync", "fdatasync", "syncfs", "sync_file_range")
CALL = re.compile(r"\b(fsync|fdatasync|syncfs|sync_file_range|openat|unlink|unlinkat|rename)\(")
DRIVER_FOLDERS = ("/cdi", "/metadata", "/state")


def phases(trace_lines):
    kind, syncs, found = None, 0, []
    for line in trace_lines:
        match = CALL.search(line)
        if not match or "resumed" in line:
            continue
        call = match.group(1)
        if call not in SYNCS and not any(folder in line for folder in DRIVER_FOLDERS):
            continue
        if call == "openat" and "O_CREAT" in line and kind != "prepare":
            if kind:
                found.append((kind, syncs))
            kind, syncs = "prepare", 0
        elif call in ("unlink", "unlinkat") and kind == "prepare" and ".tmp." not in line:
            found.append((kind, syncs))
            kind, syncs = "unprepare", 0
        elif call in SYNCS and kind:
            syncs += 1
    if kind:
        found.append((kind, syncs))
    return found


def count(bench, case):
    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, "trace")
        subprocess.run(
            ["strace", "-f", "-qq", "-o", trace,
             "-e", "trace=" + ",".join(SYNCS + ("openat", "unlink", "unlinkat", "rename")),
             bench, "--benchmark_filter=BM_Prepare/" + case + "/", "--benchmark_min_time=0.05"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(trace) as lines:
            found = phases(lines)
    return {kind: int(statistics.median(s for k, s in found if k == kind))
            for kind in ("prepare", "unprepare") if any(k == kind for k, _ in found)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/bin/prepare_bench")
    parser.add_argument("cases", nargs="*",
                        default=[f"{layout}/devices:{n}" for layout in ("tmpfs", "disk", "node")
                                 for n in (1, 8)])
    args = parser.parse_args()
    for case in args.cases:
        counts = count(args.bench, case)
        print(f"{case}: prepare {counts.get('prepare')}, unprepare {counts.get('unprepare')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
