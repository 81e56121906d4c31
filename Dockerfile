# crx built on Debian bookworm, with what its unit, host and containerd tests
# need.  Reproducible: packages come from bookworm only, the build type is
# fixed and nothing is fetched but apt packages.
#
#   buildah bud --storage-driver vfs --isolation chroot -t crx .
#   docker build -t crx .
#
# BASE may name a locally made bookworm image where no registry is reachable
# (see tests/containerd/README.md: mmdebstrap | buildah import).
ARG BASE=docker.io/library/debian:bookworm
FROM ${BASE}

ARG DEBIAN_FRONTEND=noninteractive
# Build tools and libraries (as tests/setup.sh), then the test prerequisites:
# busybox-static for bundles, runc/crun for comparisons and benchmarks,
# criu for checkpoint, containerd/umoci/bsdutils(script) for tests/containerd.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      cmake g++ ninja-build pkg-config \
      libseccomp-dev libcap-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev \
      libgtest-dev libgmock-dev libprotobuf-c-dev protobuf-c-compiler libssl-dev \
      busybox-static runc crun criu iptables iproute2 procps psmisc util-linux \
      bsdutils containerd umoci python3 kmod \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src/crx
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
 && ninja -C build -j"$(nproc)" crx crx_unit_tests \
 && cd build && ctest -L unit --output-on-failure

ENV PATH=/src/crx/build:$PATH
CMD ["crx", "--help"]
