#!/usr/bin/env bash
# Every GPU check of stag in one run, for a machine with an NVIDIA GPU that has the CUDA
# toolkit but none of stag's Debian libraries (the device machine: see docs/cuda.md).
#
#   tools/gpu_check.sh --bundle DIR [BUILD]   here: copy the CUDA build's test and bench
#                                             programs and the shared libraries they need
#                                             (but not CUDA's own) into DIR, and DIR.tar.xz
#   tools/gpu_check.sh --run DIR|DIR.tar.xz OUT   there: run the checks, logs and a summary in OUT
#
# --run starts with the probe (which GPU, or why none), then the [gpu] cases, then every op's
# harness check on the CUDA session, then the GPU benchmarks; each step's log is OUT/<step>.log
# and OUT/summary.txt has one line per step. It exits non-zero when a step failed; a step that
# found no GPU is reported as skipped, never as passed.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

bundle() {
  local dir=$1 build=${2:-$here/build}
  mkdir -p "$dir/bin" "$dir/lib"
  for prog in tests/stag_tests tests/stag-cuda-probe bench/stag-bench; do
    if [ ! -x "$build/$prog" ]; then
      echo "gpu_check: $build/$prog is missing: build the CUDA targets first" >&2
      return 1
    fi
    cp "$build/$prog" "$dir/bin/"
    strip --strip-unneeded "$dir/bin/$(basename "$prog")" 2>/dev/null || true
  done
  cp "$here/tests/cuda/run.sh" "$dir/bin/"
  # The shared libraries the programs need, except the C runtime and CUDA's (the GPU machine
  # has its own toolkit and driver).
  ldd "$dir"/bin/stag_tests "$dir"/bin/stag-bench | awk '/=> \// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt|libnvidia[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$dir/lib/"; done
  # The device tool carries at most 64 MiB: the bundle travels as one xz tarball (about 13 MB).
  tar -cf - -C "$dir" . | xz -T0 -6 >"$dir.tar.xz"
  du -sh "$dir" "$dir.tar.xz"
}

run() {
  local dir=$1 out=$2
  mkdir -p "$out"
  if [ -f "$dir" ]; then  # the tarball from --bundle
    local unpacked
    unpacked=$(mktemp -d)
    tar -xJf "$dir" -C "$unpacked"
    dir=$unpacked
  fi
  local cuda_lib=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && cuda_lib="$cuda_lib:$d"
  done
  export LD_LIBRARY_PATH="$dir/lib$cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OMP_WAIT_POLICY=passive
  local failed=0
  : >"$out/summary.txt"
  step() {  # step NAME COMMAND...
    local name=$1
    shift
    local t0=$SECONDS
    "$@" >"$out/$name.log" 2>&1
    local rc=$?
    local verdict=passed
    if [ $rc -eq 77 ]; then verdict=skipped; elif [ $rc -ne 0 ]; then verdict="FAILED (exit $rc)"; failed=1; fi
    echo "$name: $verdict in $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
  }
  step probe "$dir/bin/stag-cuda-probe"
  step ldd ldd "$dir/bin/stag_tests"
  step gpu "$dir/bin/run.sh" "$dir/bin/stag-cuda-probe" "$dir/bin/stag_tests" "[gpu]"
  step ops "$dir/bin/run.sh" "$dir/bin/stag-cuda-probe" "$dir/bin/stag_tests" "[op]" \
    STAG_TEST_DEVICE=cuda
  if "$dir/bin/stag-cuda-probe" >/dev/null; then
    # cls and gpt: the fused attention's first (simple) GPU kernel; *_unfused: the op chain.
    for c in cls_unfused gpt_unfused cls gpt; do
      step "bench_$c" "$dir/bin/stag-bench" --device cuda --config "$c" --steps 20
      step "bench_${c}_tf32" "$dir/bin/stag-bench" --device cuda --tf32 --config "$c" --steps 20 \
        --label tf32
      step "bench_${c}_profile" "$dir/bin/stag-bench" --device cuda --config "$c" --mode train \
        --steps 5 --profile 15
    done
    if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
      for c in peak cls gpt; do
        step "torch_$c" python3 "$here/tools/torch_bench.py" --device cuda --config "$c" \
          --variant hand --steps 20
        [ "$c" = peak ] && continue
        step "torch_compile_$c" python3 "$here/tools/torch_bench.py" --device cuda --compile \
          --config "$c" --variant hand --steps 20
      done
    fi
  fi
  return $failed
}

case "${1:-}" in
  --bundle) shift; bundle "$@" ;;
  --run) shift; run "$@" ;;
  *) sed -n '2,14p' "$0"; exit 2 ;;
esac
