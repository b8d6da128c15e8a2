#!/usr/bin/env bash
# Our daemon side by side with the peers' kubelet plugins (issue 27 §1): each driver started,
# registered by a fake kubelet and driven through Prepare/Unprepare against one real
# kube-apiserver v1.37.2 of the e2e tier, on this machine; prints the table of
# docs/PERFORMANCE.md "Side by side with the peers" with every number measured in that one run.
# Not in CI (about 10 minutes, most of it the idle-CPU windows).
#
#   scripts/bench-peers.sh
#
#   NUMADRA_PEERS_MACHINES  our daemon's machines (default host,big-2s-8n; "host" is this machine)
#   NUMADRA_PEERS_STARTS    starts per driver, alternating (default 7)
#   NUMADRA_PEERS_IDLE      seconds of each idle-CPU window (default 60)
#   NUMADRA_PEERS_PREPARES  claims per Prepare/Unprepare pattern (default 40)
#
# The peers are pinned in tests/bench/peers/go.mod and built through the Go module proxy into
# ${NUMADRA_E2E_CACHE:-~/.cache/numadra/e2e}/peers-<hash of that go.mod and go.sum>/bin, once.
# tests/bench/peers/README.md names the peers that cannot be built that way, and why.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=lib/go.sh
source scripts/lib/go.sh
numadra_use_go bench-peers.sh
# shellcheck source=lib/kube-build.sh
source scripts/lib/kube-build.sh

module="$PWD/tests/bench/peers"
hash="$(cat "$module/go.mod" "$module/go.sum" | sha256sum | cut -c1-12)"
peers_bin="$(numadra_cache_root)/peers-$hash/bin"
mkdir -p "$peers_bin"
if [ ! -x "$peers_bin/dra-example-kubeletplugin" ]; then
  numadra_go_build_into bench-peers.sh "$peers_bin" "$module" \
    sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin
fi
echo "bench-peers.sh: peers in $peers_bin: $(cd "$peers_bin" && ls | tr '\n' ' ')"

NUMADRA_PEERS_BIN="$peers_bin" exec scripts/e2e.sh --bench PeersSideBySide
