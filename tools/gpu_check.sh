#!/usr/bin/env bash
# Every GPU check of stag in one run, for a machine with an NVIDIA GPU that has the CUDA
# toolkit or PyTorch's CUDA wheels but none of stag's Debian libraries (the device machine:
# see docs/cuda.md).
#
#   tools/gpu_check.sh --bundle DIR [BUILD]   here: copy the CUDA build's test, probe and bench
#       programs and the shared libraries they need (not CUDA's own) into DIR, and DIR.tar.xz
#       (DIR.tar.gz without xz).
#       BUILD (default build-gpu) must be configured with -DSTAG_NATIVE=OFF: the GPU machine's
#       CPU is not this one, and -march=native code could die there with SIGILL.
#   tools/gpu_check.sh --run DIR|DIR.tar.xz OUT [SECONDS]   there: run the checks within
#       SECONDS (default 420) in all; OUT gets summary.txt and logs.tar.gz, nothing else.
#   tools/gpu_check.sh --interpret OUT [BUILD]   here: bundle BUILD (default build) and run the
#       same steps on the interpret device (Device::cuda_interpret: the kernels on the CPU),
#       with small workloads, so that this script is tested without a GPU (ctest
#       gpu_check.interpret).
#
# Steps, in this order (the most telling first, the slowest last), each under a timeout taken
# from what is left of SECONDS: probe (which GPU, or why none; the CUDA libraries found);
# [gpu] cases; stag-bench (cls, gpt; f32, TF32, and f32 without CUDA Graphs); PyTorch eager
# (peak, cls, gpt); every [op] case on CUDA; torch.compile (cls, gpt). A step that found no GPU is reported as skipped,
# never as passed; one that ran out of time as TIMED OUT; one the budget left no time for as
# skipped. It exits non-zero when a step failed or timed out.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

bundle() {
  local dir=$1 build=${2:-$here/build-gpu} interpret=${3:-0}
  if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "gpu_check: $build is not a CMake build: configure one with -DSTAG_NATIVE=OFF and" \
      "build stag_tests, stag-cuda-probe and stag-bench first" >&2
    return 1
  fi
  if [ "$interpret" = 0 ] && grep -q '^STAG_NATIVE:BOOL=ON' "$build/CMakeCache.txt"; then
    echo "gpu_check: $build is built with -march=native (STAG_NATIVE=ON), which may not run on" \
      "the GPU machine's CPU: cmake -S $here -B $build -DSTAG_NATIVE=OFF, then build again" >&2
    return 1
  fi
  mkdir -p "$dir/bin" "$dir/lib"
  for prog in tests/stag_tests tests/stag-cuda-probe bench/stag-bench; do
    if [ ! -x "$build/$prog" ]; then
      echo "gpu_check: $build/$prog is missing: build stag_tests, stag-cuda-probe and" \
        "stag-bench in $build first (a CUDA build: the toolkit must be found)" >&2
      return 1
    fi
    cp "$build/$prog" "$dir/bin/"
    strip --strip-unneeded "$dir/bin/$(basename "$prog")" 2>/dev/null || true
  done
  cp "$here/tests/cuda/run.sh" "$dir/bin/"
  # The shared libraries the programs need, except the C runtime and CUDA's (the GPU machine
  # has its own toolkit or PyTorch's wheels, and its driver).
  ldd "$dir"/bin/stag_tests "$dir"/bin/stag-bench | awk '/=> \// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt|libnvidia[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$dir/lib/"; done
  # The device tool carries at most 64 MiB: the bundle travels as one xz tarball (about 15 MB;
  # gzip, about 30 MB, where xz is not installed, as in CI's minimal root).
  if command -v xz >/dev/null; then
    tar -cf - -C "$dir" . | xz -T0 -6 >"$dir.tar.xz"
    du -sh "$dir" "$dir.tar.xz"
  else
    tar -czf "$dir.tar.gz" -C "$dir" .
    du -sh "$dir" "$dir.tar.gz"
  fi
}

# Folders that hold libcudart and libcublasLt: the toolkit's, then PyTorch's nvidia wheels
# (each folder once, links resolved).
cuda_lib_dirs() {
  local d sp
  {
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib \
    /usr/local/cuda-*/lib64 /usr/local/cuda-*/targets/x86_64-linux/lib; do
    [ -d "$d" ] && echo "$d"
  done
  for sp in $(python3 -c 'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
    for d in "$sp"/nvidia/*/lib; do [ -d "$d" ] && echo "$d"; done
  done
  } | while read -r d; do readlink -f "$d"; done | awk '!seen[$0]++'
}

run() {
  local dir=$1 out=$2 budget=${3:-420} interpret=${4:-0}
  mkdir -p "$out"
  local logs
  logs=$(mktemp -d)
  if [ -f "$dir" ]; then  # the tarball from --bundle (.tar.xz or .tar.gz)
    local unpacked
    unpacked=$(mktemp -d)
    case $dir in
      *.xz) tar -xJf "$dir" -C "$unpacked" ;;
      *) tar -xzf "$dir" -C "$unpacked" ;;
    esac
    dir=$unpacked
  fi
  local start=$SECONDS failed=0 summary="$out/summary.txt"
  : >"$summary"
  # CUDA's libraries: where they are, which files, and what the programs still miss.
  local found="" lib_path="" d
  while read -r d; do
    lib_path="$lib_path:$d"
    found="$found $(cd "$d" && ls libcudart.so* libcublasLt.so* 2>/dev/null | tr '\n' ' ' | sed "s|^|$d: |")"
  done < <(cuda_lib_dirs)
  local run_path="$dir/lib$lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "cuda libraries:${found:- none found (searched the toolkit folders and the nvidia wheels of PyTorch)}" |
    tee -a "$summary"
  local missing
  missing=$(LD_LIBRARY_PATH=$run_path ldd "$dir/bin/stag_tests" "$dir/bin/stag-bench" 2>&1 |
    awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
  [ -n "$missing" ] && echo "missing libraries: $missing" | tee -a "$summary"
  export OMP_WAIT_POLICY=passive
  # step NAME SECONDS COMMAND...: COMMAND under a timeout of SECONDS or what is left of the
  # budget; stag's programs see the bundle's libraries, Python does not (its own CUDA wheels).
  step() {
    local name=$1 limit=$2
    shift 2
    local left=$((budget - (SECONDS - start)))
    if [ "$left" -lt 10 ]; then
      echo "$name: skipped (the ${budget} s budget is spent)" | tee -a "$summary"
      return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    local t0=$SECONDS rc
    if [ "$1" = python3 ]; then
      timeout --kill-after=5 "$limit" "$@" >"$logs/$name.log" 2>&1
    else
      LD_LIBRARY_PATH=$run_path timeout --kill-after=5 "$limit" "$@" >"$logs/$name.log" 2>&1
    fi
    rc=$?
    local verdict=passed
    if [ $rc -eq 77 ]; then
      verdict="skipped ($(grep -m1 -o 'skipped: .*' "$logs/$name.log" | sed 's/^skipped: //' || echo 'no GPU'))"
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      verdict="TIMED OUT after $limit s"
      failed=1
    elif [ $rc -ne 0 ]; then
      verdict="FAILED (exit $rc): $(tail -n 1 "$logs/$name.log" | cut -c1-160)"
      failed=1
    fi
    echo "$name: $verdict in $((SECONDS - t0)) s" | tee -a "$summary"
  }
  local bin=$dir/bin gpu=1 device=cuda
  # The workloads: the real ones on a GPU, small ones on the interpret device (the bench models
  # take minutes per step there, so its bench step is the peak config).
  local gpu_spec="[gpu]" ops_spec="[op]" configs="cls gpt" steps=20
  if [ "$interpret" = 1 ]; then
    device=cuda_interpret
    gpu_spec="a bad token id on the GPU gives the CPU's error and changes no parameter"
    ops_spec="[op][rms_norm]"
    configs="peak"
    steps=1
    echo "probe: interpret device (Device::cuda_interpret), no GPU needed" | tee -a "$summary"
  else
    step probe 30 "$bin/stag-cuda-probe"
    LD_LIBRARY_PATH=$run_path "$bin/stag-cuda-probe" >/dev/null 2>&1 || gpu=0
  fi
  if [ "$interpret" = 1 ]; then
    step gpu 120 env STAG_TEST_DEVICE=cuda_interpret "$bin/stag_tests" "$gpu_spec"
  else
    step gpu 90 "$bin/run.sh" "$bin/stag-cuda-probe" "$bin/stag_tests" "$gpu_spec"
  fi
  local c
  if [ "$gpu" = 1 ]; then
    for c in $configs; do
      step "bench_$c" 60 "$bin/stag-bench" --device "$device" --config "$c" --steps "$steps"
      [ "$interpret" = 1 ] && continue
      step "bench_${c}_tf32" 60 "$bin/stag-bench" --device cuda --tf32 --config "$c" \
        --steps "$steps" --label tf32
      # The launch time CUDA Graphs remove: the same steps with every kernel launched.
      step "bench_${c}_eager" 60 "$bin/stag-bench" --device cuda --no-cuda-graphs --config "$c" \
        --steps "$steps" --label eager
    done
  fi
  local torch_ok=0
  if [ "$interpret" = 0 ] && [ "$gpu" = 1 ]; then
    if python3 -c "import torch; assert torch.cuda.is_available()" >"$logs/torch_import.log" 2>&1; then
      torch_ok=1
      for c in peak cls gpt; do
        step "torch_$c" 60 python3 "$here/tools/torch_bench.py" --device cuda --config "$c" \
          --variant hand --steps 20
      done
    else
      echo "torch: skipped (PyTorch with CUDA does not import: $(tail -n 1 "$logs/torch_import.log" | cut -c1-160))" |
        tee -a "$summary"
    fi
  elif [ "$interpret" = 1 ]; then
    echo "torch: skipped (interpret mode: no GPU for PyTorch)" | tee -a "$summary"
  else
    echo "bench, torch: skipped (no GPU)" | tee -a "$summary"
  fi
  if [ "$interpret" = 1 ]; then
    step ops 120 env STAG_TEST_DEVICE=cuda_interpret "$bin/stag_tests" "$ops_spec"
  else
    step ops 150 "$bin/run.sh" "$bin/stag-cuda-probe" "$bin/stag_tests" "$ops_spec" \
      STAG_TEST_DEVICE=cuda
  fi
  if [ "$torch_ok" = 1 ]; then
    for c in cls gpt; do
      step "torch_compile_$c" 120 python3 "$here/tools/torch_bench.py" --device cuda --compile \
        --config "$c" --variant hand --steps 20
    done
  fi
  echo "total: $((SECONDS - start)) s of $budget; $([ $failed = 0 ] && echo ok || echo FAILED)" |
    tee -a "$summary"
  tar -czf "$out/logs.tar.gz" -C "$logs" .
  rm -rf "$logs"
  return $failed
}

# --interpret OUT [BUILD]: bundle and run here, the way the GPU machine would.
interpret() {
  local out=$1 build=${2:-$here/build}
  local work
  work=$(mktemp -d)
  bundle "$work/bundle" "$build" 1 >/dev/null || return 1
  run "$(ls "$work"/bundle.tar.*)" "$out" 300 1
  local rc=$?
  rm -rf "$work"
  return $rc
}

case "${1:-}" in
  --bundle) shift; bundle "$@" ;;
  --run) shift; run "$@" ;;
  --interpret) shift; interpret "$@" ;;
  *) sed -n '2,22p' "$0"; exit 2 ;;
esac
