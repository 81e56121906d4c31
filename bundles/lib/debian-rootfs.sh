# shellcheck shell=sh
# Shared by the bundles' make-rootfs.sh recipes (sourced, POSIX sh): a
# container rootfs from Debian's own packages, fetched with `apt-get
# download` into ${CRX_CACHE:-~/.cache/crx}/bundles/debs (one file per
# package version, checked against the archive's SHA256) and unpacked with
# `dpkg-deb -x`; nothing is installed on the host. The tree is built next
# to its destination and moved into place only once complete, so a failed
# run leaves nothing behind.
#
#   rootfs_begin DIR             start; the tree under construction is $tmp
#   rootfs_unpack PACKAGE...     unpack each package's candidate version
#   rootfs_skeleton [DIR...]     /proc, /dev, ... (and DIRs), busybox applets
#                                as links, passwd/group/hosts/nsswitch
#   rootfs_require_rxe_provider  libibverbs' rxe provider is in the tree
#   rootfs_check_libs FILE...    (root only) each ELF FILE of the tree
#                                resolves all its libraries inside it
#   rootfs_commit                replace DIR with the tree

rootfs_begin() {
  dir=$1
  cache=${CRX_CACHE:-$HOME/.cache/crx}/bundles/debs
  mkdir -p "$cache" "$(dirname "$dir")"
  dl=$(mktemp -d "$cache/.download.XXXXXX")
  tmp=$(mktemp -d "$(dirname "$dir")/.$(basename "$dir").XXXXXX")
  old=
  trap 'rm -rf "$dl" "$tmp" ${old:+"$old"}' EXIT
  trap 'exit 1' INT TERM HUP
  # As root, apt downloads as root anyway (with a warning) into a directory
  # its _apt user cannot write; say so up front. Hashes are checked below.
  apt_opts=-q
  [ "$(id -u)" -ne 0 ] || apt_opts="-q -o APT::Sandbox::User=root"
}

# Prints the cached .deb of PACKAGE's candidate version, downloading it
# first when the cache lacks it or holds a file with the wrong hash.
rootfs_fetch() {
  fields=$(apt-cache show --no-all-versions "$1" 2>/dev/null |
           awk '/^$/ { exit } /^Version: / { v = $2 } /^Filename: / { f = $2 }
                /^SHA256: / { s = $2 } END { if (v && f && s) print v, f, s }') || true
  if [ -z "$fields" ]; then
    echo "make-rootfs: no downloadable candidate for $1 (run apt-get update?)" >&2
    return 1
  fi
  # shellcheck disable=SC2086 # version, pool file, hash
  set -- "$1" $fields
  deb=$cache/$(basename "$3")
  if [ -f "$deb" ] && echo "$4  $deb" | sha256sum -c --status; then
    echo "$deb"
    return 0
  fi
  # shellcheck disable=SC2086
  (cd "$dl" && apt-get download $apt_opts "$1=$2" >&2) || return 1
  set -- "$@" "$dl"/*.deb
  if [ $# -ne 5 ] || ! echo "$4  $5" | sha256sum -c --status; then
    echo "make-rootfs: download of $1=$2 failed or does not match its SHA256" >&2
    return 1
  fi
  mv "$5" "$deb"
  echo "$deb"
}

rootfs_unpack() {
  for p in "$@"; do
    deb=$(rootfs_fetch "$p")
    dpkg-deb -x "$deb" "$tmp"
  done
}

# shellcheck disable=SC2120 # the extra dirs are optional
rootfs_skeleton() {
  chmod 755 "$tmp"
  for d in bin sbin usr/sbin usr/local/bin proc sys dev tmp root run "$@"; do
    mkdir -p "$tmp/$d"
  done
  chmod 1777 "$tmp/tmp"
  for applet in $("$tmp/bin/busybox" --list-full); do
    case $applet in */*) ;; *) continue ;; esac  # linuxrc
    name=${applet##*/}
    [ -e "$tmp/bin/$name" ] || [ -e "$tmp/usr/bin/$name" ] || [ -e "$tmp/sbin/$name" ] ||
      [ -e "$tmp/usr/sbin/$name" ] || ln -s /bin/busybox "$tmp/$applet"
  done
  printf '%s\n' "root:x:0:0:root:/root:/bin/sh" "nobody:x:65534:65534:nobody:/:/bin/false" \
    > "$tmp/etc/passwd"
  printf '%s\n' "root:x:0:" "nogroup:x:65534:" > "$tmp/etc/group"
  printf '%s\n' "127.0.0.1 localhost" "::1 localhost" > "$tmp/etc/hosts"
  printf '%s\n' "passwd: files" "group: files" "hosts: files dns" > "$tmp/etc/nsswitch.conf"
}

# Debian's libibverbs finds a provider through /etc/libibverbs.d/<name>.driver
# and loads <multiarch>/libibverbs/lib<name>-rdmav<ABI>.so.
rootfs_require_rxe_provider() {
  if [ ! -f "$tmp/etc/libibverbs.d/rxe.driver" ]; then
    echo "make-rootfs: ibverbs-providers has no /etc/libibverbs.d/rxe.driver" >&2
    exit 1
  fi
  set -- "$tmp"/usr/lib/*/libibverbs/librxe-rdmav*.so
  if [ ! -f "$1" ]; then
    echo "make-rootfs: ibverbs-providers has no librxe-rdmav*.so" >&2
    exit 1
  fi
}

rootfs_check_libs() {
  # shellcheck disable=SC2012 # names without odd characters
  ldso=$(cd "$tmp" && ls lib64/ld-linux*.so.* lib/ld-linux*.so.* 2>/dev/null | head -n 1)
  missing=
  for f in "$@"; do
    if [ ! -f "$f" ] || [ -L "$f" ]; then continue; fi
    [ "$(head -c 4 "$f" | tr -d '\177')" = ELF ] || continue
    rel=${f#"$tmp"}
    out=$(chroot "$tmp" "/$ldso" --list "$rel" 2>&1) || { missing="$missing $rel"; continue; }
    case $out in *"not found"*) missing="$missing $rel" ;; esac
  done
  if [ -n "$missing" ]; then
    echo "make-rootfs: unresolved libraries in:$missing" >&2
    exit 1
  fi
}

rootfs_commit() {
  if [ -e "$dir" ]; then
    old=$(mktemp -d "$(dirname "$dir")/.$(basename "$dir").old.XXXXXX")
    mv -T "$dir" "$old/rootfs"
  fi
  if ! mv -T "$tmp" "$dir"; then
    [ -z "$old" ] || mv -T "$old/rootfs" "$dir"
    exit 1
  fi
  echo "make-rootfs: $dir" >&2
}
