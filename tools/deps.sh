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
STAG_DEBS=(cmake g++ make pkg-config libdnnl-dev ocl-icd-opencl-dev libtbb-dev libboost-dev catch2 graphviz
           libgraphviz-dev libexpat1-dev libpcre2-dev libcli11-dev nlohmann-json3-dev libopenmpi-dev openmpi-bin
           iproute2)
# The tests only (test.sh installs them, run.sh does not): clang runs the compile-fail suite a
# second time, since its expected messages differ from g++'s (tests/CMakeLists.txt).
STAG_TEST_DEBS=(clang)
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

# stag_configure_build DIR [TARGET...]: configures (Release) and builds the targets (or all).
stag_configure_build() {
  local dir=$1
  shift
  local log
  log=$(mktemp)
  if ! cmake -S "$STAG_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "stag: CMake could not configure the build (above)" >&2
    return 1
  fi
  # One line: which optional parts (CUDA, PyTorch) were found or skipped.
  grep -o 'stag optional parts: .*' "$log" || true
  rm -f "$log"
  local start
  start=$(date +%s)
  if [ $# -gt 0 ]; then
    cmake --build "$dir" -j"$(nproc)" --target "$@"
  else
    cmake --build "$dir" -j"$(nproc)"
  fi
  echo "stag: build done in $(($(date +%s) - start)) s"
}
