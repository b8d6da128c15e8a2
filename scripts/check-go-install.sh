#!/usr/bin/env bash
# Proves that scripts/install-deps.sh gives a machine whose only Go is Debian's golang-go (Go 1.19,
# too old for the go.mod files) the Go the judges need, and that a Go judge builds and runs with
# it (scripts/test.sh runs it after the install tier):
#   1. PATH keeps no go but Debian's /usr/bin/go, /usr/local/go/bin is not looked in
#      (NUMADRA_GO_DIRS=) and the toolchains' folder is a scratch one: scripts/install-deps.sh
#      --go-only installs golang-go (when it is missing) and, with it, the pinned toolchain there
#   2. scripts/lib/go.sh (what every script and cmake/Go.cmake ask) chooses that toolchain, not
#      /usr/bin/go, and it runs as the pinned version
#   3. with it, the own tests of two judges: the CDI library's (tests/cdi-check; they build
#      cdi-check with the go command on PATH) and upstream's deviceattribute helpers'
#      (tests/upstream/attrs)
#
#   scripts/check-go-install.sh
#
# The downloaded module (76 MB) stays in ${NUMADRA_GO_CHECK_DIR:-~/.cache/numadra/go-check}/download:
# only the first run fetches it; every run unpacks, checks and installs it anew. Cold (the module
# fetched, the judge's build cache empty) about 60 s, warm about 15 s (docs/TESTING.md).
# Without golang-go and without root or sudo to install it, it says it is skipped; with CI=true
# that is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/ci.sh
source scripts/lib/ci.sh
start=$SECONDS
check_dir="${NUMADRA_GO_CHECK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/numadra/go-check}"

fail() {
  echo "check-go-install: FAILED: $*" >&2
  exit 1
}

if ! dpkg-query -W -f='${Status}' golang-go 2>/dev/null | grep -q "install ok installed" &&
  [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
  numadra_skip_or_fail check-go-install "Debian's golang-go is missing and there is no root or sudo to install it"
  exit
fi

# PATH without any go but Debian's: a folder whose go is another program is left out.
debian_go="$(readlink -f /usr/bin/go 2>/dev/null || true)"
path=""
IFS=: read -ra entries <<<"$PATH"
for entry in "${entries[@]}"; do
  if [ -x "$entry/go" ] && [ "$(readlink -f "$entry/go")" != "$debian_go" ]; then
    echo "check-go-install: PATH without $entry (its go is not Debian's)"
    continue
  fi
  path+="${path:+:}$entry"
done
export PATH="$path"
export NUMADRA_GO_DIRS=""
export NUMADRA_GO_CACHE="$check_dir/toolchains"
export NUMADRA_GO_DOWNLOAD_CACHE="$check_dir/download"
unset GOROOT
if [ -d "$NUMADRA_GO_CACHE" ]; then
  chmod -R u+w "$NUMADRA_GO_CACHE"
  rm -rf "$NUMADRA_GO_CACHE"
fi

# 1. The installer, as a fresh machine runs it.
scripts/install-deps.sh --go-only

# 2. The finder chooses the installed toolchain, and Debian's old Go is skipped.
# shellcheck source=lib/go.sh
source scripts/lib/go.sh
numadra_find_go || fail "after scripts/install-deps.sh: $(numadra_go_not_found)"
want="$(numadra_go_toolchain_dir)/bin/go"
[ "$NUMADRA_GO" = "$want" ] || fail "scripts/lib/go.sh chose $(numadra_go_describe), not $want"
[ "$NUMADRA_GO_VERSION" = "$NUMADRA_GO_TOOLCHAIN" ] ||
  fail "$NUMADRA_GO is $NUMADRA_GO_VERSION, not the pinned $NUMADRA_GO_TOOLCHAIN"
if [ -x /usr/bin/go ] && [[ " ${NUMADRA_GO_REJECTED[*]} " != *" /usr/bin/go ("* ]]; then
  fail "scripts/lib/go.sh did not skip Debian's /usr/bin/go: $(numadra_go_describe)"
fi
numadra_use_go check-go-install
# This toolchain and no other: no switching to another one a go.mod might name.
export GOTOOLCHAIN=local
go version
goroot="$(go env GOROOT)"
[ "$goroot" = "$(numadra_go_toolchain_dir)" ] || fail "go env GOROOT is $goroot, not $(numadra_go_toolchain_dir)"

# 3. A Go judge with it.
(cd tests/cdi-check && GOFLAGS=-mod=readonly go test -count=1 ./...)
(cd tests/upstream && GOFLAGS=-mod=readonly go test -count=1 ./attrs)
echo "check-go-install: passed: $NUMADRA_GO_TOOLCHAIN from Debian's go ran the judges ($((SECONDS - start)) s)"
