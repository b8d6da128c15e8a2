#!/usr/bin/env bash
# Installs the Debian 12 packages the build, the tests and the lint need, and the Go the Go test
# programs and the control-plane tier need; skips what is present.
#   scripts/install-deps.sh [--fuzz] [--build-only | --go-only]
#     --fuzz: also clang and its libFuzzer runtime (tests/fuzz/)
#     --build-only: only what configuring and building needs (scripts/demo.sh, the Dockerfile),
#       not the programs the tests and the lint run (a container runtime, lstopo, npm, Python
#       modules, clang-tidy, Go)
#     --go-only: only Go (scripts/check-go-install.sh)
# Go: when no Go >= the go.mod files' version is on PATH, in /usr/local/go/bin or in
# ~/.cache/numadra/go (scripts/lib/go.sh), Debian's golang-go (Go 1.19) downloads the toolchain
# that scripts/lib/go.sh pins (version and hash; the module golang.org/toolchain through the Go
# module proxy) into ${NUMADRA_GO_CACHE:-~/.cache/numadra/go}/<version>, where every script and
# cmake/Go.cmake find it. Nothing needs to be put on PATH.
set -euo pipefail
# shellcheck source=lib/go.sh
source "$(dirname "$0")/lib/go.sh"

fuzz=0
build_only=0
go_only=0
for arg in "$@"; do
  case "$arg" in
    --fuzz) fuzz=1 ;;
    --build-only) build_only=1 ;;
    --go-only) go_only=1 ;;
    *) echo "usage: scripts/install-deps.sh [--fuzz] [--build-only | --go-only]" >&2; exit 2 ;;
  esac
done
if [ "$build_only" -eq 1 ] && [ "$go_only" -eq 1 ]; then
  echo "install-deps: --build-only and --go-only exclude each other" >&2
  exit 2
fi

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates bzip2 python3
  # scripts/build.sh compiles through ccache when it is there: CI's warm-cache budget counts on it
  ccache
  libhwloc-dev libpci-dev pci.ids
  nlohmann-json3-dev libspdlog-dev libfmt-dev libyaml-cpp-dev libre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libcurl4-openssl-dev libcpp-httplib-dev libssl-dev
  # plugin/grpc serves gRPC over HTTP/2 with it (libcurl already loads its runtime)
  libnghttp2-dev
  # CEL timestamp getters read IANA time zones from /usr/share/zoneinfo, as Go does
  tzdata
)

if [ "$go_only" -eq 1 ]; then
  # The Go module proxy is reached over HTTPS.
  PACKAGES=(ca-certificates)
fi

if [ "$build_only" -eq 0 ] && [ "$go_only" -eq 0 ]; then
  # The deploy tests read YAML; a real container runtime reads the driver's CDI specs
  # (tests/conformance: podman with runc, a static busybox as the container's root); hwloc's
  # lstopo is what numa-probe is measured against (tests/bench/).
  PACKAGES+=(python3-yaml podman runc busybox-static hwloc)
  # The real-node tier (scripts/node-e2e.sh): containerd runs containers with runc, the CNI
  # loopback plugin gives pods their network namespace, the tier's own network and mount
  # namespaces come from iproute2 and util-linux, and the pause image is a static C program; runc
  # is built from its module against libseccomp (Debian's runc 1.1.5 cannot move a network
  # device into a container).
  PACKAGES+=(containernetworking-plugins iproute2 util-linux gcc libc6-dev)
  PACKAGES+=(libseccomp-dev pkg-config)
  # scripts/lint.sh
  PACKAGES+=(clang-tidy clang-format)
  # The CEL conformance tests fetch their data with npm (issue 6); use the machine's Node.js
  # when it has one, else Debian's.
  if ! command -v npm >/dev/null 2>&1; then
    PACKAGES+=(npm)
  fi
fi

if [ "$fuzz" -eq 1 ] && [ "$go_only" -eq 0 ]; then
  PACKAGES+=(clang libclang-rt-14-dev)
fi

# Go: Debian's golang-go only to download the pinned toolchain (below) when no Go is new enough.
install_go=0
if [ "$build_only" -eq 0 ]; then
  if numadra_find_go; then
    echo "install-deps: Go: $(numadra_go_describe)"
  else
    install_go=1
    PACKAGES+=(golang-go)
  fi
fi

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
      echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    fi
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "$install_go" -eq 1 ]; then
  numadra_install_go_toolchain /usr/bin/go
  if ! numadra_find_go; then
    echo "install-deps: $(numadra_go_not_found)" >&2
    exit 1
  fi
  echo "install-deps: Go: $(numadra_go_describe)"
fi
