#!/usr/bin/env bash
# Every CMake build type builds. scripts/test.sh builds RelWithDebInfo (the main build) and Debug
# (the sanitizer build) anyway; this builds the others as a packager would, with warnings as
# errors (the optimisers of -O3 and -Os see code -O2 does not), no tests, no benchmarks, into
# build-<type>/, each program in at least one of them (CI's time is what keeps it at that):
# Release builds numa-probe and numa-dra-plugin (the daemon, the kubelet and API server side),
# MinSizeRel numa-probe and dra-allocate (the allocator and CEL).
#
#   scripts/build-types.sh [BUILD_TYPE...]     default: Release MinSizeRel
set -euo pipefail
cd "$(dirname "$0")/.."
types=("$@")
[ "${#types[@]}" -gt 0 ] || types=(Release MinSizeRel)
for type in "${types[@]}"; do
  case "$type" in
    Debug | Release | RelWithDebInfo | MinSizeRel) ;;
    *) echo "build-types.sh: '$type' is not a CMake build type" >&2; exit 2 ;;
  esac
  folder="build-$(echo "$type" | tr '[:upper:]' '[:lower:]')"
  start=$SECONDS
  targets=(--target numa-probe)
  case "$type" in
    Release) targets+=(--target numa-dra-plugin) ;;
    MinSizeRel) targets+=(--target dra-allocate) ;;
    *) targets+=(--target numa-dra-plugin --target dra-allocate) ;;
  esac
  BUILD_DIR="$folder" BUILD_TYPE="$type" scripts/build.sh "${targets[@]}" \
    -DNUMADRA_BUILD_TESTS=OFF -DNUMADRA_BUILD_BENCH=OFF
  "$folder/bin/numa-probe" --version
  echo "build-types: $type built in $((SECONDS - start)) s ($folder)"
done
