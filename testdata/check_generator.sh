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
