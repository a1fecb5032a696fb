#!/bin/sh
# Installs the Debian package that `cmake --workflow --preset package` built, with apt-get (which
# pulls its dependencies), and runs the installed programs from their installed paths, not from
# the build tree: mixlab-cli --version and self-test, mixlab --help and --version, and the GUI's
# window under xvfb-run. Checks the
# desktop entry, AppStream metainfo, icons and example models landed, and the tarball holds both
# programs. Without the CUDA backend's package (mixlab-cuda), --version must say why the cuda
# backend is unavailable and a run asked for on cuda must train on the CPU, saying why; then
# mixlab-cuda (when built) is installed too and must not break anything, with or without CUDA
# libraries on this machine. Needs root (it installs packages).
# Usage: scripts/package-check.sh [BUILD_DIR]   (default build/release)
set -eu

build=$(realpath "${1:-build/release}")  # absolute: the checks below run in a scratch folder
deb=$(ls "$build"/mixlab_*.deb 2>/dev/null | head -n 1)
tgz=$(ls "$build"/mixlab-*.tar.gz 2>/dev/null | head -n 1)
cuda_deb=$(ls "$build"/mixlab-cuda_*.deb 2>/dev/null | head -n 1)
if [ -z "$deb" ] || [ -z "$tgz" ]; then
  echo "package-check.sh: no package in $build: run cmake --workflow --preset package first" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "package-check.sh: installing $deb needs root" >&2
  exit 1
fi

if dpkg -s mixlab-cuda >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -q mixlab-cuda
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
if [ -n "$cuda_deb" ]; then
  tar -tzf "$tgz" | grep -q "/lib/mixlab/libmixlab-cuda.so\$" ||
    fail "$tgz has no lib/mixlab/libmixlab-cuda.so"
fi

# From the installed paths, in a scratch home: the user's own settings and runs stay untouched.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
export HOME="$scratch" XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config"
unset MIXLAB_DB
/usr/bin/mixlab-cli --version | tee version.txt
/usr/bin/mixlab-cli self-test
# Without mixlab-cuda: the cuda backend is unavailable, with a reason, and a run asked for on cuda
# trains on the CPU and says why.
grep -Eq '^  cuda  unavailable: (the CUDA backend is not installed: libmixlab-cuda.so was not found|not in this build)' \
  version.txt || fail "mixlab-cli --version does not say why the cuda backend is unavailable"
/usr/bin/mixlab-cli train --device cuda --model fashion-mlp --dataset synthetic:28x28x1:10:256 \
  --steps 5 --no-store --json >train.json 2>train.err ||
  fail "mixlab-cli train --device cuda failed: $(cat train.err)"
grep -q 'cuda:0 is unavailable: .*; training on the CPU instead' train.err ||
  fail "mixlab-cli train --device cuda did not say why it trains on the CPU: $(cat train.err)"
grep -q '"device_id": "cpu"' train.json || fail "mixlab-cli train --device cuda did not use the CPU"
/usr/bin/mixlab --help >/dev/null
/usr/bin/mixlab --version
# The installed GUI shows its window (Qt's platform plugins come with the package's dependencies).
if command -v xvfb-run >/dev/null 2>&1; then
  env -u QT_QPA_PLATFORM xvfb-run -a /usr/bin/mixlab --startup-benchmark
fi

# The CUDA backend's package installs anywhere (it declares no CUDA packages); without CUDA
# libraries, a driver or a GPU, the programs still work and say which is missing.
if [ -n "$cuda_deb" ]; then
  echo "package-check.sh: installing $cuda_deb"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall "$(realpath "$cuda_deb")"
  [ -s /usr/lib/mixlab/libmixlab-cuda.so ] || fail "/usr/lib/mixlab/libmixlab-cuda.so was not installed"
  /usr/bin/mixlab-cli --version | tee version.txt
  grep -Eq '^  cuda  (available: .|unavailable: .*(cannot be loaded|no NVIDIA GPU or driver|cannot use))' \
    version.txt || fail "mixlab-cli --version with mixlab-cuda gives no status for the cuda backend"
  /usr/bin/mixlab-cli self-test
fi
echo "package-check.sh: the installed mixlab and mixlab-cli work"
