#!/usr/bin/env bash
# Proves, without a GPU, that build/gpu-bundle.tar.xz (tests/gpu/bundle.sh) works on a machine
# that has none of MixLab's development packages, before a lent GPU machine's minutes are spent
# on it. In a minimal Debian 12 root (debootstrap --variant=minbase, the one
# scripts/fresh-check.sh caches: no oneDNN, SQLite, libzip or HDF5, only what apt needs) with
# the working tree as the device tool sends it (tracked files and untracked ones not ignored),
# the bundle unpacked, and CMake (for ctest: the GPU machine has it), it runs:
#   1. `MIXLAB_BUILD_DIR=build/gpu tests/gpu/check.sh`, as on the GPU machine: it moves the ctest
#      files, must start mixlab-cli with the carried libraries, then stops (no GPU);
#   2. `ldd` of every program and of the plugin, with this machine's CUDA libraries in view
#      (standing in for PyTorch's there): nothing may be missing but the driver's libcuda;
#   3. check.sh again with a stand-in nvidia-smi that reports a compute capability 9.0 GPU: it
#      runs `ctest -L gpu`, where every test must run and skip for want of the driver alone.
#      A test that cannot find the plugin or a library would waste the GPU's minutes; this stage
#      fails on it here. (check.sh itself then fails, as it should: tests skipped with a GPU.)
#
#   tests/gpu/bundle-check.sh      (root; after tests/gpu/bundle.sh; about 20 s once CMake's
#                                   packages are in the apt cache, a few minutes before)
set -euo pipefail

die() { echo "bundle-check.sh: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (chroot and mount)"
repo=$(cd "$(dirname "$0")/../.." && pwd -P)
cd "$repo"
[[ -f build/gpu-bundle.tar.xz ]] || die "no build/gpu-bundle.tar.xz: run tests/gpu/bundle.sh first"
cache=${MIXLAB_FRESH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mixlab}
base=$cache/bookworm-minbase
archives=$cache/apt-archives
mkdir -p "$cache" "$archives"
scripts/minbase-root.sh "$cache"  # the pristine root, built once (shared with fresh-check.sh)
nvcc=$(command -v nvcc) || die "no nvcc here: its CUDA libraries stand in for PyTorch's"
cuda=$(dirname "$(dirname "$(readlink -f "$nvcc")")")

root=$(mktemp -d "$cache/bundle-root.XXXXXX")
mounts=()
cleanup() {
  for m in "${mounts[@]}"; do umount "$m" 2> /dev/null || umount -l "$m" 2> /dev/null || true; done
  if grep -q " $root/" /proc/mounts; then
    echo "bundle-check.sh: something is still mounted under $root; left in place" >&2
  else
    rm -rf "$root"
  fi
}
trap cleanup EXIT
cp -a "$base/." "$root/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/work/mixlab" "$root$cuda"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -x -C "$root/work/mixlab"
tar -xJf build/gpu-bundle.tar.xz -C "$root/work/mixlab"
mount -t proc proc "$root/proc" && mounts=("$root/proc")
mount --bind -o ro "$cuda" "$root$cuda" && mounts=("$root$cuda" "${mounts[@]}")
mount --bind "$archives" "$root/var/cache/apt/archives" &&
  mounts=("$root/var/cache/apt/archives" "${mounts[@]}")
cuda_libs=$(find "$cuda" -name 'libcublasLt.so*' -printf '%h\n' | head -n 1):$(
  find "$cuda" -name 'libcudnn.so*' -printf '%h\n' | head -n 1)

in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin \
    /bin/bash -c "cd /work/mixlab && $1"
}

echo "== 1. check.sh in a minimal Debian 12 root with the bundle: no GPU, no CUDA library"
in_root "MIXLAB_BUILD_DIR=build/gpu MIXLAB_CHECK_OUT=/tmp/check1 tests/gpu/check.sh" ||
  die "check.sh failed in the minimal root (above)"

echo "== 2. every library the programs need resolves there (ldd), CUDA's from $cuda_libs"
programs=$(cd "$root/work/mixlab" && find build/gpu/app/mixlab-cli build/gpu/lib/mixlab build/gpu/tests/gpu \
             -type f \( -executable -o -name '*.so' \) \
             -exec sh -c '[ "$(head -c 4 "$1" | od -An -c | tr -d " ")" = "177ELF" ]' _ {} \; -print)
for p in $programs; do
  unresolved=$(in_root "LD_LIBRARY_PATH=build/gpu/lib/mixlab:build/gpu/carry-lib:$cuda_libs ldd $p" |
                 grep 'not found' | grep -v 'libcuda\.so' || true)
  [[ -z "$unresolved" ]] || die "$p needs libraries the bundle lacks: $unresolved"
done
echo "$(wc -w <<< "$programs") programs and plugins: every library found"

echo "== 3. check.sh there with a stand-in nvidia-smi (compute capability 9.0) and no driver"
in_root "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends cmake" \
  > "$cache/bundle-check-apt.log" 2>&1 || die "installing cmake in the root failed (log: $cache/bundle-check-apt.log)"
cat > "$root/usr/local/bin/nvidia-smi" << 'EOF'
#!/bin/sh
# A stand-in: a GPU of compute capability 9.0 that the CUDA runtime will not find (no driver).
case "$*" in
  *compute_cap*) echo "9.0" ;;
  *) echo "stand-in GPU (no driver), 0.0, 0 MiB" ;;
esac
EOF
chmod +x "$root/usr/local/bin/nvidia-smi"
in_root "LD_LIBRARY_PATH=$cuda_libs MIXLAB_BUILD_DIR=build/gpu MIXLAB_CHECK_OUT=/tmp/check3 \
  tests/gpu/check.sh" > "$cache/bundle-check-stage3.log" 2>&1 && die "check.sh passed without a GPU?"
log=$root/tmp/check3/ctest.log
[[ -f "$log" ]] || die "check.sh ran no ctest (log: $cache/bundle-check-stage3.log)"
# CMake 3.25 prints "N% tests passed, K tests failed out of M", the GPU machine's newer one
# "100% tests passed out of M" when none failed.
ran=$(sed -n 's/^[0-9]*% tests passed.* out of \([0-9]*\)$/\1/p' "$log" | tail -n 1)
skipped=$(grep -c '(Skipped)' "$log" || true)
[[ -n "$ran" && "$ran" -gt 0 ]] || die "ctest -L gpu ran no tests there (log: $log)"
[[ "$skipped" -eq "$ran" ]] ||
  die "ctest -L gpu: $skipped of $ran tests skipped; the others failed there ($(grep -m 5 'Failed\|Not Run' "$log"))"
# ctest's log holds no skipped test's output: the reasons come from check.sh's rerun of one test
# of each suite, and each must be the missing driver (not the plugin or a library).
reason=$root/tmp/check3/skip-reason.log
reasons=$(sed -n '/^== why they skipped/,/^FAIL/p' "$cache/bundle-check-stage3.log" | sed '1d;$d')
echo "the reasons check.sh gives (count, reason):"
echo "$reasons"
[[ -n "$reasons" ]] && ! grep -v -q 'driver' <<< "$reasons" || {
  cp "$reason" "$cache/bundle-check-skip-reason.log" 2> /dev/null
  die "GPU tests skipped for another reason than the missing driver (above; $cache/bundle-check-skip-reason.log)"
}
grep -q 'no benches and no doctor' "$cache/bundle-check-stage3.log" ||
  die "check.sh went on to the benches without a usable CUDA backend (log: $cache/bundle-check-stage3.log)"
echo "ctest -L gpu: all $ran GPU tests ran and skipped for want of the driver; the plugin and every library loaded"
echo "bundle-check.sh: the bundle works on a minimal Debian 12 root; only a GPU is missing"
