#!/bin/sh
# Builds a busybox rootfs from Debian's busybox-static into DIR (default
# ./rootfs next to this script): one static binary plus its applet links.
# Usage: make-rootfs.sh [DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/rootfs}
busybox=/bin/busybox
if ! dpkg -s busybox-static >/dev/null 2>&1; then
  echo "make-rootfs: installing busybox-static" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null
fi
mkdir -p "$dir/bin" "$dir/sbin" "$dir/usr/bin" "$dir/usr/sbin" "$dir/etc" "$dir/proc" \
         "$dir/sys" "$dir/dev" "$dir/tmp" "$dir/root" "$dir/run"
cp "$busybox" "$dir/bin/busybox"
for applet in $("$dir/bin/busybox" --list); do
  [ -e "$dir/bin/$applet" ] || ln -s busybox "$dir/bin/$applet"
done
echo "root:x:0:0:root:/root:/bin/sh" > "$dir/etc/passwd"
echo "root:x:0:" > "$dir/etc/group"
echo "nobody:x:65534:65534:nobody:/:/bin/false" >> "$dir/etc/passwd"
echo "nogroup:x:65534:" >> "$dir/etc/group"
