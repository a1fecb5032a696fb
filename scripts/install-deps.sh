#!/bin/sh
# Installs, with apt-get, whatever MixLab's build and tests need that this Debian 12 machine lacks.
# Usage: scripts/install-deps.sh [--bench] [--fuzz]   (run as root, or with everything installed)
set -eu

# Installed without their "recommends", so every package needed is named here, those that CMake
# configs pull in as well: oneDNN's dnnl-config.cmake needs OpenCL (ocl-icd-opencl-dev, only
# recommended by libdnnl-dev), Qt6Charts' config needs Qt6OpenGL's (libqt6opengl6-dev). The
# fault tests (tests/faults) check stores with python3's sqlite3 module; the sweep tests
# (tests/slurm) start a single-node Slurm from slurmctld, slurmd, slurm-client and munge (their
# services are not started by the packages where no init system runs, and need no config).
# Keras import reads .keras archives with libzip and their weights with HDF5 (libzip-dev,
# libhdf5-dev); the `keras` tests make a venv with python3-venv and run exported PyTorch scripts
# with Debian's python3-torch. The editor lays out model graphs with Graphviz (libgraphviz-dev).
# ccache makes a second build of the same sources fast (cmake/MixLabCcache.cmake uses it when
# present). scripts/fresh-check.sh proves the list on a fresh Debian 12.
packages="g++ cmake ninja-build ccache pkgconf libdnnl-dev ocl-icd-opencl-dev nlohmann-json3-dev zlib1g-dev
          libsqlite3-dev libcli11-dev libgtest-dev libgmock-dev dataset-fashion-mnist
          libzip-dev libhdf5-dev libgraphviz-dev
          qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev qt6-qpa-plugins
          xvfb xauth desktop-file-utils appstream file dpkg-dev python3 python3-venv python3-torch
          slurmctld slurmd slurm-client munge"
for arg in "$@"; do
  case "$arg" in
    --bench) ;;  # python3-torch, which bench.sh sets beside MixLab, is in the list above now
    # scripts/fuzz.sh: clang 14 and its sanitizer and libFuzzer runtimes (libclang-rt-14-dev,
    # which clang only recommends; libfuzzer-14-dev is not needed), clang's OpenMP, and
    # llvm-symbolizer for stack traces.
    --fuzz) packages="$packages clang-14 libclang-rt-14-dev libomp-14-dev llvm-14" ;;
    *) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

echo "install-deps.sh: installing:$missing"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: these packages are missing and installing them needs root:$missing" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
