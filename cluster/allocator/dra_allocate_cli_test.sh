#!/usr/bin/env bash
# dra-allocate as a user runs it: exit codes, stdin, and the slices numa-probe prints for every
# mocked machine (plain, --numa-list, --shared-consumable-capacity) read back without error.
# Usage: dra_allocate_cli_test.sh DRA_ALLOCATE NUMA_PROBE GENERATED_SYSFS_DIR
set -uo pipefail
allocate="$1"
probe="$2"
machines="$3"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

cat >"$work/classes.yaml" <<'YAML'
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "numa.dra.dev" && device.attributes["numa.dra.dev"].type == "gpu"'}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: nic}
spec:
  selectors:
  - cel: {expression: 'device.driver == "numa.dra.dev" && device.attributes["numa.dra.dev"].type == "nic"'}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: cpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "numa.dra.dev" && device.attributes["numa.dra.dev"].type == "cpu"'}
YAML
cat >"$work/claim.yaml" <<'YAML'
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: co-placed, namespace: default}
spec:
  devices:
    requests:
    - name: cpu
      exactly: {deviceClassName: cpu}
    - name: nic
      firstAvailable:
      - {name: nic, deviceClassName: nic}
      - {name: none, deviceClassName: cpu}
    constraints:
    - matchAttribute: resource.kubernetes.io/numaNode
YAML

run() { # expected-exit args...
  local want="$1"; shift
  "$allocate" "$@" >"$work/out" 2>"$work/err"
  local got=$?
  [ "$got" -eq "$want" ] || { fail "dra-allocate $* exited $got, want $want"; cat "$work/err"; }
}
run 0 --help
run 2
run 2 --bogus "$work/claim.yaml"
run 2 --output xml "$work/claim.yaml"
run 2 --time-budget soon "$work/claim.yaml"
run 2 /nonexistent.yaml
grep -q "/nonexistent.yaml" "$work/err" || fail "missing file not named: $(cat "$work/err")"

for machine in "$machines"/*/; do
  name=$(basename "$machine")
  for flags in "" "--numa-list" "--shared-consumable-capacity"; do
    # shellcheck disable=SC2086
    if ! "$probe" --sysfs-root "$machine/sys" --node-name node-1 $flags --output json >"$work/slices.json" 2>"$work/probe.err"; then
      continue  # machines the probe refuses are the probe's own test
    fi
    "$allocate" --node node-1 - "$work/classes.yaml" "$work/claim.yaml" <"$work/slices.json" >"$work/out" 2>"$work/err"
    status=$?
    if [ "$status" -eq 2 ]; then
      fail "$name $flags: numa-probe's slices were refused: $(cat "$work/err")"
    elif [ "$status" -eq 0 ] && ! grep -q 'allocation:' "$work/out"; then
      fail "$name $flags: exit 0 without an allocation"
    fi
  done
done

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "dra-allocate CLI: all checks passed"
