#!/usr/bin/env bash
# Installs the Debian 12 packages the build and the tests need; skips what is present.
#   scripts/install-deps.sh [--fuzz]    --fuzz: also clang and its libFuzzer runtime (fuzz/)
set -euo pipefail

fuzz=0
for arg in "$@"; do
  case "$arg" in
    --fuzz) fuzz=1 ;;
    *) echo "usage: scripts/install-deps.sh [--fuzz]" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates bzip2 python3 python3-jsonschema
  python3-yaml
  libhwloc-dev libpci-dev pci.ids
  nlohmann-json3-dev libspdlog-dev libfmt-dev libyaml-cpp-dev libre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libcurl4-openssl-dev libcpp-httplib-dev libssl-dev
)

# The CEL conformance tests fetch their data with npm (issue 6); use the machine's Node.js when
# it has one, else Debian's.
if ! command -v npm >/dev/null 2>&1; then
  PACKAGES+=(npm)
fi

if [ "$fuzz" -eq 1 ]; then
  PACKAGES+=(clang libclang-rt-14-dev)
fi

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

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
