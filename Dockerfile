# numa-dra-driver: the node daemon numa-dra-plugin and the tools numa-probe and dra-allocate.
#
#   docker build -t numa-dra-driver:0.1.0 .
#
# Deployed by the Helm chart deploy/helm/numa-dra-driver (or deploy/manifests/), which runs
# /usr/local/bin/numa-dra-plugin. The tools work from the image too:
#   docker run --rm -v /sys:/host/sys:ro numa-dra-driver:0.1.0 numa-probe --sysfs-root /host/sys

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
    && mkdir -p /out \
    && for program in numa-dra-plugin numa-probe dra-allocate; do \
         objcopy --strip-debug /build/bin/$program /out/$program; \
       done \
    && /out/numa-probe --version && /out/dra-allocate --help >/dev/null

# ---- runtime: the shared libraries the three programs link, nothing else --------------------
FROM debian:${DEBIAN_RELEASE}-slim
# One package per shared library the programs need (readelf -d: NEEDED; the ctest
# deploy.dockerfile_runtime_libraries checks this list against the built binaries). libc6,
# libgcc-s1 and libstdc++6 are already in the slim image. pci.ids gives libpci the device
# names; ca-certificates serves --kubeconfig files that point at a public CA (in a pod the
# service account's CA is used).
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        libabsl20220623 \
        libcurl4 \
        libfmt9 \
        libgrpc++1.51 \
        libgrpc29 \
        libpci3 \
        libprotobuf32 \
        libre2-9 \
        libspdlog1.10 \
        libyaml-cpp0.7 \
        pci.ids \
        ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/numa-dra-plugin /out/numa-probe /out/dra-allocate /usr/local/bin/
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
