#!/usr/bin/env bash
# Trains one stag-train task twice from the same seed on the same batches, in f32 and with
# --precision bf16 (stag::autocast), and draws both runs' curves in one picture
# (docs/mixed-precision.md). Builds nothing: run ./run.sh or make stag-train stag-plot first.
#   tools/precision_curves.sh classify
#   tools/precision_curves.sh lm --max-steps 600
#   tools/precision_curves.sh g2p --max-steps 1500 --test-limit 1000
# Writes runs/precision-<task>/{f32,bf16}/ (each run's folder and log), both.jsonl (the two
# metrics logs, splits renamed "train f32", "val bf16", ...) and curves.svg; prints each run's
# final `name: value` lines prefixed with f32. / bf16. and the wall time of each run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${STAG_BUILD_DIR:-$ROOT/build}
[ $# -ge 1 ] || { sed -n '2,10p' "$0" | cut -c3-; exit 2; }
task=$1
shift
out=$ROOT/runs/precision-$task
mkdir -p "$out"
cd "$ROOT"  # stag-train finds data/ from here
for p in f32 bf16; do
  start=$(date +%s)
  if ! OMP_WAIT_POLICY=passive "$BUILD/apps/train/stag-train" "$task" --precision "$p" \
    --out "$out/$p" --progress off "$@" >"$out/$p.log" 2>"$out/$p.err"; then
    echo "precision_curves: the $p run failed; its messages ($out/$p.err):" >&2
    tail -20 "$out/$p.err" >&2
    exit 1
  fi
  grep -E '^[a-z_0-9]+: ' "$out/$p.log" | sed "s/^/$p./"
  echo "$p.wall_seconds: $(($(date +%s) - start))"
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
with open(f"{out}/both.jsonl", "w") as w:
    for p in ("f32", "bf16"):
        for line in open(f"{out}/{p}/metrics.jsonl"):
            r = json.loads(line)
            r["split"] = f"{r.get('split', 'train')} {p}"
            w.write(json.dumps(r) + "\n")
PY
"$BUILD/apps/stag-plot" --metrics "$out/both.jsonl" -o "$out/curves.svg" --smooth 0 \
  --title "stag-train $task $*: f32 and --precision bf16 from the same seed"
echo "precision_curves: $out/curves.svg"
