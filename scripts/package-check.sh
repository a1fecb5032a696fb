#!/bin/sh
# Installs the Debian package that `cmake --workflow --preset package` built, with apt-get (which
# pulls its dependencies), and runs the installed programs from their installed paths, not from
# the build tree: mixlab-cli --version and self-test, mixlab --help and --version, and the GUI's
# window under xvfb-run. Checks the
# desktop entry, AppStream metainfo, icons and example models landed, and the tarball holds both
# programs. Needs root (it installs a package).
# Usage: scripts/package-check.sh [BUILD_DIR]   (default build/release)
set -eu

build=${1:-build/release}
deb=$(ls "$build"/mixlab_*.deb 2>/dev/null | head -n 1)
tgz=$(ls "$build"/mixlab-*.tar.gz 2>/dev/null | head -n 1)
if [ -z "$deb" ] || [ -z "$tgz" ]; then
  echo "package-check.sh: no package in $build: run cmake --workflow --preset package first" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "package-check.sh: installing $deb needs root" >&2
  exit 1
fi

echo "package-check.sh: installing $deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall "$(realpath "$deb")"

fail() {
  echo "package-check.sh: $*" >&2
  exit 1
}
for f in /usr/share/applications/org.mixlab.MixLab.desktop \
         /usr/share/metainfo/org.mixlab.MixLab.metainfo.xml \
         /usr/share/icons/hicolor/16x16/apps/org.mixlab.MixLab.png \
         /usr/share/icons/hicolor/256x256/apps/org.mixlab.MixLab.png \
         /usr/share/icons/hicolor/scalable/apps/org.mixlab.MixLab.svg \
         /usr/share/mixlab/models/fashion-mlp.json; do
  [ -s "$f" ] || fail "$f was not installed"
done
for program in mixlab mixlab-cli; do
  tar -tzf "$tgz" | grep -q "/bin/$program\$" || fail "$tgz has no bin/$program"
done

# From the installed paths, in a scratch home: the user's own settings and runs stay untouched.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
export HOME="$scratch" XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config"
unset MIXLAB_DB
/usr/bin/mixlab-cli --version
/usr/bin/mixlab-cli self-test
/usr/bin/mixlab --help >/dev/null
/usr/bin/mixlab --version
# The installed GUI shows its window (Qt's platform plugins come with the package's dependencies).
if command -v xvfb-run >/dev/null 2>&1; then
  env -u QT_QPA_PLATFORM xvfb-run -a /usr/bin/mixlab --startup-benchmark
fi
echo "package-check.sh: the installed mixlab and mixlab-cli work"
