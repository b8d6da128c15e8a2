# shellcheck shell=bash
# Which Go the scripts and CMake use, and the pinned Go toolchain scripts/install-deps.sh installs.
#
# Sourced (scripts/e2e.sh, scripts/test.sh, scripts/install-deps.sh, ...):
#   numadra_find_go        sets NUMADRA_GO (a go command), NUMADRA_GO_VERSION (go1.26.8) and
#                          NUMADRA_GO_REJECTED (the Go commands skipped: "GO (go1.19.8 < 1.26.0)",
#                          or "GO ('go env GOVERSION' failed)")
#                          to the first Go >= the newest `go` line of the checkout's go.mod files,
#                          looked for in this order: every `go` on PATH, each folder of
#                          NUMADRA_GO_DIRS (default /usr/local/go/bin), the pinned toolchain in
#                          the cache; returns 1 when there is none. An older Go is never chosen:
#                          Debian 12's golang-go puts a Go 1.19 at /usr/bin/go.
#   numadra_use_go NAME    the same, then puts that Go first on PATH and says which it is; when
#                          there is none it prints why (NAME: ...) and returns 1
#   numadra_go_describe    "GO (VERSION; skipped: ...)" of the last numadra_find_go
#   numadra_go_not_found   why the last numadra_find_go found nothing, and what to do
#   numadra_install_go_toolchain BOOTSTRAP_GO
#                          installs the pinned toolchain into the cache (scripts/install-deps.sh)
# Run (cmake/Go.cmake):
#   bash scripts/lib/go.sh find        the chosen go, its version, then each rejected one, one a
#                                      line; exit 1 and why on stderr when there is none
#   bash scripts/lib/go.sh check GO    GO's version when it is new enough; exit 1 and why otherwise
#   bash scripts/lib/go.sh min-version the version the go.mod files need (1.26.0)
#
# The toolchain is the module golang.org/toolchain@v0.0.1-<version>.linux-<arch> of the Go module
# proxy (the one the go command's own toolchain switching downloads), fetched with any Go that has
# modules (Debian 12's 1.19 has no toolchain switching of its own), checked against the hash pinned
# here and unpacked into ${NUMADRA_GO_CACHE:-~/.cache/numadra/go}/<version>/.
#
# Environment: NUMADRA_GO_CACHE (the toolchains' folder), NUMADRA_GO_DIRS (folders looked in after
# PATH; empty: none), NUMADRA_GO_DOWNLOAD_CACHE (a GOMODCACHE that keeps the downloaded module;
# default: a temporary one, removed afterwards).

# The pinned toolchain: its version, and the module zip's hash as `go mod download -json` prints it
# (Sum; checked against the checksum database on the first download), per architecture. Raising
# the version: fetch the module once by hand (scripts/install-deps.sh says which hash it got) and
# write both here.
NUMADRA_GO_TOOLCHAIN=go1.26.8
# shellcheck disable=SC2034 # read as NUMADRA_GO_TOOLCHAIN_SUM_linux_$arch
NUMADRA_GO_TOOLCHAIN_SUM_linux_amd64='h1:ZOmGe1OnfREDMIdb1Qi4G9JSuDPBLGExZMQ4nis1RXM='

_numadra_go_checkout="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# The folder of the pinned toolchain.
numadra_go_toolchain_dir() {
  echo "${NUMADRA_GO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/numadra/go}/$NUMADRA_GO_TOOLCHAIN"
}

# The newest `go` line of the checkout's go.mod files (tests/*): the oldest Go that builds them all.
numadra_go_min_version() {
  local newest="" version file
  while IFS= read -r file; do
    version="$(awk '$1 == "go" { print $2; exit }' "$file")"
    if [ -z "$version" ]; then
      echo "scripts/lib/go.sh: $file has no go line" >&2
      return 1
    fi
    if [ -z "$newest" ] || ! numadra_go_version_at_least "$newest" "$version"; then
      newest="$version"
    fi
  done < <(find "$_numadra_go_checkout/tests" -name go.mod -not -path '*/testdata/*' | sort)
  if [ -z "$newest" ]; then
    echo "scripts/lib/go.sh: no go.mod under $_numadra_go_checkout/tests" >&2
    return 1
  fi
  echo "$newest"
}

# _numadra_go_version_key VERSION: "MAJOR MINOR PATCH STAGE N" ordered as Go orders versions:
# 1.26 (a language version) < 1.26beta1 < 1.26rc1 < 1.26.0 < 1.26.1. Returns 1 for anything else.
_numadra_go_version_key() {
  local version="${1#go}"
  [[ "$version" =~ ^([0-9]+)\.([0-9]+)(\.([0-9]+))?((beta|rc)([0-9]+))?$ ]] || return 1
  local major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}" patch="${BASH_REMATCH[4]}"
  local stage=3 number=0
  if [ -n "${BASH_REMATCH[6]}" ]; then
    [ "${BASH_REMATCH[6]}" = beta ] && stage=1 || stage=2
    number="${BASH_REMATCH[7]}"
    [ -z "$patch" ] || return 1
  elif [ -z "$patch" ]; then
    stage=0
  fi
  echo "$((10#$major)) $((10#$minor)) $((10#${patch:-0})) $stage $((10#$number))"
}

# numadra_go_version_at_least HAVE NEED: HAVE >= NEED (go1.26.8, 1.26.0, 1.26, 1.27rc1, with or
# without the "go"). An unreadable version is not new enough.
numadra_go_version_at_least() {
  local have need i
  have="$(_numadra_go_version_key "$1")" || return 1
  need="$(_numadra_go_version_key "$2")" || return 1
  read -ra have <<<"$have"
  read -ra need <<<"$need"
  for i in 0 1 2 3 4; do
    [ "${have[i]}" -gt "${need[i]}" ] && return 0
    [ "${have[i]}" -lt "${need[i]}" ] && return 1
  done
  return 0
}

# _numadra_go_version_of GO: the Go release GO is (go1.26.8), asked outside any module and without
# toolchain switching, so that it is GO's own.
_numadra_go_version_of() {
  (cd / && env -u GOROOT -u GOFLAGS GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null)
}

numadra_find_go() {
  NUMADRA_GO=""
  NUMADRA_GO_VERSION=""
  NUMADRA_GO_REJECTED=()
  local need candidate real version dir
  need="$(numadra_go_min_version)" || return 1
  local candidates=() seen=()
  mapfile -t candidates < <(type -ap go)
  for dir in ${NUMADRA_GO_DIRS-/usr/local/go/bin}; do
    candidates+=("$dir/go")
  done
  candidates+=("$(numadra_go_toolchain_dir)/bin/go")
  for candidate in "${candidates[@]}"; do
    if [ ! -f "$candidate" ] || [ ! -x "$candidate" ]; then
      continue
    fi
    real="$(readlink -f "$candidate")"
    # /bin/go and /usr/bin/go are one program on a merged /usr: judge it once.
    [[ " ${seen[*]} " == *" $real "* ]] && continue
    seen+=("$real")
    if ! version="$(_numadra_go_version_of "$candidate")" || [ -z "$version" ]; then
      NUMADRA_GO_REJECTED+=("$candidate ('go env GOVERSION' failed)")
    elif numadra_go_version_at_least "$version" "$need"; then
      NUMADRA_GO="$candidate"
      NUMADRA_GO_VERSION="$version"
      return 0
    else
      NUMADRA_GO_REJECTED+=("$candidate ($version < $need)")
    fi
  done
  return 1
}

# Why numadra_find_go found nothing, and what to do.
numadra_go_not_found() {
  local need looked="PATH"
  need="$(numadra_go_min_version 2>&1)" || { echo "$need"; return; }
  [ -z "${NUMADRA_GO_DIRS-/usr/local/go/bin}" ] || looked+=", ${NUMADRA_GO_DIRS-/usr/local/go/bin}"
  looked+=" and $(numadra_go_toolchain_dir)/bin"
  local message="no Go >= $need (the go.mod files' go line) found; looked on $looked"
  if [ "${#NUMADRA_GO_REJECTED[@]}" -gt 0 ]; then
    local rejected
    rejected="$(printf '%s, ' "${NUMADRA_GO_REJECTED[@]}")"
    message+="; skipped: ${rejected%, }"
  fi
  echo "$message. scripts/install-deps.sh installs $NUMADRA_GO_TOOLCHAIN into $(numadra_go_toolchain_dir)"
}

# What numadra_find_go chose: "GO (VERSION; skipped: ...)".
numadra_go_describe() {
  local note=""
  if [ "${#NUMADRA_GO_REJECTED[@]}" -gt 0 ]; then
    note="$(printf '%s, ' "${NUMADRA_GO_REJECTED[@]}")"
    note="; skipped: ${note%, }"
  fi
  echo "$NUMADRA_GO ($NUMADRA_GO_VERSION$note)"
}

numadra_use_go() {
  local name="$1"
  if ! numadra_find_go; then
    echo "$name: $(numadra_go_not_found)" >&2
    return 1
  fi
  PATH="$(dirname "$NUMADRA_GO"):$PATH"
  export PATH
  # A GOROOT of another Go would give this go command another standard library.
  unset GOROOT
  echo "$name: Go: $(numadra_go_describe)"
}

# numadra_install_go_toolchain BOOTSTRAP_GO: the pinned toolchain into numadra_go_toolchain_dir,
# downloaded with BOOTSTRAP_GO; nothing to do when it is there. A temporary folder beside it is
# renamed into place once the toolchain has shown its version, so a stopped run leaves no half
# toolchain behind.
numadra_install_go_toolchain() (
  # Each step checks its own status: a caller's `if` or `||` switches errexit off in here.
  local bootstrap="$1" target arch want_variable want module cache tmp
  target="$(numadra_go_toolchain_dir)"
  if [ -x "$target/bin/go" ]; then
    _numadra_go_check_toolchain "$target" ||
      { echo "install-deps: remove $target and run scripts/install-deps.sh again" >&2; return 1; }
    return 0
  fi
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    *) echo "install-deps: no Go toolchain is pinned for $(uname -m) (scripts/lib/go.sh pins" \
         "linux-amd64); install Go >= $(numadra_go_min_version) on PATH or in /usr/local/go" >&2
       return 1 ;;
  esac
  want_variable="NUMADRA_GO_TOOLCHAIN_SUM_linux_$arch"
  want="${!want_variable}"
  module="golang.org/toolchain@v0.0.1-$NUMADRA_GO_TOOLCHAIN.linux-$arch"
  if [ ! -x "$bootstrap" ]; then
    echo "install-deps: $bootstrap (the Go that downloads $module) does not exist" >&2
    return 1
  fi

  cache="$(dirname "$target")"
  mkdir -p "$cache" || return 1
  # Folders of runs that were killed (a live run's folder is younger than this).
  find "$cache" -maxdepth 1 -name ".$NUMADRA_GO_TOOLCHAIN.tmp.*" -mmin +120 \
    -exec chmod -R u+w {} + -exec rm -rf {} + 2>/dev/null
  tmp="$(mktemp -d "$cache/.$NUMADRA_GO_TOOLCHAIN.tmp.XXXXXX")" || return 1
  # shellcheck disable=SC2064 # the folder is known now
  trap "chmod -R u+w '$tmp' 2>/dev/null; rm -rf '$tmp'" EXIT

  echo "install-deps: downloading $module through the Go module proxy with $bootstrap" \
    "($(_numadra_go_version_of "$bootstrap"))"
  local start=$SECONDS
  # -modcacherw: the unpacked folder can be moved out of the module cache. GOFLAGS of the
  # caller's go env file (e.g. -mod=vendor) do not apply here.
  if ! (cd "$tmp" && env -u GOROOT GOFLAGS=-modcacherw GO111MODULE=on GOTOOLCHAIN=local \
          GOMODCACHE="${NUMADRA_GO_DOWNLOAD_CACHE:-$tmp/modcache}" \
          "$bootstrap" mod download -json "$module" >"$tmp/download.json" 2>"$tmp/download.err"); then
    echo "install-deps: 'go mod download $module' failed:" >&2
    grep '"Error"' "$tmp/download.json" >&2
    cat "$tmp/download.err" >&2
    return 1
  fi
  local dir sum
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' "$tmp/download.json")"
  sum="$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",\{0,1\}$/\1/p' "$tmp/download.json")"
  if [ "$sum" != "$want" ]; then
    echo "install-deps: $module has the hash '$sum', scripts/lib/go.sh pins '$want': not using it" >&2
    return 1
  fi
  if [ ! -d "$dir" ]; then
    echo "install-deps: 'go mod download $module' named no unpacked folder ('$dir')" >&2
    return 1
  fi
  mv "$dir" "$tmp/go" || return 1
  # A module zip keeps no file modes: the go command and its tools need their exec bits back
  # (the go command's own toolchain switching does the same).
  chmod a+x "$tmp/go/bin/"* "$tmp/go/pkg/tool/"*/* || return 1
  _numadra_go_check_toolchain "$tmp/go" || return 1
  # Another run may have installed it meanwhile: then that one stays.
  if ! mv -T "$tmp/go" "$target" 2>/dev/null && [ ! -x "$target/bin/go" ]; then
    echo "install-deps: could not rename $tmp/go to $target" >&2
    return 1
  fi
  echo "install-deps: $NUMADRA_GO_TOOLCHAIN installed into $target ($((SECONDS - start)) s)"
)

# _numadra_go_check_toolchain DIR: DIR/bin/go runs and is the pinned version.
_numadra_go_check_toolchain() {
  local got
  got="$(_numadra_go_version_of "$1/bin/go")"
  if [ -z "$got" ]; then
    echo "install-deps: $1/bin/go does not run ('go env GOVERSION' failed)" >&2
    return 1
  fi
  if [ "$got" != "$NUMADRA_GO_TOOLCHAIN" ]; then
    echo "install-deps: $1/bin/go is $got, not the pinned $NUMADRA_GO_TOOLCHAIN" >&2
    return 1
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    find)
      if ! numadra_find_go; then
        numadra_go_not_found >&2
        exit 1
      fi
      printf '%s\n' "$NUMADRA_GO" "$NUMADRA_GO_VERSION" "${NUMADRA_GO_REJECTED[@]}"
      ;;
    check)
      [ "$#" -eq 2 ] || { echo "usage: scripts/lib/go.sh check GO" >&2; exit 2; }
      need="$(numadra_go_min_version)"
      if ! version="$(_numadra_go_version_of "$2")" || [ -z "$version" ]; then
        echo "$2 does not run ('go env GOVERSION' failed)" >&2
        exit 1
      fi
      if ! numadra_go_version_at_least "$version" "$need"; then
        echo "$2 is $version; the go.mod files need Go >= $need" >&2
        exit 1
      fi
      echo "$version"
      ;;
    min-version) numadra_go_min_version ;;
    *) echo "usage: scripts/lib/go.sh find | check GO | min-version" >&2; exit 2 ;;
  esac
fi
