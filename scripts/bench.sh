#!/bin/sh
# MixLab's step times beside PyTorch's (Debian's python3-torch) on the two PRODUCT.md models,
# same batch, optimizer and thread count, in one run. Prints a table with the ratios last.
# Usage: scripts/bench.sh [--threads N] [--steps N] [--warmup N] [--optimizer sgd|adam]
#        scripts/bench.sh --doctor [--threads N] [--steps N] [--warmup N]
#        scripts/bench.sh --doctor-zoo [--threads N] [--steps N] [--warmup N] [--repeats N]
#        (after a release build)
# --doctor: the doctor's predicted step time against the measured one for the four built-in
# models in float32 and the CPU's mixed policy, and MixLab's measured step against the roofline
# bound (how close the engine runs to this machine's limit). Figures, not a test.
# --doctor-zoo: the same for the held-out half of scripts/doctor-zoo.py's seeded zoo, with the
# median and 90th-percentile errors and how often the direction (mixed faster, slower, the same
# within 5%) was predicted right; --repeats N measures each model N times (the median per policy).
set -eu
cd "$(dirname "$0")/.."
threads=2 steps=30 warmup=5 optimizer="" doctor="" zoo="" repeats=1
while [ $# -gt 0 ]; do
  case "$1" in
    --doctor) doctor=1; shift ;;
    --doctor-zoo) zoo=1; shift ;;
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --optimizer) optimizer=$2; shift 2 ;;
    *) echo "bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
cli=build/release/app/mixlab-cli
[ -x "$cli" ] || { echo "bench.sh: build first: cmake --workflow --preset release" >&2; exit 2; }
if [ -n "$zoo" ]; then
  exec /usr/bin/python3 scripts/doctor-zoo.py run "$cli" --half held-out --threads "$threads" \
    --steps "$steps" --warmup "$warmup" --repeats "$repeats"
fi
if [ -n "$doctor" ]; then
  exec ./scripts/doctor-bench.sh "$cli" "$threads" "$steps" "$warmup"
fi
./scripts/install-deps.sh --bench
opt_arg=""
[ -n "$optimizer" ] && opt_arg="--optimizer $optimizer"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
"$cli" bench --json --threads "$threads" --steps "$steps" --warmup "$warmup" $opt_arg > "$tmp/mixlab.json"
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE would slow the peer on some machines; leave them out.
# shellcheck disable=SC2086
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tests/bench/pytorch_peer.py \
  --threads "$threads" --steps "$steps" --warmup "$warmup" $opt_arg > "$tmp/torch.json"
/usr/bin/python3 - "$tmp/mixlab.json" "$tmp/torch.json" <<'PY'
import json, sys
ours = json.load(open(sys.argv[1]))
peer = {(r["model"], r["precision"]): r for r in json.load(open(sys.argv[2]))}
f32 = {r["model"]: r["median_step_ms"] for r in ours if r["precision"] == "float32"}
print(f"{'model':18} {'precision':15} {'opt':5} {'batch':>5} {'MixLab ms':>10} {'p95':>8} "
      f"{'GFLOP/s':>8} {'PyTorch ms':>11} {'p95':>8} {'PyTorch/MixLab':>15} {'vs f32':>7}")
for r in ours:
    p = peer.get((r["model"], r["precision"]))
    pm = p["median_step_ms"] if p else float("nan")
    speed = f32[r["model"]] / r["median_step_ms"] if r["model"] in f32 else float("nan")
    print(f"{r['model']:18} {r['precision']:15} {r['optimizer']:5} {r['batch_size']:>5} "
          f"{r['median_step_ms']:>10.2f} {r['p95_step_ms']:>8.2f} {r['gflops_per_s']:>8.1f} "
          f"{pm:>11.2f} {p['p95_step_ms'] if p else float('nan'):>8.2f} {pm / r['median_step_ms']:>14.2f}x "
          f"{speed:>6.2f}x")
print(f"threads {ours[0]['threads']}, {ours[0]['steps']} steps ({ours[0]['warmup_steps']} warm-up left out), "
      f"peer: {next(iter(peer.values()))['peer']}")
PY
