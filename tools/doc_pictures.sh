#!/usr/bin/env bash
# Regenerates the pictures in docs/img that docs/pictures.md shows, with stag-graph.
# Usage: tools/doc_pictures.sh   (builds stag-graph in $STAG_BUILD_DIR, default build/)
set -euo pipefail
STAG_ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
cmake -S "$STAG_ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target stag-graph
graph="$BUILD/apps/stag-graph"
img="$STAG_ROOT/docs/img"
mkdir -p "$img"
"$graph" --model encoder6 --collapse -o "$img/encoder6-collapsed.svg"
"$graph" --model attention --view training -o "$img/attention-training.svg"
