#!/bin/sh
# Launches the real mixlab under xvfb-run (an X server without a screen), lets it drive itself
# through a short float32-vs-mixed comparison on synthetic data, and saves screenshots of the
# editor, its model canvas, the live charts, the comparison, the Doctor tab and a small sweep's
# Sweeps tab as PNG files; mixlab checks each is not blank.
# Usage: scripts/gui-screenshots.sh [MIXLAB_BINARY] [OUT_DIR]
# Exits 77 (ctest: skipped) when xvfb-run is not installed.
set -eu

mixlab=${1:-build/release/app/mixlab}
out=${2:-build/release/screenshots}
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "gui-screenshots.sh: xvfb-run is not installed (Debian: xvfb); skipped"
  exit 77
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
rm -f "$out/editor.png" "$out/canvas.png" "$out/live.png" "$out/compare.png" "$out/doctor.png" \
  "$out/sweeps.png" "$out/graph.png"
# A run database and settings of its own: the user's are never touched.
env -u QT_QPA_PLATFORM XDG_CONFIG_HOME="$scratch/config" MIXLAB_DB="$scratch/runs.sqlite" \
  OMP_WAIT_POLICY=PASSIVE \
  xvfb-run -a -s "-screen 0 1600x1000x24" \
  "$mixlab" --model fashion-mlp --db "$scratch/runs.sqlite" --screenshot-tour "$out"

for shot in editor canvas live compare doctor sweeps graph; do
  if [ ! -s "$out/$shot.png" ]; then
    echo "gui-screenshots.sh: $out/$shot.png is missing" >&2
    exit 1
  fi
done
echo "gui-screenshots.sh: screenshots in $out: editor.png canvas.png live.png compare.png doctor.png sweeps.png graph.png"
