#!/usr/bin/env bash
# The driver against a real control plane: etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler of Kubernetes v1.37.2, built from source through the Go module proxy
# (tests/e2e/go.mod pins them), with kubectl and Helm, then `go test` in tests/e2e.
#
#   scripts/e2e.sh [--keep] [--bench] [FILTER]
#
#   --keep   leave the clusters' folders (certificates, kubeconfigs, each component's log) in
#            $BUILD_DIR/e2e/ after a passing run too (a failing run always keeps them)
#   NUMADRA_E2E_HOLD=1 scripts/e2e.sh TestTheControlPlaneServesResourceV1
#            starts both control planes and keeps them running until Ctrl-C, to try things by
#            hand (tests/e2e/README.md)
#   --bench  run the benchmarks instead of the tests (FILTER: a `go test -bench` pattern):
#            BenchmarkDaemonStartupToSlicesPublished, BenchmarkSchedulerAgainstDraAllocate
#            (docs/PERFORMANCE.md, "Against the real control plane")
#   FILTER   a `go test -run` pattern: only the tests it matches
#
# The control-plane binaries are built once per version and go.sum into
# ${NUMADRA_E2E_CACHE:-~/.cache/numadra/e2e}/<version>-<go.sum hash>/, so a second run does not
# rebuild them; the kubelet of scripts/node-e2e.sh is built with them in the same `go build`
# (scripts/lib/kube-build.sh), so the packages they share compile once whichever tier runs first.
# The C++ programs come from $BUILD_DIR (default build/), built here if they are missing or out
# of date.
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir="$PWD"

keep=0
bench=0
filter=""
for arg in "$@"; do
  case "$arg" in
    --keep) keep=1 ;;
    --bench) bench=1 ;;
    -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "e2e.sh: unknown option $arg (usage: scripts/e2e.sh [--keep] [--bench] [FILTER])" >&2; exit 2 ;;
    *) filter="$arg" ;;
  esac
done

# Go builds the control plane and runs the tests: the first Go >= the go.mod's version on PATH, in
# /usr/local/go/bin or installed by scripts/install-deps.sh (scripts/lib/go.sh), put first on PATH.
# shellcheck source=lib/go.sh
source scripts/lib/go.sh
numadra_use_go e2e.sh

# shellcheck source=lib/kube-build.sh
source scripts/lib/kube-build.sh
module="$source_dir/tests/e2e"
numadra_build_kube e2e.sh
bin="$NUMADRA_KUBE_BIN"
echo "e2e.sh: control plane $NUMADRA_KUBE_VERSION: $("$bin/kube-apiserver" --version), $("$bin/etcd" --version | head -1)"

BUILD_DIR="${BUILD_DIR:-build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$source_dir/$BUILD_DIR" ;; esac
scripts/build.sh --target numa-dra-plugin --target numa-probe --target dra-allocate \
  --target generated_sysfs | tail -1

work="$BUILD_DIR/e2e"
rm -rf "$work"
if [ "$bench" -eq 1 ]; then
  # Each benchmark repeats inside one iteration and reports medians (or one whole run at scale).
  run=(go test -count=1 -timeout 60m -run '^$' -bench "${filter:-.}" -benchtime 1x)
else
  run=(go test -count=1 -timeout 30m -v)
  [ -z "$filter" ] || run+=(-run "$filter")
fi
echo "e2e.sh: ${run[*]} in tests/e2e; clusters in $work"
cd "$module"
NUMADRA_E2E_BIN="$bin" NUMADRA_E2E_WORK="$work" NUMADRA_BUILD_DIR="$BUILD_DIR" \
  NUMADRA_SOURCE_DIR="$source_dir" NUMADRA_E2E_KEEP="$([ "$keep" -eq 1 ] && echo 1 || true)" \
  "${run[@]}" .
