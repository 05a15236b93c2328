#!/bin/sh
# Decode speed of stag-generate (random weights) beside PyTorch recomputing the prefix and
# PyTorch with a key/value cache, on the same model and shapes; best of N runs each, because
# the machines are shared and noisy. Usage: bench/generate.sh [build dir] [preset] [runs]
B=${1:-build}; P=${2:-char-tiny}; N=${3:-5}
export OMP_WAIT_POLICY=passive
best() {  # best tokens_per_s and prefill_tokens_per_s over N runs of the command
  for i in $(seq "$N"); do "$@"; done | awk '/prefill_tokens_per_s/ {if ($4 > p) p = $4} /^tokens_per_s/ {if ($2 > d) d = $2}
    END {printf "prefill %.0f tokens/s, decode %.1f tokens/s\n", p, d}'
}
for t in 1 2; do
  for c in 0 1; do
    echo "stag $P threads $t prefill-chunk $c: $(best "$B/apps/stag-generate" --random-weights "$P" --prompt-tokens 64 --max-new-tokens 128 --threads $t --prefill-chunk $c)"
  done
done
OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 /usr/bin/python3 "$(dirname "$0")/../tools/generate_bench.py" --preset "$P" --prompt 64 --new 128 --threads 2 --repeats "$N"
