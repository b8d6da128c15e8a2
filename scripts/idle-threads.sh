#!/usr/bin/env bash
# Where an idle numa-dra-plugin spends its CPU, thread by thread (issue 27): the daemon against
# the fake API server (tests/fakes/apiserver, bookmarks once a minute as kube-apiserver's watch
# cache sends them), every folder in a temporary one, settled, then the user + system time of
# each thread over a window (schedstat, in microseconds), named from /proc/<pid>/task/<tid>/comm,
# or from its stack (gdb) for threads without a name.
#
#   scripts/idle-threads.sh MACHINE [SECONDS] [DAEMON FLAG...]
#
#   MACHINE   host (this machine's /sys and /proc) or a generated machine (build/testdata/sysfs)
#   SECONDS   the window (default 60)
#   e.g.      scripts/idle-threads.sh big-2s-8n 60 --health=false
#   NUMADRA_IDLE_KUBECONFIG  a real API server's kubeconfig instead of the fake one (e.g. the
#                            admin kubeconfig `NUMADRA_E2E_HOLD=1 scripts/e2e.sh
#                            TestTheControlPlaneServesResourceV1` prints)
#
# Prints one line per thread that used CPU, the total and its share of one CPU,
# and how many discovery runs the daemon made in the window. BUILD_DIR (default
# build/) must hold bin/numa-dra-plugin, bin/fake-apiserver and the generated machines.
set -euo pipefail
cd "$(dirname "$0")/.."
machine="${1:?usage: scripts/idle-threads.sh MACHINE [SECONDS] [DAEMON FLAG...]}"
window="${2:-60}"
shift $(($# >= 2 ? 2 : 1))
build="${BUILD_DIR:-build}"
if [ "$machine" = host ]; then
  sys=/sys proc=/proc
else
  sys="$build/testdata/sysfs/$machine/sys" proc="$build/testdata/sysfs/$machine/proc"
fi
[ -d "$sys" ] || { echo "idle-threads.sh: no machine tree $sys" >&2; exit 2; }

tmp="$(mktemp -d)"
api_pid="" daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  [ -n "$api_pid" ] && kill "$api_pid" 2>/dev/null && wait "$api_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

if [ -n "${NUMADRA_IDLE_KUBECONFIG:-}" ]; then
  cp "$NUMADRA_IDLE_KUBECONFIG" "$tmp/kubeconfig"
else
  "$build/bin/fake-apiserver" --bookmark-interval-ms 60000 >"$tmp/api.out" 2>&1 &
  api_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/api.out" ] && break; sleep 0.1; done
  url="$(head -1 "$tmp/api.out")"
  cat >"$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "$url"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
EOF
fi
mkdir -p "$tmp"/{registry,plugins,cdi,metadata,state,dev}
metrics_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$build/bin/numa-dra-plugin" --kubeconfig "$tmp/kubeconfig" --node-name "idle-$machine-$$" \
  --sysfs-root "$sys" --proc-root "$proc" --dev-root "$tmp/dev" \
  --kubelet-registry-dir "$tmp/registry" --kubelet-plugins-dir "$tmp/plugins" \
  --cdi-dir "$tmp/cdi" --metadata-dir "$tmp/metadata" --state-dir "$tmp/state" \
  --nri-socket "$tmp/nri.sock" --metrics-addr "127.0.0.1:$metrics_port" --log-format text "$@" \
  >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
sleep 15  # published, the first health rounds over

cpu_ns() {  # tid and the nanoseconds it ran (schedstat: exact, where utime/stime are 10 ms ticks)
  for task in /proc/"$daemon_pid"/task/*; do
    echo "${task##*/} $(cut -d' ' -f1 "$task/schedstat" 2>/dev/null || echo 0)"
  done
}
discoveries() {  # discovery runs so far, from the daemon's metrics
  curl -s "http://127.0.0.1:$metrics_port/metrics" |
    awk '/^numadra_discovery_duration_seconds_count/ { print $2 }'
}
cpu_ns >"$tmp/before"
discoveries_before="$(discoveries)"
sleep "$window"
cpu_ns >"$tmp/after"
discoveries_after="$(discoveries)"
gdb -p "$daemon_pid" -batch -ex 'thread apply all bt 30' >"$tmp/stacks" 2>/dev/null || true

role() {  # a thread's name, or the daemon function its stack is in
  local tid="$1" comm
  comm="$(cat "/proc/$daemon_pid/task/$tid/comm" 2>/dev/null || echo '?')"
  if [ "$comm" != numa-dra-plugin ]; then echo "$comm"; return; fi
  awk -v tid="$tid" '
    /^Thread / { mine = index($0, "LWP " tid ")") > 0; next }
    mine && /numadra::/ && !/_State_impl|<lambda/ {
      frame = $0; sub(/^.* in /, "", frame); sub(/ \(.*$/, "", frame)
      gsub(/\(anonymous namespace\)::/, "", frame) }
    END { print (frame == "" ? "main" : frame) }' "$tmp/stacks"
}
total=0
while read -r tid after; do
  before="$(awk -v tid="$tid" '$1 == tid { print $2 }' "$tmp/before")"
  used=$(((after - ${before:-0}) / 1000))
  total=$((total + used))
  [ "$used" -gt 0 ] && printf '%9d us  tid %-8s %s\n' "$used" "$tid" "$(role "$tid")"
done <"$tmp/after"
awk -v t="$total" -v w="$window" 'BEGIN { printf "total %d us = %.4f %% of one CPU over %d s\n", t, t / (w * 1e6) * 100, w }'
echo "discovery runs in the window: $((discoveries_after - discoveries_before))"
