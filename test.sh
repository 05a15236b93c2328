#!/usr/bin/env bash
# Installs what is missing, builds (Release) and runs the whole test suite.
# Extra arguments go to ctest (e.g. ./test.sh -L gradcheck).
set -euo pipefail
STAG_ROOT=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/deps.sh
source "$STAG_ROOT/tools/deps.sh"
stag_install_debs

BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
stag_configure_build "$BUILD"

# oneDNN threads with OpenMP: passive waiting avoids spin contention when tests run side by
# side; each test process gets one OpenMP thread so that two can share the two cores.
export OMP_WAIT_POLICY=passive
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" "$@"
