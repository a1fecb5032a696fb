#!/bin/sh
# Proves the README's two set-up commands on a fresh Debian 12 machine: in a minimal root made
# by `debootstrap --variant=minbase bookworm` (built once, then kept under the cache folder),
# it copies the committed tree (git archive HEAD), and runs, as root and without a display, the
# README's first command and then its second, read from README.md so the two cannot drift.
# Before them, the same root proves that the compiler cache hides no missing package: command 1
# with a copy of install-deps.sh that leaves out one package (MIXLAB_FRESH_WITHOUT, default
# libcli11-dev; "none" skips this) must fail naming it; its build folder is then removed and
# the README's command 1 installs the package left out, so that the root holds what
# install-deps.sh installs, as a fresh one would.
# The root compiles through the host's ccache (its cache folder mounted at /root/.cache/ccache;
# cmake/MixLabCcache.cmake): configure still runs there, and a header missing there fails.
# Checks: command 1 exits 0, built the mixlab GUI and trained headless to a test accuracy;
# command 2 exits 0 and ctest ran the `gui`, `slurm` and `keras` tests with none skipped (the
# packages of a single-node Slurm install there too, and the Keras venv is made from PyPI). The root has no CUDA
# toolkit (the host's run before this one builds and tests the CUDA parts).
#
# Usage: scripts/fresh-check.sh   (as root; scripts/minbase-root.sh installs debootstrap on the
#   host when missing)
# Environment: MIXLAB_FRESH_WITHOUT (above); MIXLAB_FRESH_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/mixlab) holds the pristine
#   root (bookworm-minbase/) and the downloaded packages (apt-archives/: apt still installs
#   every package in the fresh root, only the download is saved) and pip's wheels (pip/: the
#   same for the Keras venv); MIXLAB_FRESH_KEEP=1 keeps the
#   run's root for a look after it ends.
set -eu

say() { echo "fresh-check.sh: $*"; }
die() {
  echo "fresh-check.sh: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mount)"
repo=$(git rev-parse --show-toplevel 2>/dev/null) || die "run it inside MixLab's git checkout"
cd "$repo"
cache=${MIXLAB_FRESH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mixlab}
base=$cache/bookworm-minbase
archives=$cache/apt-archives
mkdir -p "$cache" "$archives"

# Stage times, printed at the end.
times=""
stage_name=""
stage_start=0
stage() {
  stage_name=$1
  stage_start=$(date +%s)
  say "== $stage_name"
}
stage_done() {
  times="$times$(printf '  %-40s %5d s' "$stage_name" $(($(date +%s) - stage_start)))
"
  stage_name=""
}
print_times() {
  [ -n "$stage_name" ] && stage_name="$stage_name (failed)" && stage_done
  [ -n "$times" ] && printf 'fresh-check.sh: stage times\n%s' "$times"
  return 0
}

# The README's commands: the first two lines of its first ```sh block.
cmd1=$(awk '/^```sh$/ { inblock = 1; next } inblock && /^```/ { exit } inblock { print }' README.md | sed -n 1p)
cmd2=$(awk '/^```sh$/ { inblock = 1; next } inblock && /^```/ { exit } inblock { print }' README.md | sed -n 2p)
case "$cmd1" in ./scripts/install-deps.sh*) ;; *) die "README.md's first command is not './scripts/install-deps.sh ...': '$cmd1'" ;; esac
case "$cmd2" in ./scripts/install-deps.sh*) ;; *) die "README.md's second command is not './scripts/install-deps.sh ...': '$cmd2'" ;; esac

# The pristine minimal root, built once (shared with tests/gpu/bundle-check.sh).
if [ ! -f "$base/.mixlab-complete" ]; then
  stage "debootstrap (once; cached)"
  scripts/minbase-root.sh "$cache"
  stage_done
fi

# This run's root: a copy of the pristine one, removed at the end.
root=$(mktemp -d "$cache/root.XXXXXX")
mounts=""
cleanup() {
  status=$?
  for m in $mounts; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  if grep -q " $root/" /proc/mounts; then
    echo "fresh-check.sh: something is still mounted under $root; left in place" >&2
  elif [ "${MIXLAB_FRESH_KEEP:-0}" = 1 ]; then
    say "the root is kept: $root"
  else
    rm -rf "$root"
  fi
  print_times
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "a fresh root and the committed tree ($(git rev-parse --short HEAD))"
stage "fresh root and tree"
cp -a "$base/." "$root/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The host's way to PyPI too (the `keras` tests make a venv from it once): the certificates it
# trusts, for pip only (a package's update-ca-certificates would rewrite the system bundle).
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/usr/local/share/fresh-check"
  cp /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/fresh-check/host-ca.crt"
  printf '[global]\ncert = /usr/local/share/fresh-check/host-ca.crt\n' >"$root/etc/pip.conf"
fi
mkdir -p "$root/root/mixlab"
git archive --format=tar HEAD | tar -x -C "$root/root/mixlab"
mount -t proc proc "$root/proc"
mounts="$root/proc $mounts"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"  # apt-get logs through a pty
mounts="$root/dev/pts $mounts"
# Saves downloads between runs only; apt-get still installs every package in this root.
mount --bind "$archives" "$root/var/cache/apt/archives"
mounts="$root/var/cache/apt/archives $mounts"
# The same for pip's wheels (the `keras` tests' venv is made from PyPI in the root).
mkdir -p "$cache/pip" "$root/root/.cache/pip"
mount --bind "$cache/pip" "$root/root/.cache/pip"
mounts="$root/root/.cache/pip $mounts"
# The host's compiler cache (ccache's own folder), where the root's ccache looks for it.
if command -v ccache >/dev/null; then
  host_ccache=$(ccache -k cache_dir)
else
  host_ccache=${XDG_CACHE_HOME:-$HOME/.cache}/ccache
fi
mkdir -p "$host_ccache" "$root/root/.cache/ccache"
mount --bind "$host_ccache" "$root/root/.cache/ccache"
mounts="$root/root/.cache/ccache $mounts"
say "the root compiles through the host's ccache: $host_ccache"
stage_done

# Runs a README command in the root as root, in a clean environment without a display.
in_root() {  # $1: the command; $2: its log file
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/sh -c "cd /root/mixlab && $1" >"$2" 2>&1
}
log1=$cache/fresh-command1.log
log2=$cache/fresh-command2.log

without=${MIXLAB_FRESH_WITHOUT:-libcli11-dev}
if [ "$without" != none ]; then
  say "the cache hides no missing package: command 1 without $without must fail"
  stage "command 1 without $without (must fail)"
  sed -E "s/(^|[ \"])$without([ \"]|\$)/\1\2/" scripts/install-deps.sh >"$root/tmp/install-deps-without.sh"
  grep -Eq "(^|[ \"])$without([ \"]|\$)" "$root/tmp/install-deps-without.sh" &&
    die "could not leave $without out of a copy of install-deps.sh (is it in its list?)"
  cmp -s scripts/install-deps.sh "$root/tmp/install-deps-without.sh" &&
    die "$without is not in install-deps.sh's list"
  case "$cmd1" in
    ./scripts/install-deps.sh\ *) cmd1_without="sh /tmp/install-deps-without.sh ${cmd1#./scripts/install-deps.sh }" ;;
    *) die "README command 1 does not start with './scripts/install-deps.sh ': '$cmd1'" ;;
  esac
  log0=$cache/fresh-command1-without.log
  if in_root "$cmd1_without" "$log0"; then
    die "README command 1 passed without $without: it would pass without its package (log: $log0)"
  fi
  # Named where CMake or the compiler finds it missing: the package or what it brings.
  missing_named=$(grep -Eim 1 "$without|CLI11|No such file" "$log0" || true)
  [ -n "$missing_named" ] ||
    die "README command 1 failed without $without but the log does not say why (log: $log0)"
  say "without $without command 1 failed: $missing_named"
  rm -rf "$root/root/mixlab/build"
  stage_done
fi

say "README command 1: $cmd1"
stage "README command 1"
if ! in_root "$cmd1" "$log1"; then
  tail -n 40 "$log1" >&2
  die "README command 1 failed in the fresh root (log: $log1)"
fi
stage_done
[ -x "$root/root/mixlab/build/release/app/mixlab" ] ||
  die "README command 1 did not build the mixlab GUI (build/release/app/mixlab; log: $log1)"
grep -Eq '^test: +loss [0-9.]+, accuracy [0-9.]+$' "$log1" ||
  die "README command 1 printed no summary with a test accuracy (log: $log1)"
say "command 1: the GUI was built and the headless run says: $(grep -E '^test: ' "$log1")"

say "README command 2: $cmd2"
stage "README command 2"
if ! in_root "$cmd2" "$log2"; then
  tail -n 60 "$log2" >&2
  die "README command 2 failed in the fresh root (log: $log2)"
fi
stage_done
# ctest ran the GUI tests (label gui), and none was skipped (a missing Qt or xvfb-run skips).
gui_tests=$(sed -n 's/^gui *= .*(\([0-9][0-9]*\) tests\{0,1\}).*$/\1/p' "$log2" | head -n 1)
[ -n "$gui_tests" ] && [ "$gui_tests" -gt 0 ] ||
  die "README command 2 ran no test labelled gui (log: $log2)"
if grep -E 'Test +#[0-9]+: ui\.[^ ]* .*Skipped' "$log2" >&2; then
  die "README command 2 skipped GUI tests (above; log: $log2)"
fi
say "command 2: ctest ran $gui_tests gui tests, none skipped"
# The same for the tests that need more than the build: the single-node Slurm of the sweep tests
# (label slurm: its packages installed and its daemons started in the fresh root) and the parity
# tests against real Keras (label keras: the venv made from PyPI in the fresh root).
require_label() {  # $1: the label; $2: the test-name prefix; $3: what they need
  n=$(sed -n "s/^$1 *= .*(\([0-9][0-9]*\) tests\{0,1\}).*\$/\1/p" "$log2" | head -n 1)
  [ -n "$n" ] && [ "$n" -gt 0 ] || die "README command 2 ran no test labelled $1 (log: $log2)"
  if grep -E "Test +#[0-9]+: $2\\.[^ ]* .*Skipped" "$log2" >&2; then
    die "README command 2 skipped the $1 tests ($3; above; log: $log2)"
  fi
  say "command 2: ctest ran $n $1 tests, none skipped"
}
require_label slurm slurm "a single-node Slurm"
require_label keras keras "Keras from PyPI in a venv"
say "the README's two commands work on a fresh Debian 12"
