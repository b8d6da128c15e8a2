#!/usr/bin/env bash
# Fetches the CEL conformance tests (npm package @bufbuild/cel-spec, which ships them as data)
# into a cache outside the repository and exports one JSON file per test file:
#   <cache>/json/<name>.json  = {"name": ..., "sections": [{"name": ..., "tests": [SimpleTest]}]}
# where each test is a cel.expr.conformance.test.SimpleTest in proto3 JSON form.
#
# Cache: $NUMADRA_CEL_SPEC_CACHE, default ${XDG_CACHE_HOME:-$HOME/.cache}/numadra/cel-spec-0.6.1.
# The network is used only when the cache does not hold the package yet; a failed download
# exits non-zero with a message saying so (the conformance test then fails, it is not skipped).
# Prints the JSON directory on its last line of stdout.
set -euo pipefail

readonly CEL_SPEC_VERSION=0.6.1
readonly PROTOBUF_VERSION=2.17.0  # @bufbuild/cel-spec 0.6.1 declares the peer ^2.6.2
here="$(cd "$(dirname "$0")" && pwd)"
cache="${NUMADRA_CEL_SPEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/numadra/cel-spec-${CEL_SPEC_VERSION}}"

die() {
  echo "fetch_cel_spec: $*" >&2
  exit 1
}
command -v node >/dev/null || die "node is not installed (needed to export the CEL conformance tests)"

installed() {
  local dir="$1"
  [ -f "$dir/node_modules/@bufbuild/cel-spec/package.json" ] &&
    [ -f "$dir/node_modules/@bufbuild/protobuf/package.json" ] &&
    node -e 'const p = require(process.argv[1]); process.exit(p.version === process.argv[2] ? 0 : 1)' \
      "$dir/node_modules/@bufbuild/cel-spec/package.json" "$CEL_SPEC_VERSION"
}

mkdir -p "$(dirname "$cache")"
if ! installed "$cache"; then
  command -v npm >/dev/null || die "npm is not installed and the cache $cache is empty"
  # Install into a scratch folder next to the cache and move it in place only when complete, so
  # an interrupted download never leaves a half-filled cache behind.
  scratch="$(mktemp -d "${cache}.tmp.XXXXXX")"
  trap 'rm -rf "$scratch"' EXIT
  cat >"$scratch/package.json" <<JSON
{
  "name": "numadra-cel-spec-cache",
  "private": true,
  "description": "Cache of the CEL conformance tests for numadra's cluster/cel/conformance (not committed)",
  "dependencies": {
    "@bufbuild/cel-spec": "${CEL_SPEC_VERSION}",
    "@bufbuild/protobuf": "${PROTOBUF_VERSION}"
  }
}
JSON
  echo "fetch_cel_spec: downloading @bufbuild/cel-spec@${CEL_SPEC_VERSION} into $cache" >&2
  # --prefer-offline: tarballs already in npm's own cache are used without asking the registry.
  if ! (cd "$scratch" && npm install --no-audit --no-fund --ignore-scripts --prefer-offline \
          --loglevel=error >&2); then
    die "cannot download @bufbuild/cel-spec@${CEL_SPEC_VERSION} with npm (is the network" \
        "reachable?) and the cache $cache is empty; the CEL conformance tests cannot run"
  fi
  installed "$scratch" || die "npm install finished but @bufbuild/cel-spec@${CEL_SPEC_VERSION} is missing"
  rm -rf "$cache"
  mv "$scratch" "$cache"
  trap - EXIT
fi

# Export (again) when the JSON is missing or the exporter changed since the last export. The
# exporter runs from inside the cache so that node resolves the packages from its node_modules.
if ! cmp -s "$here/export_cel_spec.mjs" "$cache/export_cel_spec.mjs" || [ ! -f "$cache/json/.complete" ]; then
  rm -rf "$cache/json" "$cache/json.tmp"
  rm -f "$cache/export_cel_spec.mjs"
  cp "$here/export_cel_spec.mjs" "$cache/export_cel_spec.mjs.tmp"
  mv "$cache/export_cel_spec.mjs.tmp" "$cache/export_cel_spec.mjs"
  node "$cache/export_cel_spec.mjs" "$cache/json.tmp" >&2 || die "exporting the conformance tests to JSON failed"
  touch "$cache/json.tmp/.complete"
  mv "$cache/json.tmp" "$cache/json"
fi
echo "$cache/json"
