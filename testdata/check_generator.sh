#!/usr/bin/env bash
# The mocked machines must come out byte-identical on every run (the tests and the benchmark
# compare against facts derived from them).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/generate_sysfs.py" --out "$work/a" >/dev/null
PYTHONHASHSEED=12345 /usr/bin/python3 "$here/generate_sysfs.py" --out "$work/b" >/dev/null
diff -r --no-dereference "$work/a" "$work/b"
count=$(find "$work/a" -mindepth 1 -maxdepth 1 -type d | wc -l)
[ "$count" -ge 18 ] || { echo "only $count machines generated" >&2; exit 1; }
echo "generator deterministic: $count machines"

# --host-mirror reads a machine's CPUs and nodes back from its /sys: mirroring a generated
# machine must give the same CPU and node files (the PCI part is the mirror's own).
for machine in xeon-6320r-2s snc2-interleaved offline-cpus; do
  /usr/bin/python3 "$here/generate_sysfs.py" --host-mirror "$work/a/$machine/sys" --out "$work/m-$machine" >/dev/null
  for file in cpu/online cpu/offline node/online node/node0/cpulist node/node1/cpulist node/node1/distance \
    cpu/cpu3/topology/physical_package_id cpu/cpu3/topology/core_id cpu/cpu3/topology/thread_siblings_list; do
    original="$work/a/$machine/sys/devices/system/$file"
    mirrored="$work/m-$machine/host-mirror/sys/devices/system/$file"
    [ -e "$original" ] || continue
    cmp -s "$original" "$mirrored" || {
      echo "--host-mirror of $machine: $file differs: '$(cat "$original")' vs '$(cat "$mirrored" 2>&1)'" >&2
      exit 1
    }
  done
done
echo "--host-mirror reproduces the CPU and node files of 3 machines"
