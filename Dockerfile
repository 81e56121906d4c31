# crx in two stages, Debian bookworm only (packages from bookworm, nothing
# else fetched):
#
#   build:  builds crx's Debian packages with dpkg-buildpackage, which also
#           runs the unit tests (ctest -L unit); the .debs are in
#           /build/out.
#   final:  (default target) a small image with only the installed crx
#           package (crx, crx-migrate, the CRIU plugin, criu and their
#           libraries) and the .deb itself, for installing crx onto
#           Kubernetes nodes from a DaemonSet (packaging/README.md).
#
#   docker build -t crx .                      # or: buildah bud --layers -t crx .
#   docker build --target build -t crx-build . # the build stage alone
#   docker run --rm crx crx --version
#
# BASE may name a locally made bookworm image where no registry is reachable
# (packaging/README.md: mmdebstrap, then buildah from scratch + add + commit).
ARG BASE=docker.io/library/debian:bookworm

FROM ${BASE} AS build
ARG DEBIAN_FRONTEND=noninteractive
# debian/control's Build-Depends.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential dpkg-dev debhelper dh-dkms fakeroot \
      cmake g++ ninja-build pkg-config python3 \
      libseccomp-dev libcap-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev \
      libgtest-dev libgmock-dev libprotobuf-c-dev protobuf-c-compiler libssl-dev libxxhash-dev liblz4-dev libarchive-dev \
      libnl-3-dev libnl-route-3-dev libelf-dev \
      libibverbs-dev criu \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
# Built as an unprivileged user, as Debian's buildds do: a RUN step is root
# without CAP_SYS_ADMIN or CAP_NET_ADMIN (docker's default capabilities,
# buildah's chroot isolation), and the unit tests that need those as root
# skip themselves only for a non-root user.
RUN useradd --create-home --home-dir /build builder \
 && install -d -o builder -g builder /build/crx
WORKDIR /build/crx
COPY --chown=builder:builder . .
USER builder
# dpkg-buildpackage: configure, build what the package holds and the unit
# tests, run them (dh_auto_test), install, strip (debug info to crx-dbgsym).
RUN rm -rf build obj-* \
 && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -b -uc -us \
 && mkdir /build/out && mv ../*.deb ../*.changes ../*.buildinfo /build/out/

FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
COPY --from=build --chown=0:0 /build/out/crx_*.deb /build/out/crx-rxe-dkms_*.deb /opt/crx/
COPY packaging/install-on-host.sh /usr/local/sbin/crx-install-on-host
# apt resolves the package's dependencies (criu, libibverbs1, ...) from
# bookworm. apt-get clean: a base without docker's apt clean-up hook (one
# made with mmdebstrap) would keep the downloaded .debs, ~90 MB.
RUN apt-get update \
 && apt-get install -y --no-install-recommends /opt/crx/crx_*.deb \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && crx --version
CMD ["crx", "--help"]
