#!/bin/sh
# The pristine minimal Debian 12 root that scripts/fresh-check.sh and tests/gpu/bundle-check.sh
# copy: `debootstrap --variant=minbase bookworm` from the mirror this machine's own apt sources
# name, with the sources a fresh installation has (the release, its updates, security), built
# once into CACHE/bookworm-minbase and marked complete (.mixlab-complete); nothing to do when it
# is. Both checks used to make it each their own way, and the one that ran first decided which
# sources the other's root had.
#
# Usage: scripts/minbase-root.sh CACHE   (as root; installs debootstrap on the host when missing)
set -eu

die() {
  echo "minbase-root.sh: $*" >&2
  exit 1
}

[ $# -eq 1 ] || die "usage: scripts/minbase-root.sh CACHE"
cache=$1
base=$cache/bookworm-minbase
[ -f "$base/.mixlab-complete" ] && exit 0
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap)"
mkdir -p "$cache"

# The Debian mirror this machine's own apt sources name (one-line or deb822 format).
mirror_for() {  # $1: the archive's last path part (debian or debian-security)
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk -v want="$1" '
      /^[[:space:]]*#/ { next }
      $1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i ~ /^[a-z]+:\/\//) { print $i; break } }
      $1 == "URIs:" { for (i = 2; i <= NF; i++) print $i }' |
    sed 's:/*$::' | awk -F/ -v want="$1" '$NF == want { print; exit }'
}
mirror=$(mirror_for debian)
security=$(mirror_for debian-security)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
[ -n "$security" ] || security=http://deb.debian.org/debian-security

echo "minbase-root.sh: debootstrap --variant=minbase bookworm from $mirror into $base"
if ! command -v debootstrap >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap
fi
rm -rf "$base.tmp"
debootstrap --variant=minbase bookworm "$base.tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
  die "debootstrap failed; its log: $cache/debootstrap.log ($(tail -n 3 "$cache/debootstrap.log"))"
# The sources a fresh Debian 12 installation has: the release, its updates, security.
cat >"$base.tmp/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
SOURCES
rm -rf "$base.tmp/var/cache/apt/archives/"*.deb
touch "$base.tmp/.mixlab-complete"
rm -rf "$base"
mv "$base.tmp" "$base"
