# numa-dra-driver: the node daemon numa-dra-plugin and the tools numa-probe and dra-allocate.
#
#   docker build -t numa-dra-driver:0.1.0 .
#
# Deployed by the Helm chart deploy/helm/numa-dra-driver (or deploy/manifests/), which runs
# /usr/local/bin/numa-dra-plugin. The tools work from the image too:
#   docker run --rm -v /sys:/host/sys:ro numa-dra-driver:0.1.0 numa-probe --sysfs-root /host/sys
# (the image has no shell: name the program, as above).

ARG DEBIAN_RELEASE=bookworm

# ---- build: the way scripts/test.sh builds (scripts/install-deps.sh, then scripts/build.sh) --
FROM debian:${DEBIAN_RELEASE} AS build
# Only the libraries and the programs (the tests run in CI, not in the image build).
ARG NUMADRA_BUILD_TESTS=OFF
ARG BUILD_TYPE=RelWithDebInfo
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY . .
# --build-only: what the build needs, not the programs the tests run (podman, npm, lstopo).
RUN scripts/install-deps.sh --build-only \
    && rm -rf /var/lib/apt/lists/*
RUN BUILD_DIR=/build BUILD_TYPE=${BUILD_TYPE} scripts/build.sh \
        -DNUMADRA_BUILD_TESTS=${NUMADRA_BUILD_TESTS} -DNUMADRA_BUILD_BENCH=OFF \
    && scripts/image-root.py --build-dir /build --out /image-root \
    && chroot /image-root /usr/local/bin/numa-probe --version \
    && chroot /image-root /usr/local/bin/dra-allocate --help >/dev/null

# ---- runtime: the three programs and exactly what they load, nothing else --------------------
# scripts/image-root.py: the programs (debug sections stripped), every shared library the
# dynamic loader maps for them and the loader itself, from the build stage's Debian 12 (the
# packages are Debian's, only unpacked here), pci.ids (libpci names the devices with it), the CA
# bundle (--kubeconfig files that point at a public CA; in a pod the service account's CA is
# used), /etc/passwd and /etc/group. No shell and no package manager: the daemon runs nothing
# but itself, and what is not in the image cannot be exploited or need patching.
FROM scratch
COPY --from=build /image-root/ /
# Not root by default: numa-probe and dra-allocate need nothing more. The daemon runs as root
# because it writes into root-owned host folders (the kubelet's plugin registry and plugin
# folder, /var/run/cdi) through hostPath volumes, which cannot be given to another user; the
# DaemonSet asks for uid 0 explicitly, without any capability (see its securityContext).
USER 65532:65532
ENTRYPOINT []
CMD ["/usr/local/bin/numa-dra-plugin", "--help"]

LABEL org.opencontainers.image.title="numa-dra-driver" \
      org.opencontainers.image.description="DRA node driver publishing GPUs, NICs (SR-IOV) and CPUs with their NUMA and PCIe topology" \
      org.opencontainers.image.version="0.1.0"
