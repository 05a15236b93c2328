#!/usr/bin/env bash
# CI's CUDA build check, on the host (the pristine Debian root that runs ./test.sh has no CUDA
# toolkit). Without nvcc it says so and succeeds. With nvcc it compiles every ops/*/cuda.cu
# (the device kernels need no Debian package) and fails if one does not build; where stag's
# Debian dependencies are installed too, it also configures a CUDA build, builds the library
# and the probe, and runs the probe (which reports the GPU, or why there is none).
#   tools/cuda_check.sh [BUILD_DIR]   (default out/cuda-check)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/out/cuda-check}
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
if [ ! -x "$nvcc" ]; then
  echo "cuda_check: no CUDA toolkit here ($nvcc): nothing to check"
  exit 0
fi
mkdir -p "$build/objects" "$build/include"
ln -sfn "$root" "$build/include/stag"
arch=${STAG_CUDA_ARCH:-90}
# Through the compiler cache where the host has one (as the CMake build below does): a commit
# whose kernels were compiled before takes seconds here.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(env CCACHE_BASEDIR="$root" CCACHE_COMPILERCHECK=content ccache)
fi
t0=$SECONDS
for cu in "$root"/ops/*/cuda.cu; do
  op=$(basename "$(dirname "$cu")")
  "${launcher[@]}" "$nvcc" -std=c++20 --expt-relaxed-constexpr -O3 -arch="sm_$arch" -I"$build/include" \
    -c "$cu" -o "$build/objects/$op.o"
done
echo "cuda_check: $(ls "$build"/objects/*.o | wc -l) kernel files compiled for sm_$arch in $((SECONDS - t0)) s"
if ! [ -e /usr/include/oneapi/dnnl/dnnl.hpp ] && ! [ -e /usr/include/dnnl.hpp ]; then
  echo "cuda_check: stag's Debian dependencies are not installed here: the host side is not built"
  exit 0
fi
# The same where only some are (a host set up before a dependency was added: ONNX export's
# libonnx-dev and libprotobuf-dev), rather than failing at CMake's find_package.
source "$root/tools/deps.sh"
missing=$(stag_missing_debs)
if [ -n "$missing" ]; then
  echo "cuda_check: stag's Debian packages $missing are missing here: the host side is not built"
  exit 0
fi
t0=$SECONDS
cmake -S "$root" -B "$build/cmake" -DCMAKE_BUILD_TYPE=Release -DSTAG_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" >"$build/configure.log"
grep -q "CUDA .* found (GPU backend" "$build/configure.log" ||
  { echo "cuda_check: CMake did not enable the CUDA backend" >&2; cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build/cmake" -j "$(nproc)" --target stag stag-cuda-probe >"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log" >&2; exit 1; }
echo "cuda_check: the CUDA build of stag and the probe built in $((SECONDS - t0)) s"
rc=0
"$build/cmake/tests/stag-cuda-probe" || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then exit "$rc"; fi
exit 0
