#!/usr/bin/env bash
# Configures and builds into build/ (or $BUILD_DIR), warnings as errors (NUMADRA_WERROR).
#   scripts/build.sh [--target TARGET]... [CMAKE_ARGUMENT...]
# Without --target everything is built (the tools, the tests, the benchmarks); with it only those
# targets and what they need. BUILD_TYPE (default RelWithDebInfo) is read on a folder's first
# configure. ccache is used when it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
targets=()
cmake_args=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --target) [ "$#" -ge 2 ] || { echo "build.sh: --target needs a name" >&2; exit 2; }
              targets+=("$2"); shift 2 ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
configure=(-DNUMADRA_WERROR=ON)
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  command -v ninja >/dev/null 2>&1 && configure+=(-G Ninja)
  command -v ccache >/dev/null 2>&1 && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  configure+=(-DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}")
  cmake -S . -B "$BUILD_DIR" "${configure[@]}" "${cmake_args[@]}"
else
  cmake -S . -B "$BUILD_DIR" "${configure[@]}" "${cmake_args[@]}" >/dev/null
fi
target_args=()
[ "${#targets[@]}" -gt 0 ] && target_args=(--target "${targets[@]}")
cmake --build "$BUILD_DIR" --parallel "$(nproc)" "${target_args[@]}"
