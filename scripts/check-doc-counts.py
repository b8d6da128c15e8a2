#!/usr/bin/python3
"""Keeps the counts the documentation states equal to what the build and the judges count, so a
number in a README can never go stale (ctest docs.counts_in_sync).

A counted number is written with a marker right after it, invisible once rendered:

    upstream's own allocator test table (275<!-- =upstream-table.cases --> cases)

`NUMBER<!-- =KEY -->`: NUMBER may have thousands separators (3,111). Every marker in the
checked files must name a known key and carry its value; a file that should hold counts but
holds no marker fails too (a rewrite that dropped them).

Where the values come from:
- `ctest.tests`, `ctest.sanitizer-tests`: `ctest -N` in the build folder (the sanitizer tier's
  selection for the second, as scripts/test.sh makes it);
- `e2e.tests`, `node-e2e.tests`: the `func TestX(t *testing.T)` of tests/e2e and of
  tests/e2e/node;
- `scenarios.total`: the scenario folders of testdata/allocator;
- `cel-conformance.*`: the per-file counts pinned in cluster/cel/conformance/expectations.txt, which the
  conformance tier holds the run to (files, tests, and per class: passed, unchecked, listed,
  out-of-scope = protobuf-message + protobuf-enum + not-in-kubernetes + test-function);
- `machine.<name>.<what>`: numa-probe on a mocked machine (devices, slices; pci-functions from
  the tree);
- every other key: the "key value" lines the judges write with --counts into COUNTS_DIR (they
  run first: ctest fixture doc-counts).

    scripts/check-doc-counts.py --source DIR --build DIR --counts DIR --numa-probe BIN \\
        --machines DIR
"""

import argparse
import json
import pathlib
import re
import subprocess
import sys

MARKER = re.compile(r"(\d[\d,]*)<!-- =([A-Za-z0-9_.-]+) -->")

# The files that state counts; each must keep at least one marker.
DOCUMENTS = [
    "README.md",
    "docs/ALLOCATOR.md",
    "docs/TESTING.md",
    "docs/PERFORMANCE.md",
    "tests/upstream/README.md",
    "tests/e2e/README.md",
    "tests/e2e/node/README.md",
]

# The sanitizer tier's selection (scripts/test.sh sanitizer_tests).
SANITIZER_LABELS = "^(unit|conformance-driver)$"
SANITIZER_EXCLUDE = r"Conformance\.Driver/.*_list$"

E2E_TEST = re.compile(r"^func (Test\w+)\(t \*testing\.T\)", re.MULTILINE)


def ctest_count(build, *selection):
    out = subprocess.run(["ctest", "-N", *selection], cwd=build, check=True,
                         capture_output=True, text=True).stdout
    found = re.search(r"Total Tests: (\d+)", out)
    if not found:
        raise RuntimeError(f"ctest -N {' '.join(selection)} printed no 'Total Tests'")
    return int(found.group(1))


def judge_counts(folder):
    counts = {}
    for path in sorted(pathlib.Path(folder).glob("*.txt")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            fields = line.split()
            if len(fields) != 2 or not fields[1].isdigit():
                raise RuntimeError(f"{path}:{number}: want 'key value', got {line!r}")
            counts[fields[0]] = int(fields[1])
    return counts


def machine_counts(numa_probe, machines):
    counts = {}
    for machine in sorted(pathlib.Path(machines).iterdir()):
        sysfs = machine / "sys"
        if not sysfs.is_dir():
            continue
        out = subprocess.run([numa_probe, "--sysfs-root", str(sysfs), "--output", "json"],
                             check=True, capture_output=True, text=True).stdout
        slices = json.loads(out)["items"]
        prefix = f"machine.{machine.name}."
        counts[prefix + "slices"] = len(slices)
        counts[prefix + "devices"] = sum(len(s["spec"].get("devices", [])) for s in slices)
        pci = sysfs / "bus" / "pci" / "devices"
        counts[prefix + "pci-functions"] = len(list(pci.iterdir())) if pci.is_dir() else 0
    return counts


def conformance_counts(source):
    classes = {}
    files = 0
    for line in (source / "cluster" / "cel" / "conformance" / "expectations.txt").read_text().splitlines():
        # `file | <name> | passed=<n> <class>=<n>...` (tests/upstream/README.md, "Expectation files")
        fields = [field.strip() for field in line.split(" | ", 2)]
        if len(fields) != 3 or fields[0] != "file":
            continue
        files += 1
        for field in fields[2].split():
            name, _, value = field.partition("=")
            classes[name] = classes.get(name, 0) + int(value)
    out_of_scope = sum(classes.get(c, 0) for c in
                       ("protobuf-message", "protobuf-enum", "not-in-kubernetes", "test-function"))
    counts = {"cel-conformance.files": files, "cel-conformance.tests": sum(classes.values()),
              "cel-conformance.out-of-scope": out_of_scope}
    for name in ("passed", "unchecked", "listed"):
        counts["cel-conformance." + name] = classes.get(name, 0)
    return counts


def static_counts(source):
    e2e = sum(len(E2E_TEST.findall(p.read_text()))
              for p in (source / "tests" / "e2e").glob("*_test.go"))
    node = sum(len(E2E_TEST.findall(p.read_text()))
               for p in (source / "tests" / "e2e" / "node").glob("*_test.go"))
    scenarios = sum(1 for p in (source / "testdata" / "allocator").iterdir() if p.is_dir())
    return {"e2e.tests": e2e, "node-e2e.tests": node, "scenarios.total": scenarios}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True, type=pathlib.Path)
    parser.add_argument("--build", required=True, type=pathlib.Path)
    parser.add_argument("--counts", required=True, type=pathlib.Path)
    parser.add_argument("--numa-probe", required=True)
    parser.add_argument("--machines", required=True)
    args = parser.parse_args()

    values = static_counts(args.source)
    values.update(conformance_counts(args.source))
    values["ctest.tests"] = ctest_count(args.build)
    values["ctest.sanitizer-tests"] = ctest_count(args.build, "-L", SANITIZER_LABELS,
                                                  "-E", SANITIZER_EXCLUDE)
    values.update(machine_counts(args.numa_probe, args.machines))
    values.update(judge_counts(args.counts))

    problems = []
    checked = 0
    for name in DOCUMENTS:
        path = args.source / name
        text = path.read_text()
        markers = 0
        for number, line in enumerate(text.splitlines(), 1):
            for found in MARKER.finditer(line):
                markers += 1
                stated = int(found.group(1).replace(",", ""))
                key = found.group(2)
                if key not in values:
                    problems.append(f"{name}:{number}: no count is named {key!r}")
                elif stated != values[key]:
                    problems.append(f"{name}:{number}: says {stated} for {key}, which is "
                                    f"{values[key]} now")
        if markers == 0:
            problems.append(f"{name}: states no counted number (no <!-- =key --> marker)")
        checked += markers
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-doc-counts: {len(problems)} stale or unknown counts; the values now:")
        for key in sorted(values):
            print(f"  {key} {values[key]}")
        return 1
    print(f"check-doc-counts: {checked} counted numbers in {len(DOCUMENTS)} files, all current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
