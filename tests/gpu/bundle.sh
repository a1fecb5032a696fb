#!/usr/bin/env bash
# Prepares what a lent GPU machine needs to run tests/gpu/check.sh: that machine has the NVIDIA
# driver and PyTorch (whose packages carry cuBLAS and cuDNN) but no oneDNN, Qt or CUDA
# development packages, so MixLab is built here, for its GPU's architecture, and carried there
# as one compressed file (the device tool carries at most 64 MiB).
#
#   tests/gpu/bundle.sh [ARCH]     ARCH: compute capability without the dot (default 90, H100/H200)
#
# Builds build/gpu (Release, CUDA on, GUI off, sm_ARCH) and writes build/gpu-bundle.tar.xz:
# mixlab-cli, libmixlab-cuda.so, the GPU test binaries, every ctest file (check.sh rewrites their
# paths when the folder has moved), CMakeCache.txt, and in build/gpu/carry-lib the shared
# libraries the GPU machine may lack (oneDNN and what it needs, SQLite). On the GPU machine:
#
#   tar -xJf build/gpu-bundle.tar.xz && LD_LIBRARY_PATH=$PWD/build/gpu/carry-lib \
#     MIXLAB_BUILD_DIR=build/gpu tests/gpu/check.sh
set -euo pipefail

arch=${1:-90}
root=$(cd "$(dirname "$0")/../.." && pwd -P)
cd "$root"
build=build/gpu
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMIXLAB_CUDA=ON -DMIXLAB_GUI=OFF \
  -DMIXLAB_WERROR=ON "-DMIXLAB_CUDA_ARCHITECTURES=$arch" > /dev/null
cmake --build "$build" -j "${JOBS:-2}"

rm -rf "$build/carry-lib"
mkdir -p "$build/carry-lib"
for lib in libdnnl.so.2 libOpenCL.so.1 libgomp.so.1 libsqlite3.so.0; do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !found { print $NF; found = 1 }')
  [[ -n "$path" ]] || { echo "bundle.sh: $lib not found here" >&2; exit 1; }
  cp -L "$path" "$build/carry-lib/$lib"
done

files=("$build/CMakeCache.txt" "$build/app/mixlab-cli" "$build/lib/mixlab/libmixlab-cuda.so")
while IFS= read -r -d '' f; do files+=("$f"); done < <(
  find "$build" \( -name CTestTestfile.cmake -o -name '*_tests.cmake' -o -name '*_include.cmake' \
    \) -print0
  find "$build/tests/gpu" -type f -executable -print0
  find "$build/carry-lib" -type f -print0)
tar -cJf build/gpu-bundle.tar.xz "${files[@]}"
ls -la build/gpu-bundle.tar.xz
