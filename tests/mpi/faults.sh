#!/usr/bin/env bash
# Fault tests of data-parallel training (ctest label mpi), as 2 ranks on loopback:
#   faults.sh stall MPIRUN STAG_MPI_CHECK
#     rank 1 stalls before its first step; rank 0 must stop with a CommError that names it and
#     the collective within STAG_COMM_TIMEOUT (4 s here), and mpirun must end, not hang.
#   faults.sh kill MPIRUN STAG_TRAIN OUT
#     stag-train classify on 2 ranks with a checkpoint every 2 steps; once one is written, rank 1
#     is killed (SIGKILL). mpirun must end with a failure within a minute, the checkpoint must
#     load (--eval-only), and --resume on 1 process (another world size) must go on from it.
# Exit 77 (skipped) when the data set is not installed.
set -uo pipefail
mode=$1
mpirun=$2
shift 2
fail() {
  echo "FAILED: $*" >&2
  exit 1
}

if [ "$mode" = stall ]; then
  check=$1
  log=$(mktemp)
  start=$(date +%s)
  STAG_COMM_TIMEOUT=4 timeout 120 "$mpirun" --oversubscribe -np 2 "$check" --stall 60 >"$log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  cat "$log"
  [ "$rc" -ne 0 ] || fail "mpirun exited 0 although rank 1 stalled"
  [ "$rc" -ne 124 ] || fail "mpirun hung (killed by timeout after 120 s)"
  grep -q "rank 0: CommError after" "$log" || fail "rank 0 did not report a CommError"
  grep -q "stag: rank 0 of 2: .* did not complete within 4 s" "$log" ||
    fail "the message does not name the rank, the collective and the timeout"
  [ "$took" -lt 50 ] || fail "took $took s, the stalled rank slept 60 s: the timeout did not act"
  echo "ok: the stalled rank made rank 0 fail in $took s with a clear message"
  exit 0
fi

[ "$mode" = kill ] || fail "unknown mode $mode"
train=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
flags=(classify --threads 1 --progress plain --seed 3 --limit 300 --model small --batch-size 16
       --out "$out")
"$train" "${flags[@]}" --eval-only --resume /nonexistent >/dev/null 2>"$out/probe.txt"
if grep -q "tools/data.sh" "$out/probe.txt"; then
  echo "the sentiment data set is not installed (tools/data.sh): skipped"
  exit 77
fi
ckpt=$out/model.safetensors
"$mpirun" --oversubscribe -np 2 "$train" "${flags[@]}" --max-steps 400 --checkpoint-every 2 \
  >"$out/run1.txt" 2>&1 &
launcher=$!
for _ in $(seq 1 600); do
  [ -s "$ckpt" ] && break
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.5
done
[ -s "$ckpt" ] || { cat "$out/run1.txt"; fail "no checkpoint was written"; }
sleep 1
ranks=($(pgrep -P "$launcher" -f stag-train))
[ "${#ranks[@]}" -eq 2 ] || { cat "$out/run1.txt"; fail "expected 2 ranks under mpirun, found ${#ranks[@]}"; }
kill -9 "${ranks[1]}"
echo "killed rank process ${ranks[1]} (of ${ranks[*]})"
start=$(date +%s)
while kill -0 "$launcher" 2>/dev/null; do
  [ $(($(date +%s) - start)) -lt 60 ] || { kill -9 "$launcher"; fail "mpirun still runs 60 s after a rank died"; }
  sleep 0.5
done
wait "$launcher"
rc=$?
cat "$out/run1.txt"
[ "$rc" -ne 0 ] || fail "mpirun exited 0 after a rank was killed"
echo "ok: mpirun ended with status $rc $(($(date +%s) - start)) s after the kill"

"$train" "${flags[@]}" --eval-only >"$out/eval.txt" 2>&1 || { cat "$out/eval.txt"; fail "the checkpoint does not load"; }
grep -q "val_accuracy: " "$out/eval.txt" || fail "no val_accuracy from the checkpoint"
echo "ok: the checkpoint loads ($(grep val_accuracy "$out/eval.txt"))"
at=$(grep -o '"step":[0-9]*' "$out/metrics.jsonl" | tail -1 | grep -o '[0-9]*$')

# Another world size: 1 process goes on from the 2-rank checkpoint to the end.
"$train" "${flags[@]}" --max-steps 400 --checkpoint-every 2 --resume "$ckpt" >"$out/run2.txt" 2>&1 ||
  { cat "$out/run2.txt"; fail "--resume on 1 process failed"; }
grep -q "^steps: 400" "$out/run2.txt" || { cat "$out/run2.txt"; fail "the resumed run did not reach step 400"; }
# The metrics log holds each logged step once, in order, up to 400: the lines after the
# checkpoint that the killed run logged were dropped, and the resumed run appended after it.
steps=$(grep '"split":"train"' "$out/metrics.jsonl" | grep -o '"step":[0-9]*' | grep -o '[0-9]*$' | tr '\n' ' ')
sorted=$(echo "$steps" | tr ' ' '\n' | grep . | sort -n -u | tr '\n' ' ')
[ "$steps" = "$sorted" ] || fail "the train metrics steps repeat or go back: $steps"
[ "$(echo "$steps" | awk '{print $NF}')" = 400 ] || fail "the train metrics do not end at step 400: $steps"
first=$(grep -m1 -o '^step [0-9]*' "$out/run2.txt" | grep -o '[0-9]*$')
[ -n "$first" ] && [ "$first" -gt 2 ] || fail "the resumed run did not go on from the checkpoint (first step ${first:-none})"
echo "ok: 1 process resumed the 2-rank run's checkpoint at step $first (the killed run had logged up to step $at) and finished"
