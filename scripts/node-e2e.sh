#!/usr/bin/env bash
# The driver on a real node: kubelet v1.37.2 and containerd v2.4.2 (with runc v1.4.4) run the
# driver from its image as `helm install` of deploy/helm/numa-dra-driver deploys it, against the
# control plane of scripts/e2e.sh, and real pods get its devices (tests/e2e/node).
#
#   scripts/node-e2e.sh [--keep] [--bench PATTERN] [FILTER]
#
#   --keep   keep the run's folder ($BUILD_DIR/node-e2e: every component's log, the pods' logs,
#            the configurations) after a passing run too; a failing run always keeps it
#   --bench  run the node's benchmarks matching PATTERN (`go test -bench`, once) instead of its
#            tests: BenchmarkNRICreation (docs/PERFORMANCE.md); not part of CI
#   FILTER   a `go test -run` pattern: only the tests it matches (the node comes up regardless)
#
# Needs root (containerd and the kubelet), and what scripts/install-deps.sh installs (the CNI
# plugins, busybox-static, gcc, libseccomp-dev, iproute2, util-linux).
#
# Builds (each cached by version, scripts/lib/kube-build.sh and scripts/node-images.py): the
# control plane and the kubelet in one `go build`, containerd with its shim and ctr, runc, the C++
# programs, and three images without any registry: a static pause, a busybox shell, and the
# driver's image made the Dockerfile's way (FROM scratch and scripts/image-root.py's folder).
#
# Then everything runs in namespaces of its own (unshare): a network namespace with only a
# loopback interface (checked before anything starts: no other interface, no route off it), a
# private mount namespace (tmpfs over /run; overlays over /etc, /var/lib and /var/log whose
# writes land in the run's folder, the kubelet's root and the pods' logs bound from it; files
# over the /proc/sys settings the kubelet writes; an /etc/hosts naming the node), and a PID
# namespace whose end takes every process with it. The pods' cgroups go under
# /sys/fs/cgroup/<hierarchy>/numadra-node-<pid>, made here and removed at the end, on failure
# and Ctrl-C too. Nothing of the machine's network, mounts, sysctls or iptables is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir="$PWD"

# ---- inside the namespaces (PID 1 of the PID namespace) ------------------------------------
if [ "${1:-}" = "--inside" ]; then
  shift
  run="$NUMADRA_NODE_WORK"
  ip link set lo up
  # The hard rule first: loopback only, no default route, nothing else.
  links="$(ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')"
  if [ "$links" != "lo " ] || [ -n "$(ip route show default)" ] || [ -n "$(ip -6 route show default)" ]; then
    echo "node-e2e.sh: refusing to run: the network namespace has links '$links'," \
      "routes '$(ip route show; ip -6 route show)'" >&2
    exit 1
  fi
  echo "node-e2e.sh: network namespace: links: $links; IPv4 routes: $(ip route show | wc -l)," \
    "none default; IPv6 default: none"
  # The node's address: the kubelet refuses a loopback one (127.0.0.0/8), and without an
  # InternalIP the API server cannot reach it (exec, logs) nor the kubelet probe a hostNetwork
  # pod. An address of TEST-NET-2 on lo: still no other interface, and no route.
  ip addr add "$NUMADRA_NODE_IP/32" dev lo
  # The kernel settings the kubelet writes (pkg/kubelet/cm, setupKernelTunables): files of ours
  # over them, so its writes never reach the machine's.
  mkdir -p "$run/sysctl"
  for key in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops \
    kernel/keys/root_maxkeys kernel/keys/root_maxbytes; do
    file="$run/sysctl/${key//\//.}"
    cat "/proc/sys/$key" >"$file"
    mount --bind "$file" "/proc/sys/$key"
  done
  # Every folder a node writes is the run's: /run a tmpfs (containerd's state and sockets, CDI
  # specs, NRI), /etc, /var/lib and /var/log overlays over the machine's.
  mount -t tmpfs -o mode=755 numadra-node-run /run
  for folder in etc var/lib var/log; do
    name="${folder//\//-}"
    mkdir -p "$run/overlay/$name/upper" "$run/overlay/$name/work"
    mount -t overlay "numadra-node-$name" \
      -o "lowerdir=/$folder,upperdir=$run/overlay/$name/upper,workdir=$run/overlay/$name/work" "/$folder"
  done
  # The kubelet's root and the pods' logs on the run's own file system, not on an overlay: the
  # kubelet's cAdvisor finds a block device behind them (for an overlay's anonymous device it
  # finds none and the kubelet stops).
  for folder in var/lib/kubelet var/log/pods var/log/containers; do
    mkdir -p "$run/${folder//\//-}" "/$folder"
    mount --bind "$run/${folder//\//-}" "/$folder"
  done
  # containerd's root (the images' snapshots: thousands of files) in memory: it goes with the
  # mount namespace instead of being deleted file by file.
  mkdir -p "$run/containerd"
  mount -t tmpfs -o mode=700 numadra-node-containerd "$run/containerd"
  printf '127.0.0.1 localhost %s\n::1 localhost\n' "$NUMADRA_NODE_NAME" >"$run/hosts"
  mount --bind "$run/hosts" /etc/hosts
  # No CDI spec of the machine's, only the driver's.
  rm -rf /etc/cdi
  # PID 1 of the namespace: Ctrl-C reaches the test binary (same process group), which stops
  # what it started; whatever is left ends with this shell.
  trap '' INT TERM
  inside_started=$SECONDS
  status=0
  if [ -n "${NUMADRA_NODE_BENCH:-}" ]; then
    "$run/node.test" -test.v -test.count=1 -test.timeout=60m -test.run '^$' \
      -test.bench "$NUMADRA_NODE_BENCH" -test.benchtime 1x || status=$?
  else
    "$run/node.test" -test.v -test.count=1 -test.timeout=30m ${NUMADRA_NODE_FILTER:+-test.run "$NUMADRA_NODE_FILTER"} || status=$?
  fi
  echo "node-e2e.sh: the test binary ran $((SECONDS - inside_started)) s"
  exit "$status"
fi

keep=0
filter=""
bench=""
while [ $# -gt 0 ]; do
  arg="$1"
  shift
  case "$arg" in
    --keep) keep=1 ;;
    --bench)
      [ $# -gt 0 ] || { echo "node-e2e.sh: --bench needs a pattern" >&2; exit 2; }
      bench="$1"
      shift
      ;;
    -h | --help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "node-e2e.sh: unknown option $arg (usage: scripts/node-e2e.sh [--keep] [--bench PATTERN] [FILTER])" >&2; exit 2 ;;
    *) filter="$arg" ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "node-e2e.sh: needs root (containerd and the kubelet run as root)" >&2
  exit 1
fi
for program in /usr/lib/cni/loopback /usr/lib/cni/bridge /usr/lib/cni/host-local /bin/busybox gcc \
  unshare ip; do
  if ! command -v "$program" >/dev/null 2>&1; then
    echo "node-e2e.sh: $program is missing (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
done

started=$SECONDS
# shellcheck source=lib/go.sh
source scripts/lib/go.sh
numadra_use_go node-e2e.sh
# shellcheck source=lib/kube-build.sh
source scripts/lib/kube-build.sh
numadra_build_kube node-e2e.sh
numadra_build_containerd node-e2e.sh
numadra_build_runc node-e2e.sh

BUILD_DIR="${BUILD_DIR:-build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$source_dir/$BUILD_DIR" ;; esac
scripts/build.sh --target numa-dra-plugin --target numa-probe --target dra-allocate \
  --target generated_sysfs | tail -1

work="$BUILD_DIR/node-e2e"
rm -rf "$work"
mkdir -p "$work"
python3 scripts/node-images.py --build-dir "$BUILD_DIR" --sizes \
  --cache "$(numadra_cache_root)/images" --out "$work/images"
(cd tests/e2e/node && go test -c -o "$work/node.test" .)
echo "node-e2e.sh: built in $((SECONDS - started)) s; kubelet $("$NUMADRA_KUBE_BIN/kubelet" --version)," \
  "$("$NUMADRA_CONTAINERD_BIN/containerd" --version | cut -d' ' -f1,3), $("$NUMADRA_RUNC_BIN/runc" --version | head -1)"

# The pods' cgroup root in every hierarchy (the kubelet refuses a cgroupRoot that is missing).
cgroup_root="numadra-node-$$"
hierarchies=()
for hierarchy in /sys/fs/cgroup/*/; do
  hierarchy="${hierarchy%/}"
  mountpoint -q "$hierarchy" || continue
  hierarchies+=("$hierarchy")
done

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  [ -z "${namespaces_started:-}" ] ||
    echo "node-e2e.sh: the namespaces ran $((SECONDS - namespaces_started)) s"
  local cleanup_started=$SECONDS
  # The PID namespace is gone with its PID 1; its processes die with it, a moment later.
  local hierarchy attempt
  for hierarchy in "${hierarchies[@]}"; do
    [ -d "$hierarchy/$cgroup_root" ] || continue
    for attempt in $(seq 50); do
      find "$hierarchy/$cgroup_root" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$hierarchy/$cgroup_root" ] || break
      sleep 0.2
    done
    if [ -d "$hierarchy/$cgroup_root" ]; then
      echo "node-e2e.sh: could not remove $hierarchy/$cgroup_root (processes left in it?)" >&2
      status=1
    fi
  done
  echo "node-e2e.sh: cgroups removed in $((SECONDS - cleanup_started)) s"
  if [ "$status" -ne 0 ]; then
    echo "node-e2e.sh: FAILED; logs in $work/logs and $work/cluster/logs, pods' logs in" \
      "$work/var-log-pods" >&2
  elif [ "$keep" -eq 0 ]; then
    rm -rf "$work"
  fi
  echo "node-e2e.sh: cleaned up in $((SECONDS - cleanup_started)) s"
  echo "node-e2e.sh: $([ "$status" -eq 0 ] && echo passed || echo failed) in $((SECONDS - started)) s"
  exit "$status"
}
trap cleanup EXIT
namespaces_started=$SECONDS
trap 'exit 130' INT TERM

for hierarchy in "${hierarchies[@]}"; do
  mkdir "$hierarchy/$cgroup_root"
  if [ -f "$hierarchy/cpuset.cpus" ]; then
    cat "$hierarchy/cpuset.cpus" >"$hierarchy/$cgroup_root/cpuset.cpus"
    cat "$hierarchy/cpuset.mems" >"$hierarchy/$cgroup_root/cpuset.mems"
  fi
done

echo "node-e2e.sh: the node in its own network, mount and PID namespaces; the run in $work"
NUMADRA_NODE_WORK="$work" NUMADRA_NODE_NAME=numadra-node NUMADRA_NODE_IP=198.51.100.10 \
  NUMADRA_NODE_MACHINE=big-2s-8n \
  NUMADRA_NODE_CGROUP_ROOT="/$cgroup_root" NUMADRA_NODE_FILTER="$filter" NUMADRA_NODE_BENCH="$bench" \
  NUMADRA_E2E_BIN="$NUMADRA_KUBE_BIN" NUMADRA_NODE_CONTAINERD_BIN="$NUMADRA_CONTAINERD_BIN" \
  NUMADRA_NODE_RUNC="$NUMADRA_RUNC_BIN/runc" \
  NUMADRA_NODE_IMAGES="$work/images" NUMADRA_BUILD_DIR="$BUILD_DIR" NUMADRA_SOURCE_DIR="$source_dir" \
  unshare --net --mount --propagation private --pid --fork --mount-proc -- "$0" --inside
