#!/usr/bin/env bash
# Our allocator (numadra::allocator, the library behind dra-allocate) against upstream
# Kubernetes' (k8s.io/dynamic-resource-allocation/structured v0.37.2, every DRA feature on) on
# the same input files, both in-process: the big-node cases (a)-(e) of docs/PERFORMANCE.md and
# the split-scaling family (docs/PERFORMANCE.md, "Against upstream's allocator (issue 15)").
#
#   scripts/bench-vs-upstream.sh            every case
#   scripts/bench-vs-upstream.sh CASE...    these cases (folder names, e.g. a_gpu_nic_numa)
#
# Steps: build dra-allocate, allocator-bench-cases, allocator_files_bench and
# upstream-allocator-bench; write the cases into $BUILD_DIR/bench-cases (input.json: a v1 List
# of the objects allocator_bench allocates in memory; case.json: what to time); check with
# dra-allocate that every input is valid and gets the outcome the case expects; then per case
# run ours, then upstream's (alternating, so both see the same machine noise), and print the
# table of medians. Raw results stay in $BUILD_DIR/bench-vs-upstream/ (table.md there too).
#
# Environment: BUILD_DIR (default build), UPSTREAM_TIMEOUT (default 20s: upstream's first run of
# a case is cancelled after this and the case reported as "gave up"), REPS (default 5), BEFORE (an
# allocator_files_bench built from another revision, e.g. before a change: run after ours on the
# same files, so that the table compares the two revisions and upstream in one run).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR="${BUILD_DIR:-build}"
UPSTREAM_TIMEOUT="${UPSTREAM_TIMEOUT:-20s}"
REPS="${REPS:-5}"
BEFORE="${BEFORE:-}"
if [ -n "$BEFORE" ] && [ ! -x "$BEFORE" ]; then
  echo "bench-vs-upstream: BEFORE=$BEFORE is not an executable" >&2
  exit 2
fi
# The Go programs need a Go >= the go.mod's version (scripts/lib/go.sh; cmake/Go.cmake finds the
# same one): say which, or why there is none.
# shellcheck source=lib/go.sh
source scripts/lib/go.sh
numadra_use_go bench-vs-upstream
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD_DIR" --target dra-allocate allocator-bench-cases allocator_files_bench \
  upstream-allocator-bench

bin="$BUILD_DIR/bin"
cases="$BUILD_DIR/bench-cases"
results="$BUILD_DIR/bench-vs-upstream"
rm -rf "$cases" "$results"
mkdir -p "$results"
only=()
for name in "$@"; do only+=(--only "$name"); done
"$bin/allocator-bench-cases" "${only[@]}" "$cases" >/dev/null

# The files are valid API objects and mean what the in-memory benchmark means: dra-allocate
# (exit 0: every claim allocated, 1: some not) gives each case's expected outcome on its node.
for dir in "$cases"/*/; do
  dir="${dir%/}"
  node="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodes"][0])' "$dir/case.json")"
  expect="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["expect"])' "$dir/case.json")"
  status=0
  "$bin/dra-allocate" --node "$node" "$dir/input.json" >/dev/null 2>"$results/$(basename "$dir").dra-allocate.txt" || status=$?
  want=0
  [ "$expect" = unsatisfiable ] && want=1
  if [ "$status" != "$want" ]; then
    echo "bench-vs-upstream: dra-allocate --node $node $dir/input.json exited $status," \
      "the case expects $expect (exit $want)" >&2
    cat "$results/$(basename "$dir").dra-allocate.txt" >&2
    exit 1
  fi
done

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for dir in "$cases"/*/; do
  dir="${dir%/}"
  name="$(basename "$dir")"
  echo "running $name: ours,${BEFORE:+ before,} then upstream" >&2
  "$bin/allocator_files_bench" --cases="$dir" --benchmark_repetitions="$REPS" \
    --benchmark_report_aggregates_only=true --benchmark_format=json \
    >"$results/$name.ours.json" 2>"$results/$name.ours.stderr"
  if [ -n "$BEFORE" ]; then
    "$BEFORE" --cases="$dir" --benchmark_repetitions="$REPS" \
      --benchmark_report_aggregates_only=true --benchmark_format=json \
      >"$results/$name.before.json" 2>"$results/$name.before.stderr"
  fi
  "$bin/upstream-allocator-bench" --cases "$dir" --timeout "$UPSTREAM_TIMEOUT" --reps "$REPS" \
    >"$results/$name.upstream.json"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$cases" "$results" "$REPS" <<'EOF'
import json, math, os, sys

cases_dir, results, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}

def show(ns):
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.3g} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.3g} ms"
    return f"{ns / 1e9:.3g} s"

def medians(name, who):
    """mode -> median ns of allocator_files_bench's results (None: not run)."""
    path = os.path.join(results, f"{name}.{who}.json")
    if not os.path.exists(path):
        return None
    out = {}
    for bench in json.load(open(path))["benchmarks"]:
        if bench.get("error_occurred"):
            failures.append(f"{name} ({who}): {bench.get('error_message')}")
            continue
        # One repetition gives no aggregates: the run itself is the median.
        if bench.get("aggregate_name") == "median" or (reps == 1 and "aggregate_name" not in bench):
            mode = bench["run_name"].split("/")[1]
            out[mode] = bench["real_time"] * scale[bench["time_unit"]]
    return out

def ratio_text(ratio):
    return f"{ratio:,.2f}" if ratio < 10 else f"{ratio:,.0f}"

rows, failures = [], []
with_before = False
for name in sorted(os.listdir(cases_dir)):
    case = json.load(open(os.path.join(cases_dir, name, "case.json")))
    ours = medians(name, "ours")
    before = medians(name, "before")
    with_before = with_before or before is not None
    upstream = json.loads(open(os.path.join(results, name + ".upstream.json")).read())
    if upstream["outcome"] == "error":
        failures.append(f"{name} (upstream): {upstream.get('error')}")
    for mode in ("warm", "cold"):
        if mode not in ours:
            continue
        us = ours[mode]
        was = (before or {}).get(mode)
        if upstream["outcome"] == "gave up":
            bound = upstream["gave_up_after_s"] * 1e9
            theirs, ratio = f"gave up after {upstream['gave_up_after_s']:g} s", bound / us
            cells = (theirs, f"> {ratio:,.0f}", "yes")
            then = (f"> {bound / was:,.0f}",) if was else ("",)
        elif upstream.get(mode):
            them = upstream[mode]["median_ns"]
            ratio = them / us
            note = "" if len(upstream[mode]["reps_ns"]) == reps else f" ({len(upstream[mode]['reps_ns'])} reps)"
            cells = (show(them) + note, ratio_text(ratio),
                     "yes" if ratio >= 5 else f"**no** ({ratio:.2f}×)")
            then = (ratio_text(them / was),) if was else ("",)
        else:
            cells = ("error", "", "")
            then = ("",)
        befores = ((show(was) if was else ""),) + then
        rows.append((f"{name}", mode, show(us)) + cells + befores)

header = ("case", "mode", "ours (median)", "upstream (median)", "upstream / ours", "ours ≥ 5× faster",
          "before (median)", "upstream / before")
if not with_before:
    header = header[:-2]
    rows = [row[:-2] for row in rows]
lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
lines += ["| " + " | ".join(row) + " |" for row in rows]
text = "\n".join(lines)
print()
print(f"In-process, wall time per operation, median of {reps} repetitions (fewer where noted).")
print("warm: ours = one Allocator kept across calls (CEL verdicts, candidates, node views cached);")
print("      upstream = one allocator and one CEL cache kept across calls (compiled CEL only).")
print("cold: ours = Allocator::create + first allocate; upstream = new CEL cache + NewAllocator + Allocate.")
if with_before:
    print("before: BEFORE's allocator_files_bench, run right after ours on the same files.")
print("d_thousand_claims: each iteration starts from no allocations; warm = ours without create(),")
print("      upstream sharing its CEL cache (a new allocator per claim, as per pod in the scheduler).")
print()
print(text)
with open(os.path.join(results, "table.md"), "w") as out:
    out.write(text + "\n")
for failure in failures:
    print("FAILED:", failure, file=sys.stderr)
sys.exit(1 if failures else 0)
EOF
