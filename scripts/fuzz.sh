#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) in the sanitizer build (scripts/sanitizer-build.sh: clang,
# ASan+UBSan, build-san/ or $FUZZ_BUILD_DIR) and runs each for SECONDS (default 60), starting
# from the committed seed corpus in tests/fuzz/corpus/<target>. Fails when a target crashes, hangs
# (-timeout), runs out of memory or breaks a checked contract; the input that did it is saved as
# <build>/fuzz/crashes/<target>-crash-<sha1> and the log as <build>/fuzz/logs/<target>.log.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 cel checkpoint
#   scripts/fuzz.sh 0                          build only
#
# Alone, on a folder that does not exist yet, it configures it without the tests and builds only
# the fuzzers it runs. In scripts/test.sh the sanitizer tier has built them already (with the
# tests, in the same folder), so this only runs them. New inputs found by a run go to
# <build>/fuzz/corpus/<target> (kept between runs), never into fuzz/corpus. Needs clang and its
# libFuzzer runtime (Debian: clang, libclang-rt-14-dev). See tests/fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH="${1:-60}"
shift || true
case "$SECONDS_EACH" in
  '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac
ALL_TARGETS=(sysfs cel allocator_input checkpoint dra_service)
if [ "$#" -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi
BUILD_DIR="${FUZZ_BUILD_DIR:-build-san}"
CXX_BIN="${FUZZ_CXX:-clang++}"

if ! command -v "$CXX_BIN" >/dev/null 2>&1; then
  echo "fuzz.sh: $CXX_BIN not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    "$CXX_BIN" -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
  echo "fuzz.sh: $CXX_BIN cannot link libFuzzer (Debian: apt-get install libclang-rt-14-dev)" >&2
  exit 1
fi

build_targets=()
for target in "${TARGETS[@]}"; do build_targets+=(--target "${target}_fuzzer"); done
# The tests are left out of a new folder only: in one the sanitizer tier made they stay.
configure=()
[ -f "$BUILD_DIR/CMakeCache.txt" ] || configure+=(-DNUMADRA_BUILD_TESTS=OFF)
BUILD_DIR="$BUILD_DIR" scripts/sanitizer-build.sh "${build_targets[@]}" "${configure[@]}"

OUT="$BUILD_DIR/fuzz"
[ "$SECONDS_EACH" -eq 0 ] && { echo "fuzz.sh: built ${TARGETS[*]} in $OUT"; exit 0; }
mkdir -p "$OUT/crashes" "$OUT/logs"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

failed=()
summary=()
for target in "${TARGETS[@]}"; do
  binary="$OUT/${target}_fuzzer"
  corpus="$OUT/corpus/$target"
  log="$OUT/logs/$target.log"
  mkdir -p "$corpus"
  echo "=== $target: ${SECONDS_EACH}s (log: $log)"
  status=0
  # The committed seeds are read, new inputs are written to the build folder's corpus only.
  "$binary" -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$OUT/crashes/$target-" \
    "$corpus" "tests/fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  if [ "$status" -eq 0 ] && { [ -z "$runs" ] || [ "$runs" -eq 0 ]; }; then
    # A target that executed nothing judged nothing: never a pass.
    failed+=("$target")
    summary+=("$target: FAILED: no input was executed (libFuzzer printed ${runs:-no} number_of_executed_units); see $log")
  elif [ "$status" -ne 0 ]; then
    failed+=("$target")
    summary+=("$target: FAILED (exit $status) after ${runs:-?} runs; see $log")
    grep -E "ERROR|contract broken|SUMMARY|Test unit written" "$log" | head -20 || true
  else
    summary+=("$target: ok, ${runs:-?} runs, ${rate:-?} exec/s, ${cov:-cov ?}")
  fi
done

echo
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz.sh: ${failed[*]} failed; reproduce with $OUT/<target>_fuzzer <crash file>" >&2
  exit 1
fi
