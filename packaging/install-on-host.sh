#!/bin/sh
# crx-install-on-host (in the final image of the Dockerfile): installs the
# image's crx package onto the node whose root is mounted at $HOST_ROOT
# (default /host), e.g. from a privileged DaemonSet pod, then sleeps so the
# pod stays Ready. The node's own apt resolves the dependencies, so the node
# must be Debian bookworm. With CRX_ENABLE_RECEIVER=1 it also enables and
# starts crx-receive (the node needs /etc/crx/migrate.key first, e.g. from
# a Secret mounted and copied by an init container).
set -eu
host=${HOST_ROOT:-/host}
deb=$(ls /opt/crx/crx_*.deb | head -n 1)
[ -d "$host/etc" ] || { echo "crx-install-on-host: no node root at $host" >&2; exit 1; }
. "$host/etc/os-release"
[ "${VERSION_CODENAME:-}" = bookworm ] ||
  { echo "crx-install-on-host: node runs ${PRETTY_NAME:-?}, the package is for Debian bookworm" >&2; exit 1; }
mkdir -p "$host/var/cache/crx"
cp "$deb" "$host/var/cache/crx/"
chroot "$host" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends /var/cache/crx/$(basename "$deb")"
chroot "$host" crx --version
if [ "${CRX_ENABLE_RECEIVER:-0}" = 1 ]; then
  chroot "$host" systemctl enable --now crx-receive.service
fi
[ "${CRX_INSTALL_ONLY:-0}" = 1 ] && exit 0
exec sleep infinity
