#!/bin/bash
# One-pass against chunked prefill on a loaded machine (issue 16, item 4): a `yes > /dev/null`
# keeps one core busy while stag-generate prefills a 972-token prompt of the `small` model with
# random weights, with OpenMP spinning (OMP_WAIT_POLICY unset) and passive, for each binary.
# Usage: bench/prefill_load.sh BINARY... (e.g. an older build's stag-generate and this one's).
# Prints figures only; run it under the shared build lock.
yes > /dev/null &
busy=$!
trap 'kill $busy' EXIT
echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
for bin in "$@"; do
  for policy in unset passive; do
    for chunk in 0 64; do
      if [ "$policy" = passive ]; then export OMP_WAIT_POLICY=passive; else unset OMP_WAIT_POLICY; fi
      r=$(timeout 90 "$bin" --random-weights small --prompt-tokens 972 --max-new-tokens 8 \
        --threads 2 --prefill-chunk "$chunk" | grep prompt_tokens)
      echo "$bin policy=$policy chunk=$chunk: ${r:-timeout after 90 s}"
    done
  done
done
echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
