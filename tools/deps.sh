#!/usr/bin/env bash
# Installs the Debian packages stag needs that are missing (as root); does nothing when all are
# present. Sourced by run.sh and test.sh.
set -euo pipefail

# Every package the build and the tests need, named explicitly: the scripts install with
# --no-install-recommends, so a package that is only *recommended* by another must be listed here.
#   ocl-icd-opencl-dev  oneDNN's CMake config calls find_package(OpenCL) (libdnnl-dev only
#                       recommends it)
#   libexpat1-dev       the picture tests read SVG back with an XML parser
#   libopenmpi-dev, openmpi-bin
#                       data-parallel training across processes (mpirun) and its mpi tests
#   iproute2            the mpi tests across hosts: network namespaces joined by veth pairs
#                       (tests/mpi/hosts.sh)
#   libonnx-dev, libprotobuf-dev
#                       ONNX export (runtime/onnx/): the ModelProto, ONNX's checker and shape
#                       inference, and protobuf's serialisation
STAG_DEBS=(cmake g++ make pkg-config libdnnl-dev ocl-icd-opencl-dev libtbb-dev libboost-dev catch2 graphviz
           libgraphviz-dev libexpat1-dev libpcre2-dev libcli11-dev nlohmann-json3-dev libopenmpi-dev openmpi-bin
           iproute2 libonnx-dev libprotobuf-dev)
# The tests only (test.sh installs them, run.sh does not): clang runs the compile-fail suite a
# second time, since its expected messages differ from g++'s (tests/CMakeLists.txt); ccache, the
# compiler cache, makes a rebuild of what was built before (another checkout, a re-laid work
# tree) take minutes (CMakeLists.txt uses it whenever it is installed).
STAG_TEST_DEBS=(clang ccache)
# Optional, not installed by run.sh or test.sh (test.sh installs clang only): clang's libFuzzer
# for tools/fuzz.sh (-DSTAG_FUZZ=ON), which installs them when they are missing.
STAG_FUZZ_DEBS=(clang libclang-rt-14-dev)

stag_missing_debs() {
  local missing=()
  for p in "${STAG_DEBS[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  echo "${missing[@]:-}"
}

stag_install_debs() {
  local missing
  missing=$(stag_missing_debs "$@")
  if [ -n "$missing" ]; then
    echo "stag: installing Debian packages: $missing"
    if [ "$(id -u)" -ne 0 ]; then
      echo "stag: missing packages and not root; run as root or install: $missing" >&2
      exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    local log start
    log=$(mktemp)
    start=$(date +%s)
    # shellcheck disable=SC2086
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing; } >"$log" 2>&1; then
      tail -n 20 "$log" >&2
      rm -f "$log"
      echo "stag: apt-get could not install: $missing (is a Debian mirror reachable?)" >&2
      exit 1
    fi
    rm -f "$log"
    echo "stag: installed in $(($(date +%s) - start)) s"
  fi
}

# stag_cores: the cores this process may use. Not plain `nproc`, which answers OMP_NUM_THREADS when
# it is set (test.sh sets it to 1 for each test process, and then ran ctest with -j1).
stag_cores() {
  env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc
}

# stag_configure_build DIR [TARGET...]: configures (Release) and builds the targets (or all);
# sets STAG_CONFIGURE_SECONDS and STAG_BUILD_SECONDS.
stag_configure_build() {
  local dir=$1
  shift
  local log start
  log=$(mktemp)
  start=$(date +%s)
  if ! cmake -S "$STAG_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "stag: CMake could not configure the build (above)" >&2
    return 1
  fi
  # One line: which optional parts (CUDA, PyTorch) were found or skipped.
  grep -oE 'stag (optional parts|compiler cache): .*' "$log" || true
  rm -f "$log"
  STAG_CONFIGURE_SECONDS=$(($(date +%s) - start))
  start=$(date +%s)
  if [ $# -gt 0 ]; then
    cmake --build "$dir" -j"$(stag_cores)" --target "$@"
  else
    cmake --build "$dir" -j"$(stag_cores)"
  fi
  STAG_BUILD_SECONDS=$(($(date +%s) - start))
  echo "stag: build done in $STAG_BUILD_SECONDS s"
}

# stag_ccache_counts: "hits misses" of the compiler cache so far (nothing without ccache).
stag_ccache_counts() {
  command -v ccache >/dev/null || return 0
  ccache --print-stats 2>/dev/null | awk '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
    $1 == "cache_miss" { m += $2 }
    END { print h + 0, m + 0 }'
}

# stag_ccache_report BEFORE AFTER: one line, the hits and misses of the build between the two
# stag_ccache_counts.
stag_ccache_report() {
  if [ -z "$1" ] || [ -z "$2" ]; then
    echo "stag: compiler cache: none (apt-get install ccache)"
    return 0
  fi
  local h0 m0 h1 m1 h m
  read -r h0 m0 <<<"$1"
  read -r h1 m1 <<<"$2"
  h=$((h1 - h0))
  m=$((m1 - m0))
  if [ $((h + m)) -eq 0 ]; then
    echo "stag: compiler cache: nothing compiled (the build was up to date)"
  else
    echo "stag: compiler cache: $h hits, $m misses ($((100 * h / (h + m))) % hit rate) in $(ccache -k cache_dir 2>/dev/null || echo "ccache's folder")"
  fi
}
