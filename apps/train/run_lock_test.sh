#!/bin/sh
# stag-train's run lock, as two users would meet it: while one run trains in a folder, a second
# run there is refused with a message naming the first; with --force it goes on (and says so).
#   run_lock_test.sh STAG_TRAIN OUT_FOLDER
train=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
quick="lm --threads 1 --progress off --limit 300 --batch-size 2 --max-len 16 --eval-limit 8 --test-limit 8"
# shellcheck disable=SC2086
"$train" $quick --max-steps 100000 --out "$out" >"$out/first.log" 2>&1 &
first=$!
i=0
while [ ! -s "$out/.stag-run.lock" ] && [ $i -lt 300 ]; do
  sleep 0.1
  i=$((i + 1))
done
# shellcheck disable=SC2086
"$train" $quick --max-steps 2 --out "$out"
rc=$?
# shellcheck disable=SC2086
"$train" $quick --max-steps 1 --out "$out" --force --save "$out/forced.safetensors" 2>&1 | grep -o "going on anyway (--force)"
kill "$first" 2>/dev/null
wait "$first"
if grep -q "tools/data.sh" "$out/first.log"; then exit 77; fi  # the data set is not installed
exit $rc
