#!/usr/bin/env bash
# The whole test suite, tier by tier (docs/TESTING.md: what each tier proves, what it costs, how to
# run it alone):
#   1. install what is missing (scripts/install-deps.sh --fuzz; a Go >= the go.mod's version too:
#      the pinned toolchain into ~/.cache/numadra/go where none is found), then prove that path
#      on its own: from Debian's go alone, with /usr/local/go out of sight, the installer gives a
#      Go that runs two judges' tests (scripts/check-go-install.sh)
#   2. build everything with warnings as errors (scripts/build.sh: RelWithDebInfo, the Go test
#      programs too)
#   3. every test of that build (ctest: unit, cli, data, deploy, go, the CEL conformance tests,
#      the driver conformance suite with a real container runtime)
#   4. the driver against a real control plane: etcd, kube-apiserver, kube-controller-manager and
#      kube-scheduler v1.37.2 built from source, kubectl and Helm (scripts/e2e.sh; the binaries
#      are cached per version in ~/.cache/numadra/e2e, so only the first run builds them)
#   4b. the driver on a real node: kubelet v1.37.2 and containerd v2.4.2 (with Debian's runc) in
#      namespaces of their own (loopback only, no route off the machine), the driver's image
#      installed by `helm install`, real pods getting its devices (scripts/node-e2e.sh; kubelet
#      and containerd cached by version beside the control plane)
#   5. the other build types: Release (numa-probe, numa-dra-plugin) and MinSizeRel (numa-probe,
#      dra-allocate) (scripts/build-types.sh)
#   6. AddressSanitizer + UndefinedBehaviorSanitizer: one clang build (scripts/sanitizer-build.sh,
#      build-san/) of the tests and the libFuzzer targets, then the unit tests and the driver
#      conformance suite under them
#   7. the libFuzzer targets of that build, NUMADRA_FUZZ_SECONDS each (default 10: a smoke run
#      from the committed corpus; long runs are scripts/fuzz.sh by hand)
# --no-e2e (also skips 4b), --no-node, --no-build-types, --no-sanitizers and --no-fuzz skip tiers
# 4, 4b, 5, 6 and 7. With --no-sanitizers the
# fuzz tier builds the fuzzers itself (scripts/fuzz.sh: only them, in build-san/); with --no-fuzz
# the sanitizer build leaves them out.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/go.sh
source scripts/lib/go.sh
# shellcheck source=lib/ci.sh
source scripts/lib/ci.sh
build_types=1
e2e=1
node=1
sanitizers=1
fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-build-types) build_types=0 ;;
    --no-e2e) e2e=0 ;;
    --no-node) node=0 ;;
    --no-sanitizers) sanitizers=0 ;;
    --no-fuzz) fuzz=0 ;;
    *) echo "usage: scripts/test.sh [--no-e2e] [--no-node] [--no-build-types] [--no-sanitizers] [--no-fuzz]" >&2; exit 2 ;;
  esac
done
fuzz_seconds="${NUMADRA_FUZZ_SECONDS:-10}"
case "$fuzz_seconds" in
  '' | *[!0-9]*) echo "test.sh: NUMADRA_FUZZ_SECONDS must be a number of seconds" >&2; exit 2 ;;
esac
# A tier is never green without having run: 0 seconds would build the fuzzers and fuzz nothing.
if [ "$fuzz" -eq 1 ] && [ "$fuzz_seconds" -lt 1 ]; then
  echo "test.sh: NUMADRA_FUZZ_SECONDS=$fuzz_seconds fuzzes nothing; give at least 1 (or skip the tier with --no-fuzz)" >&2
  exit 2
fi

# Each tier's wall time, printed at the end (also when a tier fails).
timings=()
report() {
  local status=$?
  echo
  echo "test.sh: tier times (s)"
  printf '  %s\n' "${timings[@]}"
  [ "$status" -eq 0 ] || echo "test.sh: FAILED (exit $status)"
}
trap report EXIT
tier() {
  local name="$1"
  shift
  local start=$SECONDS
  echo
  echo "=== test.sh tier: $name"
  "$@"
  timings+=("$(printf '%-34s %5d' "$name" $((SECONDS - start)))")
}

# clang and libFuzzer's runtime: the sanitizer build and the fuzzers need them.
install() {
  if [ "$fuzz" -eq 1 ] || [ "$sanitizers" -eq 1 ]; then
    scripts/install-deps.sh --fuzz
  else
    scripts/install-deps.sh
  fi
}
# Everything, including the CEL conformance tests (label "conformance"), which fetch the CEL
# project's test data from the npm registry into ~/.cache/numadra the first time.
main_tests() {
  (cd build && ctest --output-on-failure --parallel "$(nproc)" --timeout 600)
}
# The real control plane needs a Go >= the go.mod's version to build it (scripts/lib/go.sh finds
# it; the install tier provides one): in CI a missing Go is an error, elsewhere the tier says
# loudly that it was skipped.
e2e_tests() {
  if ! numadra_find_go; then
    numadra_skip_or_fail test.sh "the control-plane tier (scripts/e2e.sh) needs Go: $(numadra_go_not_found)"
    return
  fi
  scripts/e2e.sh
}
# The real node needs the same Go (it builds the kubelet and containerd) and root.
node_tests() {
  if ! numadra_find_go; then
    numadra_skip_or_fail test.sh "the real-node tier (scripts/node-e2e.sh) needs Go: $(numadra_go_not_found)"
    return
  fi
  scripts/node-e2e.sh
}
# One clang ASan+UBSan build for this tier and the fuzz tier: the tests, the programs they run and
# the fuzzers (the libraries compiled once; GCC's Debug build and clang's fuzz build used to
# compile them twice). -DNUMADRA_BUILD_TESTS=ON: scripts/fuzz.sh alone makes the folder without.
sanitizer_build() {
  local targets=(--target all)
  [ "$fuzz" -eq 0 ] || targets+=(--target numadra_fuzzers)
  BUILD_DIR=build-san scripts/sanitizer-build.sh "${targets[@]}" -DNUMADRA_BUILD_TESTS=ON
}
# The unit tests, and the driver conformance suite (the daemon end to end on every mocked machine,
# in the scalar numaNode profile) with its deadlines stretched for the sanitizers' slowdown. The
# list profile runs the same daemon code with other attribute values, and the containers check
# the specs: the main tier did both; here the daemon's memory is the point.
sanitizer_tests() {
  (cd build-san && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     NUMADRA_CONFORMANCE_TIME_SCALE=3 NUMADRA_CONFORMANCE_CONTAINERS=0 \
     ctest --output-on-failure --parallel "$(nproc)" --timeout 900 -L '^(unit|conformance-driver)$' \
       -E 'Conformance\.Driver/.*_list$')
}

tier "install" install
tier "Go install from Debian's go" scripts/check-go-install.sh
tier "build (RelWithDebInfo, -Werror)" scripts/build.sh
tier "tests" main_tests
if [ "$e2e" -eq 1 ]; then
  tier "e2e (control plane v1.37.2)" e2e_tests
  if [ "$node" -eq 1 ]; then
    tier "node (kubelet v1.37.2, containerd 2.4.2)" node_tests
  fi
fi
if [ "$build_types" -eq 1 ]; then
  tier "build types (Release, MinSizeRel)" scripts/build-types.sh
fi
if [ "$sanitizers" -eq 1 ]; then
  tier "sanitizer build (clang ASan+UBSan)" sanitizer_build
  tier "sanitizer tests" sanitizer_tests
fi
if [ "$fuzz" -eq 1 ]; then
  # A crash, hang or leak fails the run; the input is kept under build-san/fuzz/crashes/. After
  # the sanitizer tier the fuzzers are built: fuzz.sh finds nothing to do and only runs them.
  fuzz_tier="fuzz (${fuzz_seconds} s per target)"
  [ "$sanitizers" -eq 1 ] || fuzz_tier="fuzz (build + ${fuzz_seconds} s per target)"
  tier "$fuzz_tier" env FUZZ_BUILD_DIR=build-san scripts/fuzz.sh "$fuzz_seconds"
fi
