#!/usr/bin/env bash
# Installs the Debian packages stag needs that are missing (as root); does nothing when all are
# present. Sourced by run.sh and test.sh.
set -euo pipefail

STAG_DEBS=(cmake g++ make pkg-config libdnnl-dev libtbb-dev libboost-dev catch2 graphviz libgraphviz-dev
           libcli11-dev nlohmann-json3-dev)

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
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing
  fi
}

# stag_configure_build DIR [TARGET...]: configures (Release) and builds the targets (or all).
stag_configure_build() {
  local dir=$1
  shift
  cmake -S "$STAG_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  if [ $# -gt 0 ]; then
    cmake --build "$dir" -j"$(nproc)" --target "$@"
  else
    cmake --build "$dir" -j"$(nproc)"
  fi
}
