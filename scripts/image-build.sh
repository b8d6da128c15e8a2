#!/usr/bin/env bash
# Builds the driver's image from the Dockerfile with `podman build`, both stages, as a user's
# `docker build -t numa-dra-driver:0.1.0 .` does: the build stage installs the build
# dependencies with apt and compiles the project from scratch inside a debian:bookworm
# container. A release check, not a CI tier (a full build without ccache, ~15-20 min on 2
# cores); the node tier assembles the same runtime stage from the CI build instead
# (scripts/node-images.py runs the build stage's scripts/image-root.py).
#
#   scripts/image-build.sh [--tag TAG] [--save FILE]
#
# No registry is reachable here: debian:bookworm is made by mmdebstrap (minbase, Debian's mirror)
# and imported into podman once. The build stage's RUN steps use the host's network (apt reaches
# Debian's mirror, as scripts/install-deps.sh does). Prints the image's size; --save writes it
# as an OCI archive (`ctr images import` reads it). Needs root, podman and mmdebstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=localhost/numa-dra-driver:0.1.0
save=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="$2"; shift 2 ;;
    --save) save="$2"; shift 2 ;;
    *) echo "usage: scripts/image-build.sh [--tag TAG] [--save FILE]" >&2; exit 2 ;;
  esac
done
for program in podman mmdebstrap; do
  if ! command -v "$program" >/dev/null 2>&1; then
    echo "image-build.sh: $program is missing (Debian: apt-get install $program)" >&2
    exit 1
  fi
done

base=docker.io/library/debian:bookworm
if ! podman image exists "$base"; then
  echo "image-build.sh: making $base with mmdebstrap (minbase) ..."
  started=$SECONDS
  # Its own mount namespace: what mmdebstrap mounts into the tree never shows in the machine's.
  unshare --mount --propagation private -- \
    mmdebstrap --variant=minbase --mode=root --format=tar --quiet bookworm - \
    | podman import --change 'CMD ["bash"]' - "$base" >/dev/null
  echo "image-build.sh: $base made in $((SECONDS - started)) s"
fi

started=$SECONDS
podman build --network=host --pull=never -t "$tag" -f Dockerfile .
echo "image-build.sh: $tag built in $((SECONDS - started)) s"
podman image inspect --format 'image-build.sh: {{.Id}} {{.Size}} bytes unpacked' "$tag"
# The programs answer from the image itself, as the README's `docker run` examples use it. The
# limits are ones a process without CAP_SYS_RESOURCE may set (podman's default nofile is not).
podman run --rm --network=none --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 "$tag" \
  /usr/local/bin/numa-probe --version
podman run --rm --network=none --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
  -v /sys:/host/sys:ro "$tag" /usr/local/bin/numa-probe --sysfs-root /host/sys | head -3
if [ -n "$save" ]; then
  podman save --format oci-archive -o "$save" "$tag"
  echo "image-build.sh: saved to $save ($(du -h "$save" | cut -f1))"
fi
