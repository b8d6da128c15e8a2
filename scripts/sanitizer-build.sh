#!/usr/bin/env bash
# The sanitizer build: clang with AddressSanitizer + UndefinedBehaviorSanitizer into build-san/
# (or $BUILD_DIR), warnings as errors, ccache when installed (through scripts/build.sh). One build
# serves two tiers of scripts/test.sh, so the libraries are compiled with the sanitizers once:
# the sanitizer tests (ctest -L unit and conformance-driver) and the libFuzzer targets
# (scripts/fuzz.sh builds only those here when run alone, and runs them).
#
#   scripts/sanitizer-build.sh [--target TARGET]... [CMAKE_ARGUMENT...]
#
# Debug build type, so NDEBUG is off and the assert()s of the headers we include
# (nlohmann::json, spdlog, ...) are checked, but at -O1 with line tables only: ASan's own advice
# (the CPU-bound tests ran ~30 % faster than GCC's -O0 build did), and line tables are all a
# sanitizer report needs (full -g compiles more slowly). The libraries also carry libFuzzer's
# coverage instrumentation (tests/fuzz/CMakeLists.txt). FUZZ_CC/FUZZ_CXX name another clang (default clang,
# clang++); they are read on a folder's first configure only, like BUILD_TYPE in build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build-san}"
CC_BIN="${FUZZ_CC:-clang}"
CXX_BIN="${FUZZ_CXX:-clang++}"
if ! command -v "$CXX_BIN" >/dev/null 2>&1; then
  echo "sanitizer-build.sh: $CXX_BIN not found (Debian: scripts/install-deps.sh --fuzz)" >&2
  exit 1
fi
# A folder configured earlier with GCC (as build-asan/ was) cannot hold the fuzzers.
if [ -f "$BUILD_DIR/CMakeCache.txt" ] &&
    ! grep -qs 'set(CMAKE_CXX_COMPILER_ID "Clang")' "$BUILD_DIR"/CMakeFiles/*/CMakeCXXCompiler.cmake; then
  echo "sanitizer-build.sh: $BUILD_DIR was configured with another compiler than clang;" \
       "remove it or name another folder with BUILD_DIR" >&2
  exit 1
fi
CC="$CC_BIN" CXX="$CXX_BIN" BUILD_DIR="$BUILD_DIR" BUILD_TYPE=Debug exec scripts/build.sh \
  -DNUMADRA_SANITIZE=ON -DNUMADRA_FUZZ=ON -DNUMADRA_BUILD_BENCH=OFF \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" "$@"
