#!/usr/bin/env bash
# Prepares what a lent GPU machine needs to run tests/gpu/check.sh: that machine has the NVIDIA
# driver and PyTorch (whose packages carry cuBLAS and cuDNN) but no oneDNN, Qt or CUDA
# development packages, so MixLab is built here, for its GPU's architecture, and carried there
# as one compressed file (the device tool carries at most 64 MiB).
#
#   tests/gpu/bundle.sh [ARCH]     ARCH: compute capability without the dot (default 90, H100/H200)
#
# Builds build/gpu (Release, CUDA on, GUI off, sm_ARCH) and writes build/gpu-bundle.tar.xz:
# mixlab-cli, libmixlab-cuda.so, the GPU test binaries (not tests/gpu/sim's, which need no GPU),
# every ctest file (check.sh rewrites their paths when the folder has moved), CMakeCache.txt,
# and in build/gpu/carry-lib every shared library those programs load (as `ldd` resolves them
# here: oneDNN, SQLite, libzip, HDF5 and what they need) except the ones every such machine has:
#   - glibc's own libraries, zlib, and the NVIDIA driver's;
#   - CUDA's libraries (cudart, cuBLAS(Lt), cuDNN...): PyTorch's packages carry them there;
#   - libstdc++ and libgcc_s go to carry-lib/compat: a machine's own are usually newer, and
#     check.sh adds these only where the machine's are too old for the programs.
# It then checks that every library any carried file names (its ELF NEEDED entries) is carried
# or in that base, and prints the newest glibc and libstdc++ versions the bundle asks for.
# On the GPU machine:
#
#   tar -xJf build/gpu-bundle.tar.xz && MIXLAB_BUILD_DIR=build/gpu tests/gpu/check.sh
set -euo pipefail

arch=${1:-90}
[[ "$arch" =~ ^[0-9]+$ ]] || {
  echo "usage: tests/gpu/bundle.sh [ARCH]   (ARCH: compute capability without the dot, e.g. 90)" >&2
  exit 2
}
root=$(cd "$(dirname "$0")/../.." && pwd -P)
cd "$root"
build=build/gpu
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMIXLAB_CUDA=ON -DMIXLAB_GUI=OFF \
  -DMIXLAB_WERROR=ON "-DMIXLAB_CUDA_ARCHITECTURES=$arch" > /dev/null
cmake --build "$build" -j "${JOBS:-2}"

programs=("$build/app/mixlab-cli" "$build/lib/mixlab/libmixlab-cuda.so")
while IFS= read -r -d '' f; do
  [[ "$(head -c 4 "$f")" == $'\x7fELF' ]] && programs+=("$f")
done < <(find "$build/tests/gpu" -path "$build/tests/gpu/sim" -prune -o -type f -executable -print0)

# What every GPU machine has: glibc, the driver, CUDA's libraries (from PyTorch's packages).
base='^(linux-vdso|ld-linux-x86-64|libc|libm|libmvec|libdl|libpthread|librt|libresolv|libutil|'
base+='libanl|libz|libcuda|libnvidia-.*|libcudart|libcublas|libcublasLt|libcudnn.*|libnvrtc.*|'
base+='libnvJitLink|libcurand|libcufft|libcusparse|libcusolver|libnccl)\.so(\..*)?$'
compat='^(libstdc\+\+|libgcc_s)\.so(\..*)?$'

rm -rf "$build/carry-lib"
mkdir -p "$build/carry-lib/compat"
# ldd lists the whole closure, as "SONAME => PATH (ADDRESS)".
while read -r soname path; do
  [[ "$soname" =~ $base ]] && continue
  dest="$build/carry-lib"
  [[ "$soname" =~ $compat ]] && dest="$build/carry-lib/compat"
  [[ "$path" == /* ]] || { echo "bundle.sh: $soname, which the programs need, is not found here" >&2; exit 1; }
  cp -L "$path" "$dest/$soname"
done < <(for p in "${programs[@]}"; do ldd "$p"; done |
           awk '$2 == "=>" { print $1, $3 }' | sort -u)

# Every NEEDED entry of every file that travels is carried or in the base.
carried=$(find "$build/carry-lib" -type f -printf '%f\n')
missing=0
for f in "${programs[@]}" "$build"/carry-lib/*.so* "$build"/carry-lib/compat/*; do
  [[ -f "$f" ]] || continue
  while read -r needed; do
    [[ "$needed" =~ $base ]] && continue
    grep -qxF "$needed" <<< "$carried" && continue
    echo "bundle.sh: ${f#"$build"/} needs $needed, which is neither carried nor on every GPU machine" >&2
    missing=1
  done < <(objdump -p "$f" | awk '$1 == "NEEDED" { print $2 }')
done
[[ $missing -eq 0 ]] || exit 1
versions=$(for f in "${programs[@]}" "$build"/carry-lib/*.so*; do objdump -p "$f"; done |
             grep -oE '(GLIBC|GLIBCXX)_[0-9.]+' | sort -u)
newest() { grep "^$1_" <<< "$versions" | sed "s/^$1_//" | sort -V | tail -n 1; }
echo "bundle.sh: carried $(wc -w <<< "$carried") libraries; the bundle needs glibc $(newest GLIBC)" \
     "and libstdc++ GLIBCXX_$(newest GLIBCXX) or newer (else carry-lib/compat)"

files=("$build/CMakeCache.txt" "${programs[@]}")
while IFS= read -r -d '' f; do files+=("$f"); done < <(
  find "$build" \( -name CTestTestfile.cmake -o -name '*_tests.cmake' -o -name '*_include.cmake' \
    \) -print0
  find "$build/carry-lib" -type f -print0)
tar -cJf build/gpu-bundle.tar.xz "${files[@]}"
ls -la build/gpu-bundle.tar.xz
