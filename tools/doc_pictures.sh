#!/usr/bin/env bash
# Regenerates the pictures in docs/img that docs/pictures.md shows, with stag-graph,
# stag-attention, stag-plot and the training example docs/examples/train_pictures.cpp.
# Usage: tools/doc_pictures.sh   (builds them in $STAG_BUILD_DIR, default build/)
set -euo pipefail
STAG_ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
export OMP_WAIT_POLICY=passive
cmake -S "$STAG_ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target stag-graph stag-attention stag-plot doc_train_pictures
graph="$BUILD/apps/stag-graph"
img="$STAG_ROOT/docs/img"
mkdir -p "$img"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Graphs: forward and training, collapsed, and annotated with a profiling run (its times vary
# from run to run and machine to machine).
"$graph" --model encoder6 --collapse -o "$img/encoder6-collapsed.svg"
"$graph" --model attention --view training -o "$img/attention-training.svg"
"$graph" --model attention --annotate time --dim batch=32 --dim seq=128 --steps 20 \
  --title "attention (forward), mean time per node at batch 32 x 128" -o "$img/attention-time.svg"
"$graph" --model tf --collapse --no-edge-shapes -o "$img/transformer-collapsed.svg"

# A training run's curves and its trained attention (docs/examples/train_pictures.cpp).
"$BUILD/tests/doc_train_pictures" "$work"
"$BUILD/apps/stag-plot" --metrics "$work/metrics.jsonl" --also accuracy --log-loss \
  --title "docs/examples/train_pictures.cpp: a one-layer classifier learns negation" -o "$img/training-curves.svg"
cp "$work/attention.svg" "$img/attention-heatmap.svg"

# The padding check on the benchmark classifier (random parameters); its picture is not kept.
"$BUILD/apps/stag-attention" --model classify --dim batch=4 --dim seq=12 -o "$work/classify-attention.svg"
du -ch "$img"/*.svg | tail -1
