# shellcheck shell=bash
# The one rule for "this is CI" in the scripts (the C++ tests: tests/support's numadra/testing/ci.hpp;
# the Go tiers: tests/e2e's inCI; CMake: cmake/Go.cmake): CI is set to true or 1, in any case.
# In CI a test tier that cannot run fails; elsewhere it says loudly that it was skipped.
#
# Sourced:
#   numadra_in_ci                 returns 0 in CI
#   numadra_skip_or_fail WHO WHY  in CI: prints "WHO: WHY (required in CI)" to stderr, returns 1;
#                                 elsewhere: prints "WHO: SKIPPED: WHY", returns 0

numadra_in_ci() {
  case "${CI:-}" in
    [Tt][Rr][Uu][Ee] | 1) return 0 ;;
    *) return 1 ;;
  esac
}

numadra_skip_or_fail() {
  if numadra_in_ci; then
    echo "$1: $2 (required in CI, CI=${CI})" >&2
    return 1
  fi
  echo "$1: SKIPPED: $2"
  return 0
}
