#!/usr/bin/env bash
# clang-tidy (.clang-tidy) and clang-format (.clang-format) over the project's own C++ sources.
# Needs a configured build/ (compile_commands.json). Exits non-zero on any finding.
set -uo pipefail
cd "$(dirname "$0")/.."
# tests/fuzz/ builds only with clang (build-san/, scripts/fuzz.sh): lint it with -p build-san.
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp')
mapfile -t units < <(git ls-files '*.cpp' ':!:tests/fuzz/*')
# The build's GCC-only flags (-Wno-restrict for GCC 12, cmake/Warnings.cmake) mean nothing to clang.
findings=$(clang-tidy -p build --quiet --extra-arg=-Wno-unknown-warning-option "${units[@]}" \
  2>/dev/null | grep -E "warning:|error:" || true)
unformatted=$(for f in "${sources[@]}"; do clang-format --dry-run "$f" 2>&1 | grep -q . && echo "$f"; done)
[ -z "$findings" ] || echo "$findings"
[ -z "$unformatted" ] || { echo "not clang-formatted:"; echo "$unformatted"; }
[ -z "$findings" ] && [ -z "$unformatted" ]
