#!/usr/bin/env bash
# The ctest entry `cel.conformance`: fetches the CEL conformance tests into the cache (network
# only when the cache is empty) and runs every file of the package with the cel_conformance
# binary given as the first argument, held to the committed expectations.txt (counts per file,
# skips by name); further arguments go to it (e.g. --files basic,lists --verbose). Fails, never
# skips, when the tests cannot be fetched.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
runner="${1:?usage: run_conformance.sh <path to cel_conformance> [runner options]}"
shift
if ! json="$("$here/fetch_cel_spec.sh" | tail -n 1)" || [ ! -d "$json" ]; then
  echo "cel.conformance: FAILED - the CEL conformance tests (@bufbuild/cel-spec) could not be" \
       "fetched and are not cached; connect to the network once or set NUMADRA_CEL_SPEC_CACHE" \
       "to a folder holding them" >&2
  exit 1
fi
exec "$runner" --data "$json" --expectations "$here/expectations.txt" "$@"
