# shellcheck shell=bash
# Builds the Kubernetes and containerd commands the e2e tiers run, pinned by Go modules and cached
# by version, through the Go module proxy. Sourced by scripts/e2e.sh and scripts/node-e2e.sh after
# numadra_use_go, from the checkout's root.
#
#   numadra_kube_cache         sets NUMADRA_KUBE_BIN: the folder of etcd, kube-apiserver,
#                              kube-controller-manager, kube-scheduler, kubectl, kubelet and helm,
#                              ${NUMADRA_E2E_CACHE:-~/.cache/numadra/e2e}/v1.37.2-<hash of the
#                              go.mod and go.sum files of tests/e2e and tests/e2e/helm>/bin
#   numadra_build_kube NAME    builds what is missing there in ONE `go build` invocation (so the
#                              packages the commands share compile once and the links run side by
#                              side), then Helm; NAME says who is building in the progress lines
#   numadra_containerd_cache   sets NUMADRA_CONTAINERD_BIN: containerd, containerd-shim-runc-v2 and
#                              ctr of tests/e2e/containerd/go.mod's containerd,
#                              <cache root>/containerd-v2.4.2-<hash of that go.mod and go.sum>/bin
#   numadra_build_containerd NAME  builds what is missing there
#   numadra_runc_cache         sets NUMADRA_RUNC_BIN: runc of tests/e2e/runc/go.mod (Debian 12's
#                              1.1.5 predates runtime-spec 1.3's linux.netDevices, which CDI 1.1
#                              netDevices become), <cache root>/runc-v1.4.4-<hash>/bin
#   numadra_build_runc NAME    builds it there (cgo: its nsenter; libseccomp for seccomp profiles)
#
# Every command of tests/e2e/go.mod's `tool` list is built, whichever tier asks first: the control
# plane's and the kubelet's packages overlap by most of the kubelet's, so one invocation is cheaper
# than two (cold, on 2 busy cores: about 12 minutes for the control plane alone, about 38 for the
# kubelet alone). NUMADRA_BUILD_NICE (default 19) is the builds' niceness.

readonly NUMADRA_KUBE_VERSION=v1.37.2
readonly NUMADRA_CONTAINERD_VERSION=v2.4.2
readonly NUMADRA_RUNC_VERSION=v1.4.4

numadra_cache_root() {
  echo "${NUMADRA_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/numadra/e2e}"
}

numadra_kube_cache() {
  local module="$PWD/tests/e2e" hash
  hash="$(cat "$module/go.mod" "$module/go.sum" "$module/helm/go.mod" "$module/helm/go.sum" |
    sha256sum | cut -c1-12)"
  NUMADRA_KUBE_BIN="$(numadra_cache_root)/$NUMADRA_KUBE_VERSION-$hash/bin"
  mkdir -p "$NUMADRA_KUBE_BIN"
}

numadra_containerd_cache() {
  local module="$PWD/tests/e2e/containerd" hash
  hash="$(cat "$module/go.mod" "$module/go.sum" | sha256sum | cut -c1-12)"
  NUMADRA_CONTAINERD_BIN="$(numadra_cache_root)/containerd-$NUMADRA_CONTAINERD_VERSION-$hash/bin"
  mkdir -p "$NUMADRA_CONTAINERD_BIN"
}

numadra_runc_cache() {
  local module="$PWD/tests/e2e/runc" hash
  hash="$(cat "$module/go.mod" "$module/go.sum" | sha256sum | cut -c1-12)"
  NUMADRA_RUNC_BIN="$(numadra_cache_root)/runc-$NUMADRA_RUNC_VERSION-$hash/bin"
  mkdir -p "$NUMADRA_RUNC_BIN"
}

# numadra_go_build_into NAME BIN DIR [go build arguments...]: go build the packages into a fresh
# folder beside BIN, from module folder DIR, then moves each binary into BIN (a build cut short
# leaves nothing half-written in BIN).
numadra_go_build_into() {
  local who="$1" bin="$2" dir="$3"
  shift 3
  local out start=$SECONDS
  out="$(mktemp -d "$bin/.build.XXXXXX")"
  echo "$who: building into $bin: go build $* ..."
  if ! (cd "$dir" && nice -n "${NUMADRA_BUILD_NICE:-19}" go build -trimpath -o "$out/" "$@"); then
    rm -rf "$out"
    return 1
  fi
  mv "$out"/* "$bin/"
  rmdir "$out"
  echo "$who: built $(cd "$bin" && ls | tr '\n' ' ')in $((SECONDS - start)) s"
}

numadra_build_kube() {
  local who="$1" module="$PWD/tests/e2e"
  numadra_kube_cache
  local bin="$NUMADRA_KUBE_BIN"
  # What `kube-apiserver --version`, `kubelet --version` and the API's /version say: Kubernetes'
  # own build stamps these (hack/lib/version.sh); a module build leaves them at v0.0.0-master.
  local minor="${NUMADRA_KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  local flags="-s -w" package
  for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $package.gitVersion=$NUMADRA_KUBE_VERSION -X $package.gitMajor=1"
    flags+=" -X $package.gitMinor=$minor -X $package.gitTreeState=clean"
  done
  local wanted=(./cmd/etcd) tool missing=()
  while read -r tool; do
    wanted+=("$tool")
  done < <(cd "$module" && go mod edit -json | python3 -c \
    'import json, sys; [print(t["Path"]) for t in json.load(sys.stdin).get("Tool") or []]')
  for package in "${wanted[@]}"; do
    [ -x "$bin/$(basename "$package")" ] || missing+=("$package")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    numadra_go_build_into "$who" "$bin" "$module" -ldflags "$flags" "${missing[@]}"
  fi
  if [ ! -x "$bin/helm" ]; then
    numadra_go_build_into "$who" "$bin" "$module/helm" -ldflags "-s -w" helm.sh/helm/v3/cmd/helm
  fi
}

numadra_build_containerd() {
  local who="$1" module="$PWD/tests/e2e/containerd"
  numadra_containerd_cache
  local bin="$NUMADRA_CONTAINERD_BIN"
  # As containerd's Makefile stamps and builds them, without cgo: no btrfs, devmapper or zfs
  # snapshotter (overlayfs and native are what a node needs); the shim without gRPC (ttrpc only).
  local pkg=github.com/containerd/containerd/v2
  local flags="-s -w -X $pkg/version.Version=$NUMADRA_CONTAINERD_VERSION"
  flags+=" -X $pkg/version.Package=github.com/containerd/containerd/v2"
  local tags=urfave_cli_no_docs,no_btrfs,no_devmapper,no_zfs,osusergo,netgo
  local missing=() command
  for command in containerd ctr; do
    [ -x "$bin/$command" ] || missing+=("$pkg/cmd/$command")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    CGO_ENABLED=0 numadra_go_build_into "$who" "$bin" "$module" -tags "$tags" -ldflags "$flags" \
      "${missing[@]}"
  fi
  if [ ! -x "$bin/containerd-shim-runc-v2" ]; then
    CGO_ENABLED=0 numadra_go_build_into "$who" "$bin" "$module" -tags "$tags,no_grpc" \
      -ldflags "$flags" "$pkg/cmd/containerd-shim-runc-v2"
  fi
}

numadra_build_runc() {
  local who="$1" module="$PWD/tests/e2e/runc"
  numadra_runc_cache
  [ -x "$NUMADRA_RUNC_BIN/runc" ] && return 0
  # As runc's Makefile builds it: seccomp through libseccomp (cgo), the version stamped.
  CGO_ENABLED=1 numadra_go_build_into "$who" "$NUMADRA_RUNC_BIN" "$module" -tags seccomp \
    -ldflags "-s -w -X main.version=${NUMADRA_RUNC_VERSION#v}" github.com/opencontainers/runc
}
