#!/usr/bin/env bash
# Tests of scripts/lib/go.sh with stand-in go commands (shell scripts that answer
# `go env GOVERSION`, and a bootstrap one that answers `go mod download -json` as Go 1.19 does):
# which Go is chosen in which order, that an old Go is never chosen, and what the toolchain
# installer does with a good, a wrong-hash, a wrong-version and a failed download.
# No network: scripts/check-go-install.sh runs the real download (ctest scripts.go_finder).
#   scripts/lib/go_test.sh
set -uo pipefail
lib="$(cd "$(dirname "$0")" && pwd)/go.sh"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/go-finder-test.XXXXXX")"
trap 'chmod -R u+w "$scratch"; rm -rf "$scratch"' EXIT

# The programs go.sh runs, alone on PATH beside the stand-ins (the machine's own go is not).
tools="$scratch/tools"
mkdir -p "$tools"
for tool in awk find sort readlink dirname env mktemp mv chmod rm sed grep uname mkdir cat touch \
  bash sh; do
  ln -s "$(command -v "$tool")" "$tools/$tool"
done

# fake_go DIR VERSION: DIR/go, a go command of VERSION ("" for one that fails).
fake_go() {
  mkdir -p "$1"
  if [ -n "$2" ]; then
    printf '#!/bin/sh\n[ "$1 $2" = "env GOVERSION" ] && echo %s\n' "$2" >"$1/go"
  else
    printf '#!/bin/sh\nexit 1\n' >"$1/go"
  fi
  chmod +x "$1/go"
}

passed=0
failed=0
# run NAME: runs the function NAME in a fresh shell with go.sh sourced and a folder of its own.
run() {
  local name="$1" output status
  # Not in an if: errexit would be off inside.
  output="$(
    set -eu
    cd "$scratch"
    dir="$scratch/$name"
    mkdir -p "$dir"
    export NUMADRA_GO_CACHE="$dir/cache"
    unset NUMADRA_GO_DIRS NUMADRA_GO_DOWNLOAD_CACHE GOROOT
    # shellcheck source=go.sh
    source "$lib"
    "$name" 2>&1
  )"
  status=$?
  if [ "$status" -eq 0 ]; then
    passed=$((passed + 1))
    echo "PASS $name"
  else
    failed=$((failed + 1))
    echo "FAIL $name"
    printf '%s\n' "$output" | sed 's/^/    /'
  fi
}
expect_eq() {
  if [ "$1" != "$2" ]; then
    echo "expected '$2', got '$1'"
    return 1
  fi
}
expect_contains() {
  if [[ "$1" != *"$2"* ]]; then
    echo "expected '$1' to contain '$2'"
    return 1
  fi
}

old=go1.19.8 # Debian 12's golang-go
new=go1.99.0 # newer than any go.mod line the tests can meet

# Debian's golang-go first on PATH and a new Go after it: the new one, the old one named.
test_an_old_go_first_on_path_is_skipped() {
  fake_go "$dir/old" "$old"
  fake_go "$dir/new" "$new"
  PATH="$tools:$dir/old:$dir/new" NUMADRA_GO_DIRS="" numadra_find_go
  expect_eq "$NUMADRA_GO" "$dir/new/go"
  expect_eq "$NUMADRA_GO_VERSION" "$new"
  expect_eq "${NUMADRA_GO_REJECTED[*]}" "$dir/old/go ($old < $(numadra_go_min_version))"
}

# An old Go on PATH and a new one in /usr/local/go/bin (NUMADRA_GO_DIRS): the one there.
test_the_folders_after_path_are_looked_in() {
  fake_go "$dir/old" "$old"
  fake_go "$dir/local" "$new"
  PATH="$tools:$dir/old" NUMADRA_GO_DIRS="$dir/missing $dir/local" numadra_find_go
  expect_eq "$NUMADRA_GO" "$dir/local/go"
}

# PATH before the folders, the folders before the cache: the first new enough one wins.
test_path_comes_before_the_folders_and_the_cache() {
  fake_go "$dir/path" "$new"
  fake_go "$dir/local" "$new"
  fake_go "$(numadra_go_toolchain_dir)/bin" "$NUMADRA_GO_TOOLCHAIN"
  PATH="$tools:$dir/path" NUMADRA_GO_DIRS="$dir/local" numadra_find_go
  expect_eq "$NUMADRA_GO" "$dir/path/go"
  PATH="$tools" NUMADRA_GO_DIRS="$dir/local" numadra_find_go
  expect_eq "$NUMADRA_GO" "$dir/local/go"
}

# Only an old Go on PATH: the installed toolchain in the cache.
test_the_installed_toolchain_is_found_in_the_cache() {
  fake_go "$dir/old" "$old"
  fake_go "$(numadra_go_toolchain_dir)/bin" "$NUMADRA_GO_TOOLCHAIN"
  PATH="$tools:$dir/old" NUMADRA_GO_DIRS="" numadra_find_go
  expect_eq "$NUMADRA_GO" "$NUMADRA_GO_CACHE/$NUMADRA_GO_TOOLCHAIN/bin/go"
  expect_eq "$NUMADRA_GO_VERSION" "$NUMADRA_GO_TOOLCHAIN"
}

# A go command that does not answer is skipped and named.
test_a_go_that_fails_is_skipped() {
  fake_go "$dir/broken" ""
  fake_go "$dir/new" "$new"
  PATH="$tools:$dir/broken:$dir/new" NUMADRA_GO_DIRS="" numadra_find_go
  expect_eq "$NUMADRA_GO" "$dir/new/go"
  expect_eq "${NUMADRA_GO_REJECTED[*]}" "$dir/broken/go ('go env GOVERSION' failed)"
}

# Only an old Go: nothing is chosen, and the message names it and the installer.
test_only_an_old_go_is_an_error_that_names_it() {
  fake_go "$dir/old" "$old"
  local status=0 message
  message="$(PATH="$tools:$dir/old" NUMADRA_GO_DIRS="" bash "$lib" find 2>&1)" || status=$?
  expect_eq "$status" 1
  expect_contains "$message" "no Go >= $(numadra_go_min_version)"
  expect_contains "$message" "skipped: $dir/old/go ($old < "
  expect_contains "$message" "scripts/install-deps.sh installs $NUMADRA_GO_TOOLCHAIN"
  message="$(PATH="$tools" NUMADRA_GO_DIRS="" bash "$lib" find 2>&1)" && return 1
  expect_contains "$message" "looked on PATH and $NUMADRA_GO_CACHE/$NUMADRA_GO_TOOLCHAIN/bin"
}

# `go.sh find` prints the go command, its version, then the skipped ones (cmake/Go.cmake reads it).
test_find_prints_the_choice_for_cmake() {
  fake_go "$dir/old" "$old"
  fake_go "$dir/new" "$new"
  local lines
  lines="$(PATH="$tools:$dir/old:$dir/new" NUMADRA_GO_DIRS="" bash "$lib" find)"
  expect_eq "$lines" "$dir/new/go
$new
$dir/old/go ($old < $(numadra_go_min_version))"
}

# `go.sh check GO` (a -DNUMADRA_GO of cmake): refused when old, its version when new enough.
test_check_refuses_an_old_go() {
  fake_go "$dir/old" "$old"
  fake_go "$dir/new" "$new"
  local message
  message="$(PATH="$tools" bash "$lib" check "$dir/old/go" 2>&1)" && return 1
  expect_contains "$message" "$dir/old/go is $old; the go.mod files need Go >= "
  expect_eq "$(PATH="$tools" bash "$lib" check "$dir/new/go")" "$new"
}

test_versions_are_ordered_as_go_orders_them() {
  local pair
  for pair in "go1.26.8 1.26.0" "go1.26.8 1.26" "1.26.0 1.26rc2" "1.26rc2 1.26rc1" \
    "1.26rc1 1.26beta2" "1.26beta1 1.26" "1.27rc1 1.26.8" "1.100.0 1.26.0" "1.26.10 1.26.9" \
    "2.0.0 1.99.99" "1.26.0 1.26.0"; do
    # shellcheck disable=SC2086 # two words
    numadra_go_version_at_least $pair || { echo "not $pair"; return 1; }
  done
  for pair in "go1.19.8 1.26.0" "1.26 1.26.0" "1.26rc1 1.26.0" "1.26.9 1.26.10" "1.9 1.26" \
    "devel 1.26" "go1.26.x 1.26"; do
    # shellcheck disable=SC2086
    numadra_go_version_at_least $pair && { echo "wrongly $pair"; return 1; }
  done
  return 0
}

# The pin is new enough for the go.mod files, and the minimum is the newest go line among them.
test_the_pinned_toolchain_builds_the_go_mod_files() {
  local need newest
  need="$(numadra_go_min_version)"
  numadra_go_version_at_least "$NUMADRA_GO_TOOLCHAIN" "$need"
  newest="$(cd "$(dirname "$lib")/../.." &&
    find tests -name go.mod -not -path '*/testdata/*' -exec awk '$1 == "go" { print $2 }' {} + |
    sort -V | tail -1)"
  expect_eq "$need" "$newest"
}

# fake_bootstrap DIR: DIR/go, a Go 1.19 whose `go mod download -json MODULE` unpacks a stand-in
# toolchain (its files without exec bits, as a module zip leaves them) reporting $FAKE_VERSION,
# printing $FAKE_SUM as its hash; with FAKE_FAIL set it fails as a refused download does. Each
# download touches DIR/downloads.
fake_bootstrap() {
  mkdir -p "$1"
  cat >"$1/go" <<'EOF'
#!/bin/bash
here="$(dirname "$0")"
if [ "$1 $2" = "env GOVERSION" ]; then echo go1.19.8; exit 0; fi
[ "$1 $2 $3" = "mod download -json" ] || exit 2
echo "$4" >>"$here/downloads"
if [ -n "${FAKE_FAIL:-}" ]; then
  printf '{\n\t"Path": "golang.org/toolchain",\n\t"Error": "%s: reading: 404 Not Found"\n}\n' "$4"
  echo "go: $4: reading: 404 Not Found" >&2
  exit 1
fi
dir="$GOMODCACHE/golang.org/toolchain@${4#*@}"
mkdir -p "$dir/bin" "$dir/pkg/tool/linux_amd64"
printf '#!/bin/sh\n[ "$1 $2" = "env GOVERSION" ] && echo %s\n' "$FAKE_VERSION" >"$dir/bin/go"
echo tool >"$dir/pkg/tool/linux_amd64/compile"
chmod 444 "$dir/bin/go" "$dir/pkg/tool/linux_amd64/compile"
printf '{\n\t"Path": "golang.org/toolchain",\n\t"Version": "%s",\n\t"Zip": "%s.zip",\n\t"Dir": "%s",\n\t"Sum": "%s",\n\t"GoModSum": "h1:mod="\n}\n' \
  "${4#*@}" "$dir" "$dir" "$FAKE_SUM"
EOF
  chmod +x "$1/go"
}
pinned_sum() {
  local variable="NUMADRA_GO_TOOLCHAIN_SUM_linux_amd64"
  echo "${!variable}"
}
# Nothing but the toolchain (when expected) is left in the cache: no temporary folder.
expect_cache_holds() {
  expect_eq "$(cd "$NUMADRA_GO_CACHE" && ls -A | tr '\n' ' ')" "$1"
}

test_the_installer_unpacks_the_pinned_toolchain_with_exec_bits() {
  fake_bootstrap "$dir/debian"
  PATH="$tools" FAKE_SUM="$(pinned_sum)" FAKE_VERSION="$NUMADRA_GO_TOOLCHAIN" \
    numadra_install_go_toolchain "$dir/debian/go"
  local toolchain
  toolchain="$(numadra_go_toolchain_dir)"
  [ -x "$toolchain/bin/go" ]
  [ -x "$toolchain/pkg/tool/linux_amd64/compile" ]
  expect_eq "$(cat "$dir/debian/downloads")" "golang.org/toolchain@v0.0.1-$NUMADRA_GO_TOOLCHAIN.linux-amd64"
  expect_cache_holds "$NUMADRA_GO_TOOLCHAIN "
  PATH="$tools" NUMADRA_GO_DIRS="" numadra_find_go
  expect_eq "$NUMADRA_GO" "$toolchain/bin/go"
  # Installed: a second run downloads nothing.
  PATH="$tools" FAKE_SUM=wrong FAKE_VERSION=wrong numadra_install_go_toolchain "$dir/debian/go"
  expect_eq "$(wc -l <"$dir/debian/downloads")" 1
}

test_the_installer_refuses_another_hash() {
  fake_bootstrap "$dir/debian"
  local message
  message="$(PATH="$tools" FAKE_SUM="h1:other=" FAKE_VERSION="$NUMADRA_GO_TOOLCHAIN" \
    numadra_install_go_toolchain "$dir/debian/go" 2>&1)" && return 1
  expect_contains "$message" "has the hash 'h1:other=', scripts/lib/go.sh pins '$(pinned_sum)'"
  expect_cache_holds ""
}

test_the_installer_refuses_a_toolchain_of_another_version() {
  fake_bootstrap "$dir/debian"
  local message
  message="$(PATH="$tools" FAKE_SUM="$(pinned_sum)" FAKE_VERSION=go1.20.1 \
    numadra_install_go_toolchain "$dir/debian/go" 2>&1)" && return 1
  expect_contains "$message" "bin/go is go1.20.1, not the pinned $NUMADRA_GO_TOOLCHAIN"
  expect_cache_holds ""
}

test_the_installer_says_why_a_download_failed() {
  fake_bootstrap "$dir/debian"
  local message
  message="$(PATH="$tools" FAKE_FAIL=1 numadra_install_go_toolchain "$dir/debian/go" 2>&1)" &&
    return 1
  expect_contains "$message" "'go mod download golang.org/toolchain@v0.0.1-$NUMADRA_GO_TOOLCHAIN.linux-amd64' failed"
  expect_contains "$message" "404 Not Found"
  expect_cache_holds ""
}

# A toolchain folder of another version (changed by hand): an error that says what to do.
test_the_installer_refuses_an_installed_toolchain_of_another_version() {
  fake_go "$(numadra_go_toolchain_dir)/bin" go1.20.1
  local message
  message="$(PATH="$tools" numadra_install_go_toolchain "$dir/none/go" 2>&1)" && return 1
  expect_contains "$message" "bin/go is go1.20.1, not the pinned $NUMADRA_GO_TOOLCHAIN"
  expect_contains "$message" "remove $(numadra_go_toolchain_dir) and run scripts/install-deps.sh again"
}

test_the_installer_needs_its_bootstrap_go() {
  local message
  message="$(PATH="$tools" numadra_install_go_toolchain "$dir/none/go" 2>&1)" && return 1
  expect_contains "$message" "$dir/none/go (the Go that downloads golang.org/toolchain@"
}

for name in $(declare -F | awk '$3 ~ /^test_/ { print $3 }'); do
  run "$name"
done
echo "go_test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
