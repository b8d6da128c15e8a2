#!/usr/bin/env bash
# dra-allocate judged by upstream's structured allocator (k8s.io/dynamic-resource-allocation
# v0.37.2, every DRA feature on) on seeded generated inputs. CI runs a few thousand
# (ctest -R upstream.allocator); this runs as many as you have time for.
#
#   scripts/oracle.sh                  20,000 inputs from seed 1
#   scripts/oracle.sh --long           200,000 inputs from seed 1
#   scripts/oracle.sh COUNT [FIRST]    COUNT inputs from seed FIRST
#
# A difference names its seed; its input, minimised, is kept under
# build/tests/upstream/allocator-oracle-long/failures/seed-N.json, ready to become a
# testdata/allocator scenario. `build/bin/upstream-allocate --generate N` prints seed N's input.
set -euo pipefail
cd "$(dirname "$0")/.."

count=20000
first=1
case "${1:-}" in
  --long) count=200000 ;;
  '') ;;
  *[!0-9]*) echo "usage: scripts/oracle.sh [--long | COUNT [FIRST]]" >&2; exit 2 ;;
  *) count="$1"; first="${2:-1}" ;;
esac

BUILD_DIR="${BUILD_DIR:-build}"
# The Go programs need a Go >= the go.mod's version (scripts/lib/go.sh; cmake/Go.cmake finds the
# same one): say which, or why there is none.
# shellcheck source=lib/go.sh
source scripts/lib/go.sh
numadra_use_go oracle.sh
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD_DIR" --target dra-allocate upstream-allocate
scratch="$BUILD_DIR/tests/upstream/allocator-oracle-long"
rm -rf "$scratch"
exec "$BUILD_DIR/bin/upstream-allocate" --dra-allocate "$BUILD_DIR/bin/dra-allocate" \
  --seeds "$count" --first "$first" --scratch "$scratch/inputs" --failures "$scratch/failures"
