#!/usr/bin/env bash
# The driver conformance suite (tests/conformance/): for every mocked machine, the fake API server
# and numa-dra-plugin as processes, this suite as the kubelet and the scheduler, over loopback and
# unix sockets (registration, slices vs numa-probe, allocate + prepare, CDI specs judged by the
# official CDI library, a real podman container per claim, metadata, health faults,
# SIGKILL/restart, SIGTERM). Builds what is missing, runs `ctest -L conformance-driver`, prints a
# summary per machine. Containers need root, podman, runc and busybox-static; without them the
# step is reported as skipped (a failure with CI=true); NUMADRA_CONFORMANCE_CONTAINERS=0 leaves
# it out.
#
#   scripts/conformance.sh [--machine NAME]... [--verbose] [--jobs N]
#
# BUILD_DIR (default build) picks the build tree; a fresh clone is configured and built by
# scripts/build.sh. NUMADRA_CONFORMANCE_TIME_SCALE=N stretches every deadline (slow machines,
# sanitizer builds). Exit status: 0 when every case passed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
machines=()
verbose=0
jobs="$(nproc)"
while [ $# -gt 0 ]; do
  case "$1" in
    --machine) machines+=("$2"); shift 2 ;;
    --verbose) verbose=1; shift ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "conformance.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  BUILD_DIR="$BUILD_DIR" scripts/build.sh
else
  if grep -q '^NUMADRA_BUILD_TESTS:BOOL=OFF' "$BUILD_DIR/CMakeCache.txt"; then
    echo "conformance.sh: $BUILD_DIR was configured with NUMADRA_BUILD_TESTS=OFF" >&2
    exit 2
  fi
  # The suite and everything it drives (daemon, numa-probe, API server, mocked machines).
  cmake --build "$BUILD_DIR" --parallel "$(nproc)" --target conformance_test
fi

report="$PWD/$BUILD_DIR/conformance-report"
rm -rf "$report"
mkdir -p "$report"

filter=()
if [ "${#machines[@]}" -gt 0 ]; then
  names=()
  for m in "${machines[@]}"; do names+=("${m//[^A-Za-z0-9]/_}"); done
  regex="$(IFS='|'; echo "${names[*]}")"
  filter=(-R "/(${regex})_[a-z]+\$")
fi

# The cases ctest knows, so a case that crashed before writing its report still shows up
# (listed before the run: `ctest -N` rewrites Testing/Temporary/LastTest.log).
mapfile -t cases < <(cd "$BUILD_DIR" && ctest -N -L conformance-driver "${filter[@]}" \
                       | sed -n 's|.*Machines/Conformance\.Driver/\([A-Za-z0-9_]*\)$|\1|p')

set +e
(cd "$BUILD_DIR" && NUMADRA_CONFORMANCE_REPORT_DIR="$report" \
   ctest -L conformance-driver --output-on-failure --parallel "$jobs" "${filter[@]}")
status=$?
set -e

echo
echo "=== conformance summary (${#cases[@]} cases; full notes in $report)"
printf '%-20s %-7s %-6s %7s  %s\n' machine profile result seconds "slices / claims / health faults"
failed=0
declare -A seen=()
for file in "$report"/*.txt; do
  [ -e "$file" ] || continue
  header="$(head -1 "$file")"
  machine="$(sed -n 's/.*machine=\([^ ]*\).*/\1/p' <<<"$header")"
  profile="$(sed -n 's/.*profile=\([^ ]*\).*/\1/p' <<<"$header")"
  result="$(sed -n 's/.*result=\([^ ]*\).*/\1/p' <<<"$header")"
  seconds="$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$header")"
  seen["${machine//[^A-Za-z0-9]/_}_${profile}"]=1
  [ "$result" = PASS ] || failed=$((failed + 1))
  slices="$(sed -n 's/^  3 slices: \([0-9]* slices, [0-9]* devices\).*/\1/p' "$file")"
  claims="$(sed -n 's/^  4 prepare: \([0-9]*\) claims, \([0-9]*\) devices.*/\1 claims, \2 devices/p' "$file")"
  faults="$(sed -n 's/^  5 health: .*v1: \(.*\)/\1/p' "$file" | grep -o -E 'link x1|AER non-fatal|removal|no PCI device to break' | paste -sd, -)"
  printf '%-20s %-7s %-6s %7.1f  %s / %s / %s\n' "$machine" "$profile" "$result" "${seconds:-0}" \
    "${slices:--}" "${claims:--}" "${faults:--}"
  if [ "$verbose" -eq 1 ] || [ "$result" != PASS ]; then
    tail -n +2 "$file"
  fi
done
for case in "${cases[@]}"; do
  if [ -z "${seen[$case]:-}" ]; then
    printf '%-28s %-6s  (no report: crashed or timed out, see the ctest output above)\n' "$case" FAIL
    failed=$((failed + 1))
  fi
done
if [ "$status" -eq 0 ] && [ "$failed" -eq 0 ]; then
  echo "=== all ${#cases[@]} conformance cases passed"
else
  echo "=== conformance: $failed failed (ctest exit $status)"
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
