#!/bin/sh
# Makes (once) the Python virtual environment that the `keras` tests (tests/keras) and anyone
# running an exported Keras script use: Keras 3 on JAX's CPU backend, from PyPI, with Debian's
# /usr/bin/python3 (python3-venv provides ensurepip). Never a runtime dependency of MixLab.
#
# The venv lives outside the repository, under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/mixlab/keras-venv-<hash of the pinned requirements below>
# so that changing a pin makes a new one and an old one is never half-upgraded. Idempotent and
# safe to run concurrently (flock on a lock file beside the venv); a venv is only used once its
# install finished (marker file `.complete`).
#
# Usage: scripts/keras-env.sh [--print-requirements]
# Prints the venv's python path on stdout (everything else goes to stderr).
# Exit status: 0 ready; 1 cannot be made (no python3-venv, PyPI unreachable, install failed).
# Environment: MIXLAB_KERAS_PYTHON (default /usr/bin/python3), MIXLAB_KERAS_CACHE (default
#   ${XDG_CACHE_HOME:-$HOME/.cache}/mixlab), PIP_INDEX_URL (pip's own, honoured).
set -eu

say() { echo "keras-env.sh: $*" >&2; }
die() {
  echo "keras-env.sh: $*" >&2
  exit 1
}

# Every package pinned, as `pip freeze` gave them on Python 3.11 (Debian 12) when the pins were
# chosen: Keras 3 and JAX's CPU wheels, with what they pull in. A new pin means a new venv.
requirements="absl-py==2.5.1
h5py==3.16.0
jax==0.7.2
jaxlib==0.7.2
keras==3.12.0
markdown-it-py==4.3.0
mdurl==0.1.2
ml_dtypes==0.7.0
namex==0.1.0
numpy==2.4.6
opt_einsum==3.4.0
optree==0.20.0
packaging==26.4
Pygments==2.21.0
rich==15.0.0
scipy==1.17.1
typing_extensions==4.16.0"

if [ "${1:-}" = "--print-requirements" ]; then
  printf '%s\n' "$requirements"
  exit 0
fi
[ $# -eq 0 ] || die "unknown argument '$1' (usage: keras-env.sh [--print-requirements])"

python=${MIXLAB_KERAS_PYTHON:-/usr/bin/python3}
cache=${MIXLAB_KERAS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mixlab}
[ -x "$python" ] || die "$python not found (install Debian's python3 and python3-venv)"
"$python" -c 'import ensurepip, venv' 2>/dev/null ||
  die "$python has no venv/ensurepip module (install Debian's python3-venv)"

hash=$(printf '%s\n%s\n' "$("$python" -c 'import sys; print(sys.version.split()[0])')" "$requirements" |
  sha256sum | cut -c1-12)
venv=$cache/keras-venv-$hash
ready() { [ -f "$venv/.complete" ] && [ -x "$venv/bin/python" ]; }

if ready; then
  echo "$venv/bin/python"
  exit 0
fi

mkdir -p "$cache" || die "cannot create $cache"
command -v flock >/dev/null 2>&1 || die "flock not found (util-linux)"
exec 9>"$venv.lock"
if ! flock -n 9; then
  say "another keras-env.sh is making $venv; waiting for it"
  flock 9
fi
# The holder before us may have finished it.
if ready; then
  echo "$venv/bin/python"
  exit 0
fi

say "making $venv (Keras 3 + JAX CPU from PyPI; once, a minute or two)"
rm -rf "$venv"
"$python" -m venv "$venv" || die "python3 -m venv failed (install Debian's python3-venv)"
# The index must answer (asked through pip, with pip's configuration: index, proxy,
# certificates) before anything is installed; nothing half-made is left behind.
if ! "$venv/bin/python" -m pip download --disable-pip-version-check --no-input -q --no-deps \
  --only-binary=:all: -d "$venv/.probe" "$(printf '%s\n' "$requirements" | grep '^namex==')" >&2; then
  rm -rf "$venv"
  die "the package index is unreachable (above): the Keras venv needs PyPI once (pip's own settings, e.g. PIP_INDEX_URL, apply)"
fi
rm -rf "$venv/.probe"
req=$venv/requirements.txt
printf '%s\n' "$requirements" >"$req"
if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q \
  --only-binary=:all: -r "$req" >&2; then
  rm -rf "$venv"
  die "pip install failed (see above); nothing is left half-made"
fi
if ! KERAS_BACKEND=jax "$venv/bin/python" -c 'import keras, jax; assert keras.__version__.startswith("3.")' >&2; then
  rm -rf "$venv"
  die "the installed Keras does not import"
fi
touch "$venv/.complete"
say "ready: $venv"
echo "$venv/bin/python"
