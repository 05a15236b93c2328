#!/usr/bin/env bash
# The benchmark of issues 4 §6 and 19 §5: builds (Release) and times stag's cls, tf and gpt models
# in f32 and under stag::autocast (bf16 matmuls, configs <c>_bf16) and a plain oneDNN 2048^3
# matmul (f32 and bf16), then the same models in PyTorch (tools/torch_bench.py: hand-written, on
# nn.Transformer* modules, and under PyTorch's bf16 autocast) at the same shapes and thread count,
# config by config in one run, and prints one line per figure (`bench.<config>.<metric>: <value>
# <unit>`, `torch.` for PyTorch) and the ratios, each against the fastest PyTorch variant; with
# ONNX Runtime installed (tools/data.sh --only onnxruntime), also ONNX Runtime on each model's
# forward pass as stag and as PyTorch export it (`ort.<config>.*`, `ort.<config>_torch.*`) and
# stag's inference against the fastest non-stag variant (docs/deployment.md).
#   ./bench.sh [--threads N] [--steps N] [--rounds N] [--schedules] [--no-torch]
#   ./bench.sh --attn [--threads N] [--attn-steps N] [--attn-lengths 512,1024,...]
#   ./bench.sh --generate [--threads N] [--gen-lengths 128,1024,4096] [--gen-batches 1,16]
# --rounds N repeats the stag/PyTorch pairs N times (alternating which goes first) and takes the
# median of the rounds for the ratios: the machine is shared and noisy. --schedules adds the
# sequential vs parallel (TBB) schedule, 1 vs N threads, and both under load (a competing
# `yes > /dev/null`). --no-torch times stag only. --attn runs only the long-sequence attention
# benchmark of issue 15 (bench/attn.cpp: fused vs unfused training steps, the fused op's FLOP rate
# against a oneDNN matmul of the same run, a sliding-window variant). --generate runs only the
# generation benchmark of issue 16 (bench/generate.cpp: prefill tokens/s next to a full forward
# pass of the same tokens, time to first token, memory, decode tokens/s at batch 1 and 16, on
# the `small` LM with random weights, then the encoder-decoder of `stag-train seq2seq`;
# tools/generate_bench.py, the LM and the encoder-decoder, beside it when PyTorch is there).
# Results: docs/benchmarks.md.
set -euo pipefail
STAG_ROOT=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/deps.sh
source "$STAG_ROOT/tools/deps.sh"

threads=2
steps=15
rounds=1
schedules=0
torch=1
attn=0
attn_steps=3
attn_lengths=512,1024,2048,4096,8192,16384
generate=0
gen_lengths=128,1024,4096
gen_batches=1,16
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --schedules) schedules=1; shift ;;
    --no-torch) torch=0; shift ;;
    --attn) attn=1; shift ;;
    --attn-steps) attn_steps=$2; shift 2 ;;
    --attn-lengths) attn_lengths=$2; shift 2 ;;
    --generate) generate=1; shift ;;
    --gen-lengths) gen_lengths=$2; shift 2 ;;
    --gen-batches) gen_batches=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0" | cut -c3-; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

if [ "$attn" = 1 ]; then
  stag_install_debs
  BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
  stag_configure_build "$BUILD" stag-bench-attn >&2
  export OMP_WAIT_POLICY=passive
  echo "bench.command: $0 --attn --threads $threads --attn-steps $attn_steps --attn-lengths $attn_lengths"
  echo "bench.date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "bench.machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "bench.loadavg_start: $(cut -d' ' -f1-3 /proc/loadavg)"
  OMP_NUM_THREADS=$threads "$BUILD/bench/stag-bench-attn" --threads "$threads" --steps "$attn_steps" \
    --lengths "$attn_lengths"
  echo "bench.loadavg_end: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi

if [ "$generate" = 1 ]; then
  stag_install_debs
  BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
  stag_configure_build "$BUILD" stag-bench-generate >&2
  export OMP_WAIT_POLICY=passive
  echo "bench.command: $0 --generate --threads $threads --gen-lengths $gen_lengths --gen-batches $gen_batches"
  echo "bench.date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "bench.machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "bench.loadavg_start: $(cut -d' ' -f1-3 /proc/loadavg)"
  OMP_NUM_THREADS=$threads "$BUILD/bench/stag-bench-generate" --threads "$threads" \
    --lengths "$gen_lengths" --batches "$gen_batches"
  if [ "$torch" = 1 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads /usr/bin/python3 \
      "$STAG_ROOT/tools/generate_bench.py" --preset small --prompt 128 --new 64 --threads "$threads"
    # The encoder-decoder at stag-bench-generate's shapes: sources of 128 / 4 ids, 64 steps.
    OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads /usr/bin/python3 \
      "$STAG_ROOT/tools/generate_bench.py" --seq2seq --src 32 --new 64 --batches "$gen_batches" \
      --threads "$threads"
  else
    echo "torch.generate: skipped (PyTorch is not importable here; apt-get install python3-torch)"
  fi
  echo "bench.loadavg_end: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi

# PyTorch from Debian, and OpenBLAS so that its matmuls are not the reference BLAS's.
if [ "$torch" = 1 ]; then stag_install_debs python3-torch libopenblas0-openmp; else stag_install_debs; fi
BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
stag_configure_build "$BUILD" stag-bench >&2

export OMP_WAIT_POLICY=passive
BENCH=$BUILD/bench/stag-bench
TORCH=(/usr/bin/python3 "$STAG_ROOT/tools/torch_bench.py")
out=$(mktemp)
competitor=""
cleanup() {
  if [ -n "$competitor" ]; then kill "$competitor" 2>/dev/null || true; fi
  rm -f "$out"
}
trap cleanup EXIT

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
say() { echo "$1" | tee -a "$out"; }

say "bench.command: $0 --threads $threads --steps $steps --rounds $rounds$([ $schedules = 1 ] && echo ' --schedules')"
say "bench.date: $(date -u '+%Y-%m-%d %H:%M UTC')"
say "bench.machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
say "bench.loadavg_start: $(loadavg)"
say "bench.threads: $threads"
run_stag() { "$BENCH" --config "$1" --threads "$threads" --steps "$steps" | tee -a "$out"; }
run_torch() {
  # --variant all: the hand-written models, then the same on PyTorch's nn.Transformer* modules
  # (torch.<config>_modules.*); the ratios take the faster of the two.
  if [ "$torch" = 1 ]; then
    "${TORCH[@]}" --config "$1" --variant all --threads "$threads" --steps "$steps" | tee -a "$out"
  fi
}
# ONNX Runtime (npm onnxruntime-node, tools/data.sh --only onnxruntime) on each model's forward
# pass, exported once: by stag (stag-bench --export-onnx: the logits) as ort.<c>.* (and with the
# opset-23 Attention op for the fused attention as ort.<c>_attn.*), and by
# PyTorch's torch.onnx.export of the hand-written model (opset 14: the loss) as ort.<c>_torch.*,
# at the same threads (tools/ort_bench.js: median of --steps runs after 3 warm-up runs).
ort=0
onnx_dir=$(mktemp -d)
if [ -f "$STAG_ROOT/data/npm/onnxruntime/.complete" ] && command -v node >/dev/null; then
  ort=1
  for c in cls tf gpt; do
    "$BENCH" --config "$c" --threads "$threads" --export-onnx "$onnx_dir" >/dev/null
    if [ "$torch" = 1 ]; then
      "${TORCH[@]}" --config "$c" --threads "$threads" --export-onnx "$onnx_dir" >/dev/null 2>&1 ||
        echo "bench.sh: torch.onnx.export of $c failed" >&2
    fi
  done
else
  say "ort: skipped (ONNX Runtime is not installed: tools/data.sh --only onnxruntime)"
fi
run_ort() {
  [ "$ort" = 1 ] || return 0
  local model inputs
  for model in "$1" "$1_attn" "$1_torch"; do
    [ -f "$onnx_dir/$model.onnx" ] || continue
    inputs=$onnx_dir/$model
    [ "$model" = "$1_attn" ] && inputs=$onnx_dir/$1  # the same inputs as stag's other export
    NODE_PATH="$STAG_ROOT/data/npm/onnxruntime/node_modules" node "$STAG_ROOT/tools/ort_bench.js" \
      "$onnx_dir/$model.onnx" "$inputs" "ort.$model" "$threads" "$steps" | tee -a "$out"
  done
}
for ((r = 1; r <= rounds; ++r)); do
  [ "$rounds" = 1 ] || say "bench.round: $r"
  for c in peak cls tf gpt; do
    # stag in f32, then under autocast (bf16 matmuls: stag-bench --config <c>_bf16).
    both_stag() { run_stag "$1"; [ "$1" = peak ] || run_stag "$1_bf16"; }
    if ((r % 2)); then both_stag "$c"; run_torch "$c"; else run_torch "$c"; both_stag "$c"; fi
    [ "$c" = peak ] || run_ort "$c"
  done
done
rm -rf "$onnx_dir"

if [ "$schedules" = 1 ]; then
  short=(--steps 10 --warmup 2)
  for c in cls tf gpt; do
    "$BENCH" --config "$c" --threads 1 "${short[@]}" --label seq_t1 | tee -a "$out"
    "$BENCH" --config "$c" --threads "$threads" "${short[@]}" --label "seq_t$threads" | tee -a "$out"
    "$BENCH" --config "$c" --threads "$threads" --omp 1 --schedule parallel "${short[@]}" \
      --label "par_t${threads}_omp1" | tee -a "$out"
    "$BENCH" --config "$c" --threads "$threads" --schedule parallel "${short[@]}" \
      --label "par_t${threads}_omp$threads" | tee -a "$out"
  done
  # The same with one core taken by a competing process (as when others compile).
  yes >/dev/null &
  competitor=$!
  say "bench.loadavg_loaded: $(loadavg) (with a competing 'yes' process)"
  for c in cls tf gpt; do
    "$BENCH" --config "$c" --threads 1 "${short[@]}" --label loaded_seq_t1 | tee -a "$out"
    "$BENCH" --config "$c" --threads "$threads" "${short[@]}" --label "loaded_seq_t$threads" | tee -a "$out"
    "$BENCH" --config "$c" --threads "$threads" --omp 1 --schedule parallel "${short[@]}" \
      --label "loaded_par_t${threads}_omp1" | tee -a "$out"
    if [ "$torch" = 1 ]; then
      "${TORCH[@]}" --config "$c" --threads "$threads" "${short[@]}" --label "loaded_t$threads" | tee -a "$out"
    fi
  done
  kill "$competitor"
  wait "$competitor" 2>/dev/null || true
  competitor=""
fi
say "bench.loadavg_end: $(loadavg)"

# Ratios: PyTorch time over stag time (above 1: stag is faster; *_cpu: process CPU time, which
# competing load distorts less than wall time); stag RSS over PyTorch RSS.
# With several rounds every figure is first reduced to its median over the rounds. Each ratio is
# taken against the fastest (for RSS the smallest) PyTorch variant present, torch.<c>.* (hand-
# written) or torch.<c>_modules.* (nn.Transformer*), and against each variant (_vs_hand,
# _vs_modules; n/a when absent, as gpt_modules always is); torch_fastest_* names the one taken.
awk -v threads="$threads" -v rounds="$rounds" -v torch="$torch" '
  $2 ~ /^-?[0-9.]+$/ && $3 ~ /^(ms|MiB|GFLOP|GFLOP\/s|nats)$/ { sub(":", "", $1); n[$1]++; all[$1, n[$1]] = $2; unit[$1] = $3 }
  function median(k,   m, i, j, t, a) {
    m = n[k]
    for (i = 1; i <= m; ++i) a[i] = all[k, i] + 0
    for (i = 2; i <= m; ++i) for (j = i; j > 1 && a[j - 1] > a[j]; --j) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  function ratio(a, b) { return (a in v && b in v && v[b] > 0) ? v[a] / v[b] : -1 }
  # The key of the smaller of torch.<c>.<x> and torch.<c>_modules.<x> ("" when neither is
  # there), and its variant in fastest (the hand-written one on a tie).
  function best(c, x,   h, m) {
    h = "torch." c "." x; m = "torch." c "_modules." x; fastest = ""
    if (h in v && v[h] > 0) fastest = "hand"
    if (m in v && v[m] > 0 && (fastest == "" || v[m] < v[h])) fastest = "modules"
    return fastest == "hand" ? h : fastest == "modules" ? m : ""
  }
  function line(name, r, unit, target, better) {
    if (r < 0) { printf "%s: n/a\n", name; return }
    verdict = target == "" ? "" : sprintf(" (target %s: %s)", target, better ? "met" : "NOT met")
    printf "%s: %.2f %s%s\n", name, r, unit, verdict
  }
  END {
    for (k in n) v[k] = median(k)
    if (rounds > 1) {
      print "# medians over " rounds " rounds"
      for (k in n) if (n[k] > 1) printf "%s: %.3f %s\n", k, v[k], unit[k] | "sort"
      close("sort")
    }
    # stag inference against ONNX Runtime (the faster of the stag export and the PyTorch
    # export), and against the fastest non-stag variant of all (PyTorch or ONNX Runtime); f32,
    # and stag under autocast (bf16 matmuls) against the same f32 ONNX Runtime runs.
    split("cls tf gpt", ocs, " ")
    for (i = 1; i <= 3; ++i) {
      c = ocs[i]; ok = "ort." c ".infer_ms"; tk = "ort." c "_torch.infer_ms"; o = ""
      ak = "ort." c "_attn.infer_ms"
      if (ok in v && v[ok] > 0) o = ok
      if (ak in v && v[ak] > 0 && (o == "" || v[ak] < v[o])) o = ak
      if (tk in v && v[tk] > 0 && (o == "" || v[tk] < v[o])) o = tk
      if (o == "") continue
      r = ratio(o, "bench." c ".infer_ms")
      line("bench." c ".speedup_infer_vs_ort", r, "x", ">= 1.5x", r >= 1.5)
      r = ratio(o, "bench." c "_bf16.infer_ms")
      line("bench." c ".speedup_infer_bf16_vs_ort", r, "x", ">= 1.5x", r >= 1.5)
      printf "bench.%s.ort_fastest_infer: %s\n", c, o == ok ? "stag_export" : o == ak ? "stag_export_attention_op" : "torch_export"
      line("bench." c ".ort_attention_op_vs_pattern", ratio(ok, ak), "x", "", 0)
      line("bench." c ".ort_stag_export_vs_torch_export", ratio(tk, ok), "x", "", 0)
      k = best(c, "infer_ms")
      if (k != "" && v[k] < v[o]) o = k
      r = ratio(o, "bench." c ".infer_ms")
      line("bench." c ".speedup_infer_vs_fastest", r, "x", ">= 1.5x", r >= 1.5)
    }
    if (torch != 1) exit
    line("bench.peak.speedup_matmul", ratio("bench.peak.matmul_gflops", "torch.peak.matmul_gflops"), "x", "", 0)
    split("cls tf gpt", cs, " ")
    for (i = 1; i <= 3; ++i) {
      c = cs[i]; want = c == "cls" ? 1.5 : 1.2
      # metric, ratio name, name of the chosen variant, target; the last two are stag over PyTorch
      nm = split("train_step_ms speedup_train fastest_train;infer_ms speedup_infer fastest_infer;" \
                 "train_cpu_ms speedup_train_cpu fastest_train_cpu;infer_cpu_ms speedup_infer_cpu fastest_infer_cpu;" \
                 "rss_peak_mib rss_ratio smallest_rss;infer_rss_peak_mib infer_rss_ratio smallest_infer_rss", ms, ";")
      for (j = 1; j <= nm; ++j) {
        split(ms[j], f, " "); x = f[1]; stag_k = "bench." c "." x; inv = j > 4
        k = best(c, x)
        r = inv ? ratio(stag_k, k) : ratio(k, stag_k)
        if (j == 1) line("bench." c "." f[2], r, "x", ">= 2x", r >= 2)
        else if (j == 2) line("bench." c "." f[2], r, "x", ">= 2x", r >= 2)
        else if (j == 5) line("bench." c "." f[2], r, "x", "<= 0.5", r >= 0 && r <= 0.5)
        else line("bench." c "." f[2], r, "x", "", 0)
        hk = "torch." c "." x; mk = "torch." c "_modules." x
        line("bench." c "." f[2] "_vs_hand", inv ? ratio(stag_k, hk) : ratio(hk, stag_k), "x", "", 0)
        line("bench." c "." f[2] "_vs_modules", inv ? ratio(stag_k, mk) : ratio(mk, stag_k), "x", "", 0)
        printf "bench.%s.torch_%s: %s\n", c, f[3], fastest == "" ? "n/a" : fastest
      }
      # stag under autocast (bf16 matmuls) against the fastest PyTorch variant, f32 or its own
      # CPU autocast (torch.<c>_bf16.*), and against the PyTorch autocast run alone.
      split("train_step_ms speedup_train_bf16 fastest_train_bf16 >=3x;infer_ms speedup_infer_bf16 fastest_infer_bf16 >=3x;" \
            "rss_peak_mib rss_ratio_bf16 smallest_rss_bf16 <=0.5", bs, ";")
      for (j = 1; j <= 3; ++j) {
        split(bs[j], f, " "); x = f[1]; stag_k = "bench." c "_bf16." x
        k = best(c, x); bk = "torch." c "_bf16." x
        if (bk in v && v[bk] > 0 && (k == "" || v[bk] < v[k])) { k = bk; fastest = "bf16" }
        r = j == 3 ? ratio(stag_k, k) : ratio(k, stag_k)
        if (j == 3) line("bench." c "." f[2], r, "x", "<= 0.5", r >= 0 && r <= 0.5)
        else line("bench." c "." f[2], r, "x", ">= 3x", r >= 3)
        line("bench." c "." f[2] "_vs_torch_bf16", j == 3 ? ratio(stag_k, bk) : ratio(bk, stag_k), "x", "", 0)
        printf "bench.%s.torch_%s: %s\n", c, f[3], fastest == "" ? "n/a" : fastest
      }
      # f32 matmul FLOPs per step time over the oneDNN 2048^3 matmul of the same run.
      r = ratio("bench." c ".matmul_gflops", "bench.peak.matmul_gflops")
      want = c == "gpt" ? 0.8 : c == "tf" ? 0.7 : 0
      line("bench." c ".matmul_efficiency", r, "x", want ? ">= " want : "", r >= want)
      r = ratio("bench." c "_bf16.matmul_gflops", "bench.peak.matmul_bf16_gflops")
      line("bench." c ".matmul_efficiency_bf16", r, "x", "", 0)
      nl = split("seq_t1 par_t" threads "_omp1 par_t" threads "_omp" threads " loaded_seq_t1 loaded_seq_t" threads \
                " loaded_par_t" threads "_omp1", labels, " ")
      base = "bench." c ".schedule.seq_t" threads ".train_step_ms"
      for (j = 1; j <= nl; ++j) {
        k = "bench." c ".schedule." labels[j] ".train_step_ms"
        if ((k in v) && (base in v)) line("bench." c ".schedule." labels[j] ".vs_seq_t" threads, ratio(k, base), "x", "", 0)
      }
      k = "torch." c ".schedule.loaded_t" threads ".train_step_ms"
      b = "bench." c ".schedule.loaded_seq_t" threads ".train_step_ms"
      if ((k in v) && (b in v)) line("bench." c ".schedule.loaded_speedup_train", ratio(k, b), "x", "", 0)
    }
  }' "$out"
