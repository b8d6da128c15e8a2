#!/usr/bin/env bash
# Installs what is missing, builds, runs every test with ctest, then builds once more with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs the unit tests and the driver
# conformance suite under them, and last builds the libFuzzer targets with clang and runs each
# for a bounded time from its committed corpus (NUMADRA_FUZZ_SECONDS, default 30 per target;
# scripts/fuzz.sh).
# --no-sanitizers skips the second build, --no-fuzz the third.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=1
fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-sanitizers) sanitizers=0 ;;
    --no-fuzz) fuzz=0 ;;
    *) echo "usage: scripts/test.sh [--no-sanitizers] [--no-fuzz]" >&2; exit 2 ;;
  esac
done
fuzz_seconds="${NUMADRA_FUZZ_SECONDS:-30}"
case "$fuzz_seconds" in
  '' | *[!0-9]*) echo "test.sh: NUMADRA_FUZZ_SECONDS must be a number of seconds" >&2; exit 2 ;;
esac

if [ "$fuzz" -eq 1 ]; then scripts/install-deps.sh --fuzz; else scripts/install-deps.sh; fi
scripts/build.sh
# Everything, including the CEL conformance suite (label "conformance"), which fetches the CEL
# project's test data from the npm registry into ~/.cache/numadra the first time.
(cd build && ctest --output-on-failure --parallel "$(nproc)" --timeout 600)

if [ "$sanitizers" -eq 1 ]; then
  BUILD_DIR=build-asan BUILD_TYPE=Debug scripts/build.sh -DNUMADRA_SANITIZE=ON -DNUMADRA_BUILD_BENCH=OFF
  # The unit tests, and the driver conformance suite (the daemon end to end on every mocked
  # machine) with its deadlines stretched for the sanitizers' slowdown.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     NUMADRA_CONFORMANCE_TIME_SCALE=3 \
     ctest --output-on-failure --parallel "$(nproc)" --timeout 900 -L '^(unit|conformance-driver)$')
fi

if [ "$fuzz" -eq 1 ]; then
  # A crash, hang or leak fails the run; the input is kept under build-fuzz/fuzz/crashes/.
  scripts/fuzz.sh "$fuzz_seconds"
fi
