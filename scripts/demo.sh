#!/usr/bin/env bash
# Quick start: install what is missing, build, and show what the driver would publish for a
# bundled mocked machine (a 2-socket AMD EPYC in NPS4 mode with a GPU and a NIC).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --build-only
# Only what the demo runs: the two tools and the mocked machines, not the tests.
scripts/build.sh --target numa-probe --target dra-allocate --target generated_sysfs
MACHINE="${1:-epyc-2s-nps4}"
ROOT="build/testdata/sysfs/$MACHINE/sys"
echo
echo "=== numa-probe --sysfs-root $ROOT --numa-list"
build/bin/numa-probe --sysfs-root "$ROOT" --node-name demo-node --numa-list
echo
echo "=== the same slices as YAML (kubectl apply -f - accepts this)"
build/bin/numa-probe --sysfs-root "$ROOT" --node-name demo-node --numa-list --output yaml
echo
echo "=== dra-allocate: would a GPU + NIC + CPU claim fit on one NUMA domain of this node?"
echo "=== (numa-probe ... --output json | dra-allocate --explain - classes.yaml claims.yaml)"
set +e
build/bin/numa-probe --sysfs-root "$ROOT" --node-name demo-node --numa-list --output json \
  | build/bin/dra-allocate --explain - testdata/demo/classes.yaml testdata/demo/gpu-nic-cpu.yaml
status=${PIPESTATUS[1]}
set -e
echo "=== dra-allocate exited $status (0: all claims allocated, 1: some not, 2: invalid input)"
[ "$status" -le 1 ]
