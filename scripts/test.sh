#!/usr/bin/env bash
# Installs what is missing, builds, runs every test with ctest, then builds once more with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs the unit tests under them.
# --no-sanitizers skips the second build.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=1
for arg in "$@"; do
  case "$arg" in
    --no-sanitizers) sanitizers=0 ;;
    *) echo "usage: scripts/test.sh [--no-sanitizers]" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh
scripts/build.sh
# Everything, including the CEL conformance suite (label "conformance"), which fetches the CEL
# project's test data from the npm registry into ~/.cache/numadra the first time.
(cd build && ctest --output-on-failure --parallel "$(nproc)" --timeout 600)

if [ "$sanitizers" -eq 1 ]; then
  BUILD_DIR=build-asan BUILD_TYPE=Debug scripts/build.sh -DNUMADRA_SANITIZE=ON -DNUMADRA_BUILD_BENCH=OFF
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure --parallel "$(nproc)" --timeout 900 -L unit)
fi
