#!/usr/bin/env bash
# The numa-probe binary as a user runs it: exit codes and output shapes.
# Usage: cli_test.sh NUMA_PROBE GENERATED_SYSFS_DIR
set -uo pipefail
probe="$1"
machines="$2"
failures=0
expect_exit() {
  local want="$1"; shift
  "$probe" "$@" >/tmp/cli_out.$$ 2>/tmp/cli_err.$$
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: numa-probe $* exited $got, want $want"; cat /tmp/cli_err.$$; failures=$((failures + 1))
  fi
}
expect_exit 0 --help
expect_exit 0 --version
expect_exit 2 --bogus
expect_exit 2 --output xml
expect_exit 2 --sysfs-root /nonexistent --node-name n
expect_exit 2 --sysfs-root "$machines" --node-name n   # the folder of machines is not a sysfs
expect_exit 0 --sysfs-root "$machines/epyc-2s-nps4/sys" --node-name n --numa-list --output json
/usr/bin/python3 - /tmp/cli_out.$$ <<'PY' || failures=$((failures + 1))
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["kind"] == "List", doc["kind"]
lists = [d["attributes"]["resource.kubernetes.io/numaNode"].get("ints")
         for s in doc["items"] for d in s["spec"].get("devices", [])
         if "resource.kubernetes.io/numaNode" in d.get("attributes", {})]
assert [5, 4, 6, 7] in lists and [6, 4, 5, 7] in lists, lists
PY
rm -f /tmp/cli_out.$$ /tmp/cli_err.$$
[ "$failures" -eq 0 ] && echo "numa-probe CLI: all checks passed"
exit "$failures"
